package launch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// hostsimPath is the simulated host executable, built once by TestMain.
var hostsimPath string

func TestMain(m *testing.M) {
	contain.Init()
	if os.Getenv(controllerEnv) != "" {
		os.Exit(helperController())
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "zeo-hostsim-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if hostsimPath, err = testbin.Build(dir, "zeo-hostsim", testbin.HostsimPackage); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Every user may run it: the privilege tests start it as uid 65534.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// fixture is an inventory the simulated host serves.
type fixture struct {
	binding manifest.ProviderBinding
	byName  map[string]manifest.CapabilityManifest
}

// newFixture builds the provider: example.echo and example.two_effects from
// the real-host transcript, and example.fail, example.cancel (copies of
// echo under other names, which the simulated factory maps to a failing and
// a cancelled provider).
func newFixture(t testing.TB) fixture {
	t.Helper()
	rh := testvectors.RealHost[realHost](t, "s01_echo_success")
	var ctx struct {
		Provider struct {
			Manifests []json.RawMessage `json:"manifests"`
		} `json:"provider"`
	}
	if err := json.Unmarshal([]byte(rh.FD3), &ctx); err != nil {
		t.Fatal(err)
	}
	f := fixture{byName: map[string]manifest.CapabilityManifest{}}
	var ms []manifest.CapabilityManifest
	for _, raw := range ctx.Provider.Manifests {
		m, err := manifest.DecodeManifest(raw)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
		f.byName[m.ID.Name] = m
	}
	for _, name := range []string{"fail", "cancel"} {
		m, err := manifest.DecodeManifest(ctx.Provider.Manifests[0])
		if err != nil {
			t.Fatal(err)
		}
		m.ID.Name = name
		ms = append(ms, m)
		f.byName[name] = m
	}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		t.Fatal(err)
	}
	f.binding = manifest.ProviderBinding{
		ProtocolVersion: 1, Distribution: "zeocore", Version: "0.11.0", PythonVersion: "3.14.0",
		EnvironmentDigest: canon.Digest("sha256:" + strings.Repeat("0", 64)),
		Factory:           "demo_provider:factory", Manifests: ms, ManifestDigest: d, Generation: 1,
	}
	return f
}

func capID(m manifest.CapabilityManifest) string {
	return m.ID.Namespace + "." + m.ID.Name + "@" + m.ID.Version
}

// invocation builds a context and request for capability name with args,
// the attempt's request digest taken over digestArgs (args when nil).
func (f fixture) invocation(t testing.TB, name string, args, digestArgs map[string]any) launch.Invocation {
	t.Helper()
	m := f.byName[name]
	if digestArgs == nil {
		digestArgs = args
	}
	p, err := manifest.PrepareRequest(m, digestArgs)
	if err != nil {
		t.Fatal(err)
	}
	id := capID(m)
	req, err := launch.EncodeRequest(id, args)
	if err != nil {
		t.Fatal(err)
	}
	return launch.Invocation{
		Context: launch.LaunchContext{
			Provider: f.binding,
			Attempt: ipc.AttemptBinding{
				OrganizationID: "org-a", ProjectID: "project-a", SeatID: "seat-a", RuntimeBindingID: "runtime-a",
				PacketID: "packet-a", OperationID: "op-a", AttemptID: "attempt-a", FencingGeneration: 1,
				CapabilityID: id, RequestDigest: p.RequestDigest, ManifestDigest: f.binding.ManifestDigest,
			},
			BootstrapID:          "bootstrap-a",
			AdmittedCapabilities: []string{id},
			DeadlineUnixMS:       time.Now().Add(20 * time.Second).UnixMilli(),
			Workspace:            "/unused-host-workspace",
			TotalDispatchBudget:  2,
			Services:             []string{"runtime.effects"},
		},
		Request: req,
		Handler: &handler{},
	}
}

// handler is a scripted Runtime: every method is allowed unless a state is
// set for it.
type handler struct {
	bootstrap, admit, effect, publish ipc.ReplyState
}

func orAllowed(s ipc.ReplyState) ipc.ReplyState {
	if s == "" {
		return ipc.StateAllowed
	}
	return s
}

func (h *handler) Bootstrap(context.Context, ipc.BootstrapRequest) (ipc.Decision, error) {
	return ipc.Decision{State: orAllowed(h.bootstrap)}, nil
}

func (h *handler) Admit(context.Context, ipc.AdmitRequest) (ipc.Decision, error) {
	return ipc.Decision{State: orAllowed(h.admit)}, nil
}

func (h *handler) Effect(_ context.Context, c ipc.EffectCall) (ipc.EffectDecision, error) {
	return ipc.EffectDecision{State: orAllowed(h.effect), ReceiptID: "receipt-" + c.Effect.LogicalEffectID,
		AuthorizationID: "auth-" + c.Effect.LogicalEffectID}, nil
}

func (h *handler) Publish(context.Context, ipc.PublishRequest) (ipc.PublishDecision, error) {
	return ipc.PublishDecision{State: orAllowed(h.publish), ArtifactRefs: []string{"artifact-a"}}, nil
}

// newLauncher returns a launcher for the simulated host running in a fresh
// working directory, with env as its whole environment.
func newLauncher(t testing.TB, env ...string) (*launch.Launcher, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := launch.New(launch.Config{
		Interpreter: hostsimPath,
		Env:         env,
		Dir:         dir,
		Grace:       2 * time.Second,
		WaitDelay:   500 * time.Millisecond,
		Verifier:    environment.Trust{},
		// Tests run as whoever runs them, root included (CI).
		AllowRootHost: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// testCtx bounds a call by the test's own deadline.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rawPeer is a Runtime peer that breaks the protocol on purpose, as the
// upstream test peers do: it answers every request allowed, except that
// stale puts fencing generation 2 in the first reply's binding, and
// publish ("lose", "wrong-digest", "no-refs") mishandles result.publish.
type rawPeer struct {
	stale   bool
	publish string
	frames  int
	bodies  [][]byte // every request frame's body, in order
}

func (p *rawPeer) serve(ctx context.Context, conn net.Conn, pid int, _ canon.Digest) error {
	defer conn.Close()
	for {
		body, err := ipc.ReadFrame(conn, ipc.MaxMessageBytes)
		if err != nil {
			return nil
		}
		p.frames++
		p.bodies = append(p.bodies, body)
		req, digest, err := ipc.DecodeRequest(body, ipc.MaxMessageBytes)
		if err != nil {
			return err
		}
		b := req.Binding
		if p.stale {
			b.FencingGeneration = 2
		}
		data := map[string]any{}
		switch req.Method {
		case ipc.MethodEffect:
			e, ed, err := req.DecodeEffect()
			if err != nil {
				return err
			}
			data = map[string]any{"logical_effect_id": e.LogicalEffectID, "effect_request_digest": ed,
				"receipt_id": "r", "authorization_id": "a", "effect_disposition": "confirmed"}
		case ipc.MethodPublish:
			pp, dd, err := req.DecodePublish()
			if err != nil {
				return err
			}
			_ = pp
			switch p.publish {
			case "lose":
				return nil
			case "wrong-digest":
				data = map[string]any{"data_digest": "sha256:" + strings.Repeat("f", 64), "artifact_refs": []string{"artifact-a"}}
			case "no-refs":
				data = map[string]any{"data_digest": dd, "artifact_refs": []string{}}
			default:
				data = map[string]any{"data_digest": dd, "artifact_refs": []string{"artifact-a"}}
			}
		}
		reply, err := canon.Marshal(map[string]any{
			"protocol_version": 1, "sequence": req.Sequence, "host_nonce": req.HostNonce, "binding": b,
			"request_digest": digest, "state": "allowed", "data": data,
		})
		if err != nil {
			return err
		}
		if err := ipc.WriteFrame(conn, reply, ipc.MaxMessageBytes); err != nil {
			return err
		}
	}
}

// scenario is one row of the upstream tables, as the launcher runs it.
type scenario struct {
	name       string
	capability string
	args       map[string]any
	digestArgs map[string]any
	mutate     func(inv *launch.Invocation)
	env        []string
	peer       *rawPeer
	state      launch.State
	frames     int
	errorCode  string
}

func runScenario(t *testing.T, f fixture, sc scenario) {
	t.Helper()
	name := sc.capability
	if name == "" {
		name = "echo"
	}
	args := sc.args
	if args == nil {
		args = map[string]any{"text": "hello"}
	}
	inv := f.invocation(t, name, args, sc.digestArgs)
	h := &handler{}
	inv.Handler = h
	if sc.mutate != nil {
		sc.mutate(&inv)
	}
	l, _ := newLauncher(t, sc.env...)
	var out *launch.Outcome
	var err error
	if sc.peer != nil {
		out, err = l.InvokeWithPeer(testCtx(t), inv, sc.peer.serve)
	} else {
		out, err = l.Invoke(testCtx(t), inv)
	}
	if err != nil {
		if out != nil {
			t.Fatalf("%v\nstdout %q\nstderr %q\nsession %v", err, out.Process.Stdout, out.Process.StderrTail, out.SessionErr)
		}
		t.Fatal(err)
	}
	frames := out.Session.Frames
	if sc.peer != nil {
		frames = sc.peer.frames
	}
	code := ""
	if out.Result.ErrorCode != nil {
		code = *out.Result.ErrorCode
	}
	if out.Result.State != sc.state || frames != sc.frames || (sc.errorCode != "" && code != sc.errorCode) {
		t.Fatalf("state %s, %d frames, error code %q; want %s, %d frames, %q (session %v)",
			out.Result.State, frames, code, sc.state, sc.frames, sc.errorCode, out.SessionErr)
	}
	want, _ := sc.state.ExitCode()
	if out.Process.ExitCode != want {
		t.Fatalf("exit status %d, want %d", out.Process.ExitCode, want)
	}
	if out.Process.StderrBytes != 0 {
		t.Fatalf("host wrote %d bytes to stderr: %q", out.Process.StderrBytes, out.Process.StderrTail)
	}
	if sc.state == launch.StateSucceeded && len(out.Result.ArtifactRefs) == 0 {
		t.Fatal("succeeded without artifact refs")
	}
}

// TestInvocationSequences runs every case of invocation_sequences against
// the simulated host through the launcher: state and frame count.
func TestInvocationSequences(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	f := newFixture(t)
	cases := v.Upstream.InvocationSequences.Cases
	if len(cases) != 9 {
		t.Fatalf("%d invocation sequences, want 9", len(cases))
	}
	for i, c := range cases {
		var sc scenario
		sc.name = fmt.Sprintf("case%d", i)
		var methods []string
		if raw, ok := c["ipc_methods"]; ok {
			if err := json.Unmarshal(raw, &methods); err != nil {
				t.Fatal(err)
			}
			sc.frames = len(methods)
		}
		if raw, ok := c["ipc_messages"]; ok {
			if err := json.Unmarshal(raw, &sc.frames); err != nil {
				t.Fatal(err)
			}
		}
		if raw, ok := c["state"]; ok {
			json.Unmarshal(raw, &sc.state)
		}
		if raw, ok := c["error_code"]; ok {
			json.Unmarshal(raw, &sc.errorCode)
			if sc.state == "" && strings.HasPrefix(sc.errorCode, "ZEO_HOST_") {
				sc.state = launch.StateRefused // ZEO_HOST_ORGANIZATION: refused (doc/protocol.md, “Host endings”)
			}
		}
		if raw, ok := c["request_arguments"]; ok {
			json.Unmarshal(raw, &sc.args)
			sc.digestArgs = map[string]any{"text": "hello"}
		}
		if raw, ok := c["attempt_request_digest_over"]; ok {
			var over struct {
				Arguments map[string]any `json:"arguments"`
			}
			json.Unmarshal(raw, &over)
			sc.digestArgs = over.Arguments
		}
		var mutations []func(inv *launch.Invocation)
		if raw, ok := c["request_capability_id"]; ok {
			var id string
			json.Unmarshal(raw, &id)
			mutations = append(mutations, func(inv *launch.Invocation) {
				inv.Request, _ = launch.EncodeRequest(id, sc.args)
			})
		}
		if raw, ok := c["invoke_admit_reply_state"]; ok {
			var s ipc.ReplyState
			json.Unmarshal(raw, &s)
			mutations = append(mutations, func(inv *launch.Invocation) { inv.Handler = &handler{admit: s} })
		}
		if raw, ok := c["deadline_unix_ms"]; ok {
			var d int64
			json.Unmarshal(raw, &d)
			mutations = append(mutations, func(inv *launch.Invocation) { inv.Context.DeadlineUnixMS = d })
		}
		sc.mutate = func(inv *launch.Invocation) {
			for _, m := range mutations {
				m(inv)
			}
		}
		sc.name += "_" + string(sc.state)
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, f, sc)
		})
	}
}

// TestCreatorHostScenarios runs every case of creator_host_scenarios.
func TestCreatorHostScenarios(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	f := newFixture(t)
	hello := map[string]any{"text": "hello"}
	build := map[string]scenario{
		"success":            {},
		"changed_request":    {args: map[string]any{"text": "changed"}, digestArgs: hello},
		"wrong_organization": {args: map[string]any{"text": "hello", "organization_id": "org-b"}},
		"wrong_scope": {mutate: func(inv *launch.Invocation) {
			inv.Context.AdmittedCapabilities = []string{"example.fail@1.0.0"}
		}},
		"expired":         {mutate: func(inv *launch.Invocation) { inv.Context.DeadlineUnixMS = time.Now().Add(-time.Second).UnixMilli() }},
		"wrong_version":   {env: []string{"ZEO_HOSTSIM_VERSION=0.12.0"}},
		"wrong_python":    {env: []string{"ZEO_HOSTSIM_PYTHON_VERSION=3.13.1"}},
		"invalid_request": {args: map[string]any{"text": int64(4)}, digestArgs: hello},
		"domain_failure":  {capability: "fail"},
		"bootstrap_refused": {mutate: func(inv *launch.Invocation) {
			inv.Handler = &handler{bootstrap: ipc.StateRefused}
		}},
		"revoked":   {mutate: func(inv *launch.Invocation) { inv.Handler = &handler{admit: ipc.StateRefused} }},
		"cancelled": {mutate: func(inv *launch.Invocation) { inv.Handler = &handler{admit: ipc.StateCancelled} }},
		"waiting":   {mutate: func(inv *launch.Invocation) { inv.Handler = &handler{admit: ipc.StateWaitingApproval} }},
		"stale_reply (reply binding fencing_generation 2)": {peer: &rawPeer{stale: true}},
		"missing_service": {capability: "two_effects", args: map[string]any{"target": "doc-1"},
			mutate: func(inv *launch.Invocation) { inv.Context.Services = nil }},
		"publication_refused":    {mutate: func(inv *launch.Invocation) { inv.Handler = &handler{publish: ipc.StateRefused} }},
		"lost_publication_reply": {peer: &rawPeer{publish: "lose"}},
		"wrong_artifact_digest":  {peer: &rawPeer{publish: "wrong-digest"}},
		"empty_artifact_refs":    {peer: &rawPeer{publish: "no-refs"}},
	}
	cases := v.Upstream.CreatorHostScenarios.Cases
	if len(cases) != len(build) {
		t.Fatalf("%d creator scenarios, %d built", len(cases), len(build))
	}
	for _, c := range cases {
		var name string
		var state launch.State
		var frames int
		json.Unmarshal(c[0], &name)
		json.Unmarshal(c[1], &state)
		json.Unmarshal(c[2], &frames)
		sc, ok := build[name]
		if !ok {
			t.Fatalf("scenario %q not built", name)
		}
		sc.name, sc.state, sc.frames = name, state, frames
		t.Run(strings.Fields(name)[0], func(t *testing.T) {
			t.Parallel()
			runScenario(t, f, sc)
		})
	}
}

// TestTwoEffects runs the recorded two-effect capability: five frames,
// succeeded with a confirmed disposition, as the real host did
// (bootstrap, invoke.admit, two effect.request, result.publish).
func TestTwoEffects(t *testing.T) {
	f := newFixture(t)
	inv := f.invocation(t, "two_effects", map[string]any{"target": "doc-1"}, nil)
	l, _ := newLauncher(t)
	out, err := l.Invoke(testCtx(t), inv)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.State != launch.StateSucceeded || out.Result.EffectDisposition != launch.EffectConfirmed || out.Session.Frames != 5 {
		t.Fatalf("%+v, %d frames", out.Result, out.Session.Frames)
	}
	if !bytes.HasSuffix(out.Process.Stdout, []byte("\n")) || bytes.Count(out.Process.Stdout, []byte("\n")) != 1 {
		t.Fatalf("stdout %q", out.Process.Stdout)
	}
}

// TestInvokeEncoded launches a context encoded beforehand by a
// ContextEncoder: Invoke sends those bytes, with Context left empty, and
// the host bootstraps with their launch digest.
func TestInvokeEncoded(t *testing.T) {
	f := newFixture(t)
	inv := f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	e, err := launch.NewContextEncoder(f.binding)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := e.Encode(inv.Context)
	if err != nil {
		t.Fatal(err)
	}
	inv.Context, inv.Encoded = launch.LaunchContext{}, &enc
	l, _ := newLauncher(t)
	out, err := l.Invoke(testCtx(t), inv)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.State != launch.StateSucceeded || out.LaunchDigest != enc.LaunchDigest || out.Session.Frames != 3 {
		t.Fatalf("%+v, launch digest %s (encoded %s), %d frames", out.Result, out.LaunchDigest, enc.LaunchDigest, out.Session.Frames)
	}
}
