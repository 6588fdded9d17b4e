package bench

import (
	"context"
	"crypto/sha256"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/sockettest"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// The IPC benchmarks measure one full exchange on a real socketpair: the
// host sends a canonical effect.request of about 1 KiB or 64 KiB, the
// Session reads it (SCM_CREDENTIALS checked), checks it, asks a trivial
// Handler and writes the canonical allowed reply, which the host reads and
// checks. The physical limit is a raw ping-pong that moves the same bytes
// (request frame one way, reply frame back) with no JSON at all.
//
//	BenchmarkIPCExchange/<size>        hostsim Channel (marshals the envelope,
//	                                   checks the reply) ⇄ ipc.Session
//	BenchmarkIPCSessionOnly/<size>     pre-encoded request, raw reply read ⇄ ipc.Session
//	BenchmarkIPCRawPingPong/<size>     raw frames ⇄ raw frames
//	BenchmarkIPCFloor/<size>           raw frames ⇄ raw frames + one SHA-256
//	                                   of the request body: the hard lower
//	                                   bound, since the reply must carry the
//	                                   body's digest
//
// Besides wall time per exchange (ns/op), each reports cpu-ns/op: the CPU
// time of the whole process, both ends and the garbage collector, per
// exchange. Wall time of a ping-pong is mostly the two wake-ups, which
// vary from machine to machine; CPU time is the work.

var ipcSizes = []struct {
	name  string
	bytes int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}}

var ipcBinding = ipc.AttemptBinding{
	OrganizationID: "org-a", ProjectID: "project-a", SeatID: "seat-a", RuntimeBindingID: "runtime-a",
	PacketID: "packet-a", OperationID: "op-a", AttemptID: "attempt-a", FencingGeneration: 1,
	CapabilityID:   "example.echo@1.0.0",
	RequestDigest:  "sha256:3728323797a91381fc9531abaaece040023f2ce3860adfd65224b16b33f1c342",
	ManifestDigest: "sha256:94501004599aee07455038e0ddac8a4799b49bb6771cbbfe5260541806d24210",
}

const ipcLaunchDigest canon.Digest = "sha256:3ac64e6752f729f5a1afbc204aa7d7d6683307bef3f38be648fb0a92fef56aeb"

func ipcSocketpair(b *testing.B) (runtimeEnd, hostEnd *net.UnixConn) { return sockettest.Pair(b) }

// trivialHandler allows everything.
type trivialHandler struct{}

func (trivialHandler) Bootstrap(context.Context, ipc.BootstrapRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateAllowed}, nil
}
func (trivialHandler) Admit(context.Context, ipc.AdmitRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateAllowed}, nil
}
func (trivialHandler) Effect(_ context.Context, r ipc.EffectCall) (ipc.EffectDecision, error) {
	return ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: "receipt-" + r.Effect.LogicalEffectID, AuthorizationID: "auth-1"}, nil
}
func (trivialHandler) Publish(context.Context, ipc.PublishRequest) (ipc.PublishDecision, error) {
	return ipc.PublishDecision{State: ipc.StateAllowed, ArtifactRefs: []string{"artifact-a"}}, nil
}

// effectOfSize returns an EffectRequest whose request frame body is about
// size bytes.
func effectOfSize(size int) ipc.EffectRequest {
	const envelopeOverhead = 900 // binding, nonce, keys and the effect's own fields
	return ipc.EffectRequest{LogicalEffectID: "effect-1", ConnectionRef: "connection-a",
		ConnectorRevision: "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		Operation:         "write", Arguments: map[string]any{"blob": strings.Repeat("a", max(size-envelopeOverhead, 1))}}
}

// startSession serves a Session on one end and returns a Channel on the
// other, already past bootstrap and invoke.admit.
func startSession(b *testing.B) (*hostsim.Channel, *net.UnixConn) {
	rt, host := ipcSocketpair(b)
	s := ipc.NewSession(rt, ipc.SessionConfig{ChildPID: os.Getpid(), Binding: ipcBinding, BootstrapID: "bootstrap-a",
		LaunchDigest: ipcLaunchDigest, Deadline: time.Now().Add(time.Hour), Credentials: ipc.CredentialsRequired})
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), trivialHandler{}) }()
	b.Cleanup(func() {
		host.Close()
		if err := <-done; err != nil {
			b.Errorf("Serve: %v", err)
		}
	})
	ch, err := hostsim.NewChannel(host, hostsim.ChannelConfig{Binding: ipcBinding, Deadline: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ch.Call(ctx, ipc.MethodBootstrap, ipc.BootstrapPayload{BootstrapID: "bootstrap-a", LaunchDigest: ipcLaunchDigest, PID: os.Getpid()}); err != nil {
		b.Fatal(err)
	}
	if _, err := ch.Call(ctx, ipc.MethodAdmit, ipc.AdmitPayload{Arguments: map[string]any{"organization_id": "org-a", "text": "hello"}}); err != nil {
		b.Fatal(err)
	}
	return ch, host
}

func BenchmarkIPCExchange(b *testing.B) {
	for _, sz := range ipcSizes {
		b.Run(sz.name, func(b *testing.B) {
			ch, _ := startSession(b)
			eff := effectOfSize(sz.bytes)
			ctx := context.Background()
			b.SetBytes(int64(sz.bytes))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				rep, err := ch.Call(ctx, ipc.MethodEffect, eff)
				if err != nil || rep.State != ipc.StateAllowed {
					b.Fatal(rep, err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// sessionRequests pre-encodes the canonical effect.request body for any
// sequence: the sequence is the last member of the canonical envelope.
type sessionRequests struct{ prefix []byte }

func newSessionRequests(b *testing.B, nonce string, size int) sessionRequests {
	body, err := canon.Marshal(struct {
		Binding         ipc.AttemptBinding `json:"binding"`
		HostNonce       string             `json:"host_nonce"`
		Method          ipc.Method         `json:"method"`
		Payload         ipc.EffectRequest  `json:"payload"`
		ProtocolVersion int                `json:"protocol_version"`
		Sequence        int64              `json:"sequence"`
	}{ipcBinding, nonce, ipc.MethodEffect, effectOfSize(size), 1, 1})
	if err != nil {
		b.Fatal(err)
	}
	return sessionRequests{prefix: body[:len(body)-len(`1}`)]}
}

func (r sessionRequests) frame(dst []byte, seq int64) []byte {
	dst = append(dst[:0], 0, 0, 0, 0)
	dst = append(dst, r.prefix...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, '}')
	n := len(dst) - 4
	dst[0], dst[1], dst[2], dst[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return dst
}

func BenchmarkIPCSessionOnly(b *testing.B) {
	for _, sz := range ipcSizes {
		b.Run(sz.name, func(b *testing.B) {
			ch, host := startSession(b)
			// The Channel left its last exchange deadline on the conn.
			if err := host.SetDeadline(time.Time{}); err != nil {
				b.Fatal(err)
			}
			reqs := newSessionRequests(b, ch.HostNonce(), sz.bytes)
			seq := ch.Sent()
			var buf []byte
			reply := make([]byte, 4096)
			b.SetBytes(int64(sz.bytes))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				seq++
				buf = reqs.frame(buf, seq)
				if _, err := host.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := readRawFrame(host, reply); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// readRawFrame reads one frame into buf (large enough for it) without
// allocating, in as few reads as the socket allows: header and body
// together when they have both arrived. Each ping-pong carries one frame
// at a time, so a read never runs into the next frame.
func readRawFrame(c net.Conn, buf []byte) error {
	got, want := 0, 4
	for got < want {
		n, err := c.Read(buf[got:])
		got += n
		if err != nil {
			return err
		}
		if want == 4 && got >= 4 {
			want += int(buf[0])<<24 | int(buf[1])<<16 | int(buf[2])<<8 | int(buf[3])
		}
	}
	return nil
}

// BenchmarkIPCRawPingPong moves the same bytes as one exchange (a request
// frame of the benchmark size one way, a reply frame of the size the
// Session writes back) with no parsing: the physical limit.
func BenchmarkIPCRawPingPong(b *testing.B) { benchRaw(b, false) }

// BenchmarkIPCFloor is the raw ping-pong where the peer also hashes the
// request body once, as any implementation must for the reply's
// request_digest: no exchange can be faster than this.
func BenchmarkIPCFloor(b *testing.B) { benchRaw(b, true) }

func benchRaw(b *testing.B, hash bool) {
	for _, sz := range ipcSizes {
		b.Run(sz.name, func(b *testing.B) {
			raw := newRawPingPong(b, sz.bytes, hash)
			b.SetBytes(int64(sz.bytes))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				raw.once(b)
			}
			reportCPU(b, cpu)
		})
	}
}

// rawPingPong is a socketpair with a peer goroutine that answers each
// frame of size bytes with a frame of the size of an allowed effect reply
// (about 900 bytes), hashing the request body first if asked to.
type rawPingPong struct {
	host       net.Conn
	req, reply []byte
}

func newRawPingPong(b *testing.B, size int, hash bool) *rawPingPong {
	const replySize = 900
	peer, host := ipcSocketpair(b)
	go func() {
		buf := make([]byte, size+4096)
		rep := make([]byte, 4+replySize)
		rep[2], rep[3] = byte(replySize>>8), byte(replySize&0xFF)
		for {
			if err := readRawFrame(peer, buf); err != nil {
				return
			}
			if hash {
				sink := sha256.Sum256(buf[:size])
				rep[4] = sink[0]
			}
			if _, err := peer.Write(rep); err != nil {
				return
			}
		}
	}()
	req := make([]byte, 4+size)
	req[1], req[2], req[3] = byte(size>>16), byte(size>>8), byte(size&0xFF)
	return &rawPingPong{host: host, req: req, reply: make([]byte, 4096)}
}

// once sends one frame and reads the answer.
func (r *rawPingPong) once(b *testing.B) {
	if _, err := r.host.Write(r.req); err != nil {
		b.Fatal(err)
	}
	if err := readRawFrame(r.host, r.reply); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIPCPaired alternates one Exchange and one raw ping-pong of the
// same size in every iteration and reports exchange-ns/op, raw-ns/op and
// their ratio x-raw: the ratio of runs interleaved within microseconds,
// immune to load that drifts between separate benchmark rows.
func BenchmarkIPCPaired(b *testing.B) {
	for _, sz := range ipcSizes {
		b.Run(sz.name, func(b *testing.B) {
			ch, _ := startSession(b)
			raw := newRawPingPong(b, sz.bytes, false)
			eff := effectOfSize(sz.bytes)
			ctx := context.Background()
			var exchange, pingPong time.Duration
			for b.Loop() {
				start := time.Now()
				rep, err := ch.Call(ctx, ipc.MethodEffect, eff)
				if err != nil || rep.State != ipc.StateAllowed {
					b.Fatal(rep, err)
				}
				mid := time.Now()
				raw.once(b)
				exchange += mid.Sub(start)
				pingPong += time.Since(mid)
			}
			b.ReportMetric(float64(exchange.Nanoseconds())/float64(b.N), "exchange-ns/op")
			b.ReportMetric(float64(pingPong.Nanoseconds())/float64(b.N), "raw-ns/op")
			b.ReportMetric(float64(exchange)/float64(pingPong), "x-raw")
		})
	}
}
