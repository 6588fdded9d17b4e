// Command ownloop keeps its own supervisor loop and takes only the lower
// layer of package supervise, package supervise/handler: the
// ledger-backed ipc.Handler of one attempt.
// The loop does what supervise.Supervisor would otherwise do, step by
// step, with package launch directly:
//
//  1. record the operation (ledger.CreateOperation);
//  2. per attempt: the next fencing generation (the operation's current
//     one plus one), the LaunchContext (handler.BuildContext: budget
//     left, deadline, the services the manifest requires), one write
//     (LaunchAttempt) that starts the attempt, fencing off the one
//     before, and issues its one-shot bootstrap id, a Handler, then
//     launch.Invoke;
//  3. record the attempt's evidence (RecordAttempt: the host's pid, exit
//     status and result line, the exchanges), then decide from the ledger,
//     never from the host's word alone: an accepted result ends the loop;
//     anything else is this loop's policy (here: try again, at most three
//     attempts). Effects the ledger recorded are redelivered to the next
//     attempt, never dispatched twice.
//
// The first attempt's host here crashes before it says anything (the
// simulated host's exit-1 scenario); the second one succeeds.
//
//	go run ./examples/ownloop
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
	"github.com/zeoruntime/runtimeipc/supervise/port"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

func main() {
	supervisetest.RunHost()
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ownloop:", err)
		os.Exit(1)
	}
}

type receipts struct{}

func (receipts) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	return port.Receipt{ReceiptID: "receipt-" + d.LogicalEffectID}, nil
}

func run(ctx context.Context, w io.Writer) error {
	// Two hosts: one that crashes (the simulated host's exit-1 scenario),
	// one that behaves.
	crashing, cleanup, err := hostLauncher(supervisetest.CrashExit)
	if err != nil {
		return err
	}
	defer cleanup()
	healthy, cleanup2, err := hostLauncher(supervisetest.WellBehaved)
	if err != nil {
		return err
	}
	defer cleanup2()
	l := memory.New()
	defer l.Close(ctx)

	provider := supervisetest.Binding()
	m, err := manifest.Describe(provider.Manifests, "example.two_effects@1.0.0")
	if err != nil {
		return err
	}
	// The request: defaults materialized, and its digest, which the ledger,
	// the context and the host all bind.
	args := map[string]any{"target": "doc-1"}
	prep, err := manifest.PrepareRequest(m, args)
	if err != nil {
		return err
	}
	scope := ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"}
	const opID = "op-1"
	spec := ledger.OperationSpec{Scope: scope, OperationID: opID,
		CapabilityID: m.ID.String(), RequestDigest: prep.RequestDigest, ManifestDigest: provider.ManifestDigest,
		EffectBudget: 2, Deadline: time.Now().Add(time.Minute)}
	if _, err := l.CreateOperation(ctx, spec); err != nil {
		return err
	}
	// The host gets the arguments as given; the digest binds them as the
	// provider's validation leaves them (prep.RequestDigest).
	request, err := launch.EncodeRequest(m.ID.String(), args)
	if err != nil {
		return err
	}

	for n := 1; n <= 3; n++ {
		attemptID := fmt.Sprintf("attempt-%d", n)
		view, err := l.Operation(ctx, scope, opID)
		if err != nil {
			return err
		}
		gen := view.Operation.CurrentGeneration + 1
		binding := ipc.AttemptBinding{OrganizationID: scope.OrganizationID, ProjectID: scope.ProjectID,
			SeatID: "seat-1", RuntimeBindingID: "runtime-1", PacketID: "packet-1", OperationID: opID,
			AttemptID: attemptID, FencingGeneration: gen, CapabilityID: m.ID.String(),
			RequestDigest: prep.RequestDigest, ManifestDigest: provider.ManifestDigest}
		bootstrapID := fmt.Sprintf("bootstrap-%d", n)
		lc, err := handler.BuildContext(handler.ContextSpec{Provider: provider, Manifest: m, Binding: binding,
			Operation: view, BootstrapID: bootstrapID, Workspace: "workspace-1"})
		if err != nil {
			return err
		}
		enc, err := lc.Encode()
		if err != nil {
			return err
		}
		fence, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: spec, AttemptID: attemptID,
			Generation: gen, BootstrapID: bootstrapID, LaunchDigest: enc.LaunchDigest})
		if err != nil {
			return err
		}
		h, err := handler.New(handler.Config{Ledger: l, Fence: fence, Binding: binding,
			BootstrapID: bootstrapID, Manifest: &m, Dispatcher: receipts{}})
		if err != nil {
			return err
		}
		lnch := healthy
		if n == 1 {
			lnch = crashing
		}
		out, lerr := lnch.Invoke(ctx, launch.Invocation{Encoded: &enc, Request: request, Handler: h})
		if out == nil {
			return lerr // the host never started
		}
		fmt.Fprintf(w, "%s (generation %d): exit status %d, %d requests answered", attemptID, fence.Generation,
			out.Process.ExitCode, len(h.Decisions()))
		if lerr != nil {
			fmt.Fprint(w, ", no valid host result")
		} else {
			fmt.Fprintf(w, ", host says %s", out.Result.State)
		}
		fmt.Fprintln(w)
		for _, ev := range h.Decisions() {
			fmt.Fprintf(w, "  %s -> %s", ev.Method, ev.State)
			if ev.Effect != nil {
				fmt.Fprintf(w, " (%s, receipt %s, redelivery %t)", ev.Effect.LogicalEffectID, ev.Effect.ReceiptID, ev.Redelivery)
			}
			fmt.Fprintln(w)
		}

		// The attempt's evidence, for audits and for rebuilding its wire
		// binding after a restart (handler.BindingOf).
		ev := ledger.AttemptEvidence{SeatID: binding.SeatID, RuntimeBindingID: binding.RuntimeBindingID,
			PacketID: binding.PacketID, BootstrapID: bootstrapID, LaunchDigest: out.LaunchDigest,
			State: "protocol_error", Reason: "no valid host result", Launched: true, PID: out.Process.PID,
			ExitCode: out.Process.ExitCode, HostResult: out.Process.Stdout, StdoutBytes: out.Process.StdoutBytes,
			Session: ledger.SessionEvidence{HostNonce: out.Session.HostNonce, Frames: out.Session.Frames}}
		if lerr == nil {
			ev.State, ev.Reason = string(out.Result.State), ""
		}
		for _, x := range out.Session.Exchanges {
			ev.Session.Exchanges = append(ev.Session.Exchanges, ledger.ExchangeEvidence{Sequence: x.Sequence,
				Method: string(x.Method), State: string(x.State), RequestDigest: x.RequestDigest})
		}
		if _, err := l.RecordAttempt(ctx, fence, ev); err != nil {
			return err
		}

		// The ledger decides.
		after, err := l.Operation(ctx, scope, opID)
		if err != nil {
			return err
		}
		if after.Result != nil {
			a, err := l.Artifact(ctx, scope, after.Result.ArtifactRefs[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "result accepted from generation %d: %s\n", after.Result.Generation, a.Bytes)
			evs, err := l.Evidence(ctx, scope, opID)
			if err != nil {
				return err
			}
			for _, e := range evs {
				fmt.Fprintf(w, "evidence of generation %d: %s, exit status %d, %d exchanges\n",
					e.Generation, e.State, e.ExitCode, len(e.Session.Exchanges))
			}
			return nil
		}
	}
	return fmt.Errorf("operation %s: no result after 3 attempts", opID)
}

// hostLauncher returns a launcher of the simulated host (this executable,
// re-executed; see supervisetest.RunHost) behaving as sc, working in a
// fresh temporary directory that cleanup removes.
func hostLauncher(sc supervisetest.Scenario) (l *launch.Launcher, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "example-host-")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := supervisetest.LaunchConfig(dir, sc)
	if err == nil {
		l, err = launch.New(cfg)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return l, func() { os.RemoveAll(dir) }, nil
}
