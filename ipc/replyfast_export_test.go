package ipc

// DecodeReplyFastOnly runs only the fast path of d, reporting whether it
// decided.
func DecodeReplyFastOnly(d *ReplyDecoder, body []byte) (*Reply, bool) { return d.decodeFast(body) }
