package hostsim_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/sockettest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// socketpair returns a fresh socketpair, closed at the end of the test.
func socketpair(t testing.TB) (runtimeEnd, hostEnd *net.UnixConn) { return sockettest.Pair(t) }

// tap records every byte written to and read from a connection.
type tap struct {
	net.Conn
	mu           sync.Mutex
	wrote, reads bytes.Buffer
}

func (c *tap) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.wrote.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *tap) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.reads.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

// splitFrames splits a recorded byte stream into frame bodies.
func splitFrames(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("%d stray bytes", len(b))
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n {
			t.Fatalf("truncated frame of %d bytes", n)
		}
		out = append(out, b[4:4+n])
		b = b[4+n:]
	}
	return out
}

// transcript is one real-host capture.
type transcript struct {
	Scenario       string `json:"scenario"`
	FD3            string `json:"fd3_bytes_utf8"`
	Stdin          string `json:"stdin_bytes_utf8"`
	Stdout         string `json:"stdout_utf8"`
	ExitStatus     int    `json:"exit_status"`
	PID            int    `json:"pid"`
	HostNonce      string `json:"host_nonce"`
	BootstrapPayld struct {
		LaunchDigest canon.Digest `json:"launch_digest"`
	} `json:"bootstrap_payload"`
	Exchanges []struct {
		Request struct {
			Method        ipc.Method   `json:"method"`
			Sequence      int64        `json:"sequence"`
			Length        int          `json:"length"`
			PrefixHex     string       `json:"length_prefix_hex"`
			Body          string       `json:"body_utf8"`
			RequestDigest canon.Digest `json:"request_digest"`
		} `json:"request"`
		Reply struct {
			Body string `json:"body_utf8"`
		} `json:"reply"`
	} `json:"exchanges"`
}

// launchContext is the part of the LaunchContext hostsim needs.
type launchContext struct {
	Attempt              ipc.AttemptBinding `json:"attempt"`
	AdmittedCapabilities []string           `json:"admitted_capabilities"`
	BootstrapID          string             `json:"bootstrap_id"`
	DeadlineUnixMS       int64              `json:"deadline_unix_ms"`
	MaxMessageBytes      int                `json:"max_message_bytes"`
	RPCTimeoutMS         int                `json:"rpc_timeout_ms"`
	Budget               int64              `json:"total_dispatch_budget"`
	Provider             struct {
		ManifestDigest canon.Digest `json:"manifest_digest"`
	} `json:"provider"`
}

type invocationRequest struct {
	CapabilityID string         `json:"capability_id"`
	Arguments    map[string]any `json:"arguments"`
}

func loadTranscript(t testing.TB, name string) (transcript, launchContext, invocationRequest) {
	t.Helper()
	tr := testvectors.RealHost[transcript](t, strings.TrimSuffix(name, ".json"))
	var lc launchContext
	if err := json.Unmarshal([]byte(tr.FD3), &lc); err != nil {
		t.Fatal(err)
	}
	var ir struct {
		ProtocolVersion int            `json:"protocol_version"`
		CapabilityID    string         `json:"capability_id"`
		Arguments       map[string]any `json:"arguments"`
	}
	if err := canon.Unmarshal([]byte(tr.Stdin), &ir); err != nil {
		t.Fatal(err)
	}
	return tr, lc, invocationRequest{CapabilityID: ir.CapabilityID, Arguments: ir.Arguments}
}

// orgDefault is the request model's normalization in the recorded fixtures:
// organization_id defaults to "org-a".
func orgDefault(args map[string]any) (map[string]any, error) {
	out := map[string]any{"organization_id": "org-a"}
	for k, v := range args {
		out[k] = v
	}
	return out, nil
}

// peer is a Handler that plays the recorded test peer: everything allowed,
// effect receipts "receipt-<id>"/"auth-<id>", publish ["artifact-a"], with
// per-method overrides of the state.
type peer struct {
	mu          sync.Mutex
	effectState map[string]ipc.ReplyState // by logical effect id
	admitState  ipc.ReplyState
	bootState   ipc.ReplyState
	pubState    ipc.ReplyState
	refs        []string
	calls       []ipc.Method
}

func (p *peer) note(m ipc.Method) { p.mu.Lock(); p.calls = append(p.calls, m); p.mu.Unlock() }

func orAllowed(s ipc.ReplyState) ipc.ReplyState {
	if s == "" {
		return ipc.StateAllowed
	}
	return s
}

func (p *peer) Bootstrap(context.Context, ipc.BootstrapRequest) (ipc.Decision, error) {
	p.note(ipc.MethodBootstrap)
	return ipc.Decision{State: orAllowed(p.bootState)}, nil
}
func (p *peer) Admit(context.Context, ipc.AdmitRequest) (ipc.Decision, error) {
	p.note(ipc.MethodAdmit)
	return ipc.Decision{State: orAllowed(p.admitState)}, nil
}
func (p *peer) Effect(_ context.Context, r ipc.EffectCall) (ipc.EffectDecision, error) {
	p.note(ipc.MethodEffect)
	id := r.Effect.LogicalEffectID
	st := orAllowed(p.effectState[id])
	if st != ipc.StateAllowed {
		return ipc.EffectDecision{State: st}, nil
	}
	return ipc.EffectDecision{State: st, ReceiptID: "receipt-" + id, AuthorizationID: "auth-" + id}, nil
}
func (p *peer) Publish(context.Context, ipc.PublishRequest) (ipc.PublishDecision, error) {
	p.note(ipc.MethodPublish)
	refs := p.refs
	if refs == nil {
		refs = []string{"artifact-a"}
	}
	return ipc.PublishDecision{State: orAllowed(p.pubState), ArtifactRefs: refs}, nil
}
