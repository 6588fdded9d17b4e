package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// InvokeArgs are the host arguments of an invocation (doc/protocol.md,
// “Host command line”).
var invokeArgs = []string{"invoke", "--request", "-", "--context-fd", "3", "--runtime-fd", "4"}

// Invocation is one attempt to run: what the host receives and who answers
// its requests.
type Invocation struct {
	// Context is the launch context; Invoke materializes, validates and
	// encodes it, and its Attempt is the binding every reply and the result
	// must carry. It is not read when Encoded is set.
	Context LaunchContext
	// Encoded, when set, is the launch context already encoded, by
	// LaunchContext.Encode or a ContextEncoder, unmodified: Invoke sends
	// its bytes and expects its launch digest instead of encoding Context
	// again (a caller that needs the launch digest before the launch, to
	// record it, encodes once).
	Encoded *Encoded
	// Request is the InvocationRequest document sent on stdin, byte for
	// byte (see EncodeRequest). The host, not the launcher, judges it.
	Request []byte
	// Handler decides the host's IPC requests. Required.
	Handler ipc.Handler
	// Dir overrides Config.Dir as the host's working directory when set.
	Dir string
	// Credentials selects the session's SCM_CREDENTIALS check; the zero
	// value is ipc.CredentialsAuto.
	Credentials ipc.CredentialCheck

	// peer, when set, stands in for the ipc.Session (and Handler is not
	// needed): a Runtime peer that breaks the protocol on purpose. Only the
	// package's tests set it (export_test.go).
	peer peer
}

// Outcome is everything an invocation produced. It is returned whenever the
// host process started, with or without an error.
type Outcome struct {
	// Result is the host's result; it is set only when Invoke returns a nil
	// error, and then it is the truth about the attempt.
	Result HostResult
	// Process is what the launcher observed of the host process.
	Process Process
	// LaunchDigest is the digest of the context that was sent.
	LaunchDigest canon.Digest
	// Session summarizes the IPC exchange (frames, methods, replies).
	Session ipc.Summary
	// SessionErr is how the IPC session ended: nil when the host closed its
	// end at a frame boundary, else the *ipc.ViolationError that poisoned
	// it. A session failure is evidence: the host's result decides the
	// outcome only if it is coherent with it (doc/design.md, “A host
	// result is evidence”).
	SessionErr error
	// DeadlinePassed and OutOfScope complete, with Session, SessionErr and
	// Process.Stopped, what the Runtime itself saw of the invocation,
	// which the host's result was judged against (doc/design.md, “A host
	// result is evidence”): DeadlinePassed reports that the attempt
	// deadline had passed when the launcher saw the host end (only then
	// may the host have found it passed at its start); OutOfScope, that
	// the host's own scope check fails for this invocation (the request
	// names another capability than the attempt's, or one not admitted,
	// or the attempt's manifest digest is not the provider's). A caller
	// that also consults durable state (the ledger) adds its own checks
	// on top of them.
	DeadlinePassed, OutOfScope bool
}

// EncodeRequest returns the canonical InvocationRequest document
// (doc/protocol.md, “Invocation request”) for capabilityID and arguments (nil
// means {}).
func EncodeRequest(capabilityID string, arguments map[string]any) ([]byte, error) {
	if arguments == nil {
		arguments = map[string]any{}
	}
	b, err := canon.Marshal(map[string]any{
		"protocol_version": ipc.ProtocolVersion,
		"capability_id":    capabilityID,
		"arguments":        arguments,
	})
	if err != nil {
		return nil, fmt.Errorf("launch: encoding the invocation request: %w", err)
	}
	return b, nil
}

// Invoke runs one invocation end to end: it verifies the provider
// environment, starts the host (`invoke --request - --context-fd 3
// --runtime-fd 4`) with the context on FD 3, the request on stdin and the
// child's end of a fresh socketpair on FD 4, serves the host's IPC with an
// ipc.Session bound to the child's pid, supervises the process group until
// the attempt deadline (then SIGTERM, then SIGKILL after the grace period),
// reaps it, and judges its stdout and exit status with ParseResult.
//
// Before the host starts, errors wrap ErrInvalidContext, ErrInvalidConfig,
// ErrEnvironmentMismatch or the start failure, and the Outcome is nil. Once
// it has started, the Outcome is always returned; the error is nil when the
// result is valid, bound to the attempt, agrees with the exit status and
// is coherent with what the session saw (the coherence rules of coherence.go: a claim the
// session contradicts is ErrSessionMismatch), and otherwise a
// *ResultError (errors.Is ErrBadResult) naming the failure, with its
// Signal set when the host was killed.
//
// ctx bounds the whole call together with the attempt deadline; when it is
// done the host is stopped the same way. Invoke is safe for concurrent use.
func (l *Launcher) Invoke(ctx context.Context, inv Invocation) (*Outcome, error) {
	return l.invoke(ctx, inv, nil)
}

// peer serves the host's end of the socketpair instead of an ipc.Session
// (Invocation.peer).
type peer func(ctx context.Context, conn net.Conn, pid int, launchDigest canon.Digest) error

// invoke runs inv, launching the host through z when it is set.
func (l *Launcher) invoke(ctx context.Context, inv Invocation, z *Zygote) (*Outcome, error) {
	if inv.Handler == nil && inv.peer == nil {
		return nil, fmt.Errorf("%w: Invocation.Handler is nil", ErrInvalidConfig)
	}
	if inv.Dir != "" {
		if err := checkDir(inv.Dir); err != nil {
			return nil, fmt.Errorf("%w: Invocation.Dir: %w", ErrInvalidConfig, err)
		}
	}
	enc := inv.Encoded
	if enc == nil {
		e, err := inv.Context.Encode()
		if err != nil {
			return nil, err
		}
		enc = &e
	}
	c := enc.Context
	if err := l.cfg.Verifier.VerifyEnvironment(ctx, c.Provider); err != nil {
		return nil, err
	}
	scfg := ipc.SessionConfig{
		Binding:         c.Attempt,
		BootstrapID:     c.BootstrapID,
		LaunchDigest:    enc.LaunchDigest,
		RPCTimeout:      time.Duration(c.RPCTimeoutMS) * time.Millisecond,
		MaxMessageBytes: c.MaxMessageBytes,
		Deadline:        c.Deadline(),
		Credentials:     inv.Credentials,
		Logger:          l.cfg.Logger,
	}
	// Refuse session settings the context cannot have before any process
	// starts; the child's pid is the one field not known yet.
	probe := scfg
	probe.ChildPID = 1
	if err := probe.Validate(); err != nil {
		return nil, fmt.Errorf("%w: session settings from the context: %w", ErrInvalidContext, err)
	}
	dir, workspace := inv.Dir, ""
	if root := l.cfg.Containment.WorkspaceRoot; root != "" {
		if inv.Dir != "" {
			return nil, fmt.Errorf("%w: Invocation.Dir is set, but with Containment.WorkspaceRoot the launcher makes each host's working directory", ErrInvalidConfig)
		}
		ws, err := makeWorkspace(root, c.Attempt.AttemptID, l.cfg.User)
		if err != nil {
			return nil, err
		}
		if !l.cfg.Containment.KeepWorkspaces {
			defer func() {
				if err := os.RemoveAll(ws); err != nil {
					l.log.Warn("launch: removing the attempt's workspace", "dir", ws, "err", err)
				}
			}()
		}
		dir, workspace = ws, ws
	}
	var session *ipc.Session
	out := &Outcome{LaunchDigest: enc.LaunchDigest}
	run := l.run
	if z != nil {
		if z.l != l {
			return nil, fmt.Errorf("%w: the zygote was started by another launcher", ErrInvalidConfig)
		}
		run = z.run
	}
	ran, err := run(ctx, spec{
		args:      invokeArgs,
		fd3:       enc.Bytes,
		stdin:     inv.Request,
		dir:       dir,
		deadline:  c.Deadline(),
		provider:  &c.Provider,
		lc:        &c,
		workspace: workspace,
		serve: func(ctx context.Context, conn net.Conn, pid int) error {
			if inv.peer != nil {
				return inv.peer(ctx, conn, pid, enc.LaunchDigest)
			}
			cfg := scfg
			cfg.ChildPID = pid
			session = ipc.NewSession(conn, cfg)
			return session.Serve(ctx, inv.Handler)
		},
	})
	if err != nil {
		return nil, err
	}
	p, serveErr := ran.p, ran.serveErr
	out.Process = *p
	out.SessionErr = serveErr
	if session != nil {
		out.Session = session.Summary()
	}
	out.DeadlinePassed = !time.Now().Before(c.Deadline())
	out.OutOfScope = outOfScope(c, inv.Request)
	seen := history{Session: out.Session, SessionErr: serveErr, Stopped: p.Stopped,
		DeadlinePassed: out.DeadlinePassed, OutOfScope: out.OutOfScope}
	if errors.Is(p.WaitErr, ErrExitUnknown) {
		return out, &ResultError{Err: ErrExitUnknown, ExitCode: -1, WantExitCode: -1, Want: c.Attempt,
			Stdout: head(p.Stdout), StdoutLen: int(min(p.StdoutBytes, int64(MaxResultBytes+1))), Cause: p.WaitErr}
	}
	r, err := parseResult(p.Stdout, p.ExitCode, c.Attempt)
	if err != nil {
		if re, ok := err.(*ResultError); ok {
			re.Signal = p.Signal
			re.StdoutLen = int(min(p.StdoutBytes, int64(MaxResultBytes+1)))
		}
		return out, err
	}
	// With a test's peer there is no session to judge against.
	if session != nil {
		if err := seen.Check(r); err != nil {
			want, _ := r.State.ExitCode()
			return out, &ResultError{Err: ErrSessionMismatch, ExitCode: p.ExitCode, WantExitCode: want,
				Result: &r, Want: c.Attempt, Stdout: head(p.Stdout), StdoutLen: len(p.Stdout), Cause: err}
		}
	}
	out.Result = r
	return out, nil
}

// makeWorkspace creates the private workspace of one attempt under root
// (Containment.WorkspaceRoot): a new 0700 directory named after the
// attempt and made unique, which no other attempt's host can reach.
// A host running as Config.User owns its workspace.
func makeWorkspace(root, attemptID string, user *contain.User) (string, error) {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, attemptID)
	if len(name) > 64 {
		name = name[:64]
	}
	ws, err := os.MkdirTemp(root, "attempt-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("launch: creating the attempt's workspace under Containment.WorkspaceRoot: %w", err)
	}
	if user != nil {
		if err := os.Chown(ws, int(user.UID), int(user.GID)); err != nil {
			os.Remove(ws)
			return "", fmt.Errorf("launch: giving the attempt's workspace to Config.User: %w", err)
		}
	}
	return ws, nil
}
