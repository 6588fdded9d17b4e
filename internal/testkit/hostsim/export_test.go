package hostsim

import "github.com/zeoruntime/runtimeipc/ipc"

// DecodeReplyFastOnly runs only the fast path of d, reporting whether it
// decided.
func DecodeReplyFastOnly(d *ReplyDecoder, body []byte) (*ipc.Reply, bool) { return d.decodeFast(body) }
