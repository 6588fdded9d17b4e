package hostsim_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// TestRealHostTranscripts runs hostsim against an ipc.Session over a real
// socketpair with the inputs of each capture from the real upstream host
// (pid and nonce fixed to the recorded ones) and checks, byte for byte,
// every request frame hostsim sends, every reply the Session writes, the
// stdout line and the exit status.
func TestRealHostTranscripts(t *testing.T) {
	for _, tc := range []struct {
		file     string
		provider hostsim.Provider
		peer     *peer
	}{
		{"s01_echo_success.json", hostsim.Echo(), &peer{}},
		{"s02_two_effects_success.json", hostsim.TwoEffects(), &peer{}},
		{"s04_effect_needs_reconciliation.json", hostsim.TwoEffects(),
			&peer{effectState: map[string]ipc.ReplyState{"effect-1": ipc.StateNeedsReconciliation}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tr, lc, ir := loadTranscript(t, tc.file)
			rt, host := socketpair(t)
			deadline := time.UnixMilli(lc.DeadlineUnixMS)
			s := ipc.NewSession(rt, ipc.SessionConfig{
				ChildPID: tr.PID, Binding: lc.Attempt, BootstrapID: lc.BootstrapID,
				LaunchDigest: tr.BootstrapPayld.LaunchDigest, Deadline: deadline,
				RPCTimeout:  time.Duration(lc.RPCTimeoutMS) * time.Millisecond,
				Credentials: ipc.CredentialsOff, // the recorded pid is not this process
			})
			done := make(chan error, 1)
			go func() { done <- s.Serve(context.Background(), tc.peer) }()

			tp := &tap{Conn: host}
			inv := &hostsim.Invocation{
				Binding: lc.Attempt, ProviderManifestDigest: lc.Provider.ManifestDigest,
				AdmittedCapabilities: lc.AdmittedCapabilities, BootstrapID: lc.BootstrapID,
				LaunchDigest: tr.BootstrapPayld.LaunchDigest, Deadline: deadline,
				RPCTimeout:      time.Duration(lc.RPCTimeoutMS) * time.Millisecond,
				MaxMessageBytes: lc.MaxMessageBytes, Budget: lc.Budget,
				CapabilityID: ir.CapabilityID, Arguments: ir.Arguments,
				PID: tr.PID, HostNonce: tr.HostNonce, Normalize: orgDefault, Provider: tc.provider,
			}
			rep := inv.Run(context.Background(), tp)
			if err := <-done; err != nil {
				t.Fatalf("Serve: %v", err)
			}
			reqs := splitFrames(t, tp.wrote.Bytes())
			replies := splitFrames(t, tp.reads.Bytes())
			if len(reqs) != len(tr.Exchanges) || len(replies) != len(tr.Exchanges) {
				t.Fatalf("%d requests and %d replies, transcript has %d exchanges (report err: %v)", len(reqs), len(replies), len(tr.Exchanges), rep.Err)
			}
			for i, ex := range tr.Exchanges {
				if diff := cmp.Diff(ex.Request.Body, string(reqs[i])); diff != "" {
					t.Errorf("request %d (%s) differs (-real host +hostsim):\n%s", i+1, ex.Request.Method, diff)
				}
				var hdr [4]byte
				binary.BigEndian.PutUint32(hdr[:], uint32(len(reqs[i])))
				if got := fmt.Sprintf("%x", hdr); got != ex.Request.PrefixHex {
					t.Errorf("request %d prefix %s, want %s", i+1, got, ex.Request.PrefixHex)
				}
				if diff := cmp.Diff(ex.Reply.Body, string(replies[i])); diff != "" {
					t.Errorf("reply %d (%s) differs (-recorded peer +Session):\n%s", i+1, ex.Request.Method, diff)
				}
			}
			line, err := rep.Result.Line()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tr.Stdout, string(line)); diff != "" {
				t.Errorf("stdout differs (-real host +hostsim):\n%s", diff)
			}
			if got := rep.Result.ExitCode(); got != tr.ExitStatus {
				t.Errorf("exit %d, real host %d", got, tr.ExitStatus)
			}
			var sum []ipc.Method
			for _, e := range s.Summary().Exchanges {
				sum = append(sum, e.Method)
			}
			if diff := cmp.Diff(rep.Methods, sum); diff != "" {
				t.Errorf("hostsim methods vs Session summary (-hostsim +session):\n%s", diff)
			}
		})
	}
}
