package capabilityruntime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// stubBackend records its starts and has no Close method; closableBackend
// adds one.
type stubBackend struct {
	name     string
	startErr error
	mu       sync.Mutex
	started  []capabilityruntime.BackendSpec
}

func (b *stubBackend) BackendName() string { return b.name }

func (b *stubBackend) Start(_ context.Context, spec capabilityruntime.BackendSpec) (capabilityruntime.BackendInstance, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.startErr != nil {
		return nil, b.startErr
	}
	b.started = append(b.started, spec)
	return &stubInstance{n: len(b.started)}, nil
}

type stubInstance struct{ n int }

func (*stubInstance) Execute(context.Context, *capabilityruntime.Request) (*capabilityruntime.Response, error) {
	return &capabilityruntime.Response{}, nil
}
func (*stubInstance) Health(context.Context) error { return nil }
func (*stubInstance) Close(context.Context) error  { return nil }

type closableBackend struct {
	stubBackend
	closeErr error
	closed   int
}

func (b *closableBackend) Close(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed++
	return b.closeErr
}

func TestRegistryDispatch(t *testing.T) {
	t.Parallel()
	var r capabilityruntime.Registry // the zero value is ready
	process := &stubBackend{name: "process"}
	wasm := &stubBackend{name: "wasm"}
	for _, reg := range []struct {
		kind string
		b    capabilityruntime.Backend
	}{{"wasm", wasm}, {"process", process}} {
		if err := r.Register(reg.kind, reg.b); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"process", "wasm"}, r.RegisteredKinds()); diff != "" {
		t.Fatalf("RegisteredKinds (-want +got):\n%s", diff)
	}
	spec := capabilityruntime.BackendSpec{Type: "acme:echo", Version: "1.0.0"}
	a, err := r.Start(t.Context(), "process", spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Start(t.Context(), "process", spec)
	if err != nil {
		t.Fatal(err)
	}
	// Two launches stay two instances: the registry does not collapse them.
	if a == b || len(process.started) != 2 || len(wasm.started) != 0 {
		t.Fatalf("dispatch: instances %p %p, process started %d, wasm started %d", a, b, len(process.started), len(wasm.started))
	}

	_, err = r.Start(t.Context(), "container", spec)
	if !errors.Is(err, capabilityruntime.ErrUnsupportedKind) || !strings.Contains(err.Error(), `"container" (registered: process, wasm)`) {
		t.Fatalf("unknown kind: %v", err)
	}
	var empty capabilityruntime.Registry
	if _, err := empty.Start(t.Context(), "process", spec); !errors.Is(err, capabilityruntime.ErrUnsupportedKind) || !strings.Contains(err.Error(), "registered: none") {
		t.Fatalf("empty registry: %v", err)
	}

	boom := errors.New("boom")
	process.startErr = boom
	_, err = r.Start(t.Context(), "process", spec)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "acme:echo@1.0.0") {
		t.Fatalf("backend failure not wrapped with the runtime's name: %v", err)
	}
}

func TestRegistryRegisterRefusals(t *testing.T) {
	t.Parallel()
	var r capabilityruntime.Registry
	if err := r.Register("", &stubBackend{}); !errors.Is(err, capabilityruntime.ErrRegistration) {
		t.Errorf("empty kind: %v", err)
	}
	if err := r.Register("process", nil); !errors.Is(err, capabilityruntime.ErrRegistration) {
		t.Errorf("nil backend: %v", err)
	}
	if err := r.Register("process", &stubBackend{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("process", &stubBackend{}); !errors.Is(err, capabilityruntime.ErrRegistration) {
		t.Errorf("duplicate kind: %v", err)
	}
	if diff := cmp.Diff([]string{"process"}, r.RegisteredKinds()); diff != "" {
		t.Errorf("refused registrations changed the registry (-want +got):\n%s", diff)
	}
}

func TestCloseBackends(t *testing.T) {
	t.Parallel()
	var r capabilityruntime.Registry
	if err := r.CloseBackends(t.Context()); err != nil {
		t.Fatalf("empty registry: %v", err)
	}
	errA, errC := errors.New("a failed"), errors.New("c failed")
	a := &closableBackend{closeErr: errA}
	b := &closableBackend{}
	c := &closableBackend{closeErr: errC}
	plain := &stubBackend{} // no Close: skipped
	for kind, be := range map[string]capabilityruntime.Backend{"c": c, "a": a, "b": b, "plain": plain} {
		if err := r.Register(kind, be); err != nil {
			t.Fatal(err)
		}
	}
	err := r.CloseBackends(t.Context())
	if !errors.Is(err, errA) || !errors.Is(err, errC) {
		t.Fatalf("CloseBackends = %v; want both failures", err)
	}
	if got, want := err.Error(), "a: a failed\nc: c failed"; got != want {
		t.Fatalf("CloseBackends error = %q, want %q (sorted, named)", got, want)
	}
	if a.closed != 1 || b.closed != 1 || c.closed != 1 {
		t.Fatalf("closed counts a=%d b=%d c=%d; want every closable backend closed once", a.closed, b.closed, c.closed)
	}
}

func TestRuntimeError(t *testing.T) {
	t.Parallel()
	err := error(&capabilityruntime.RuntimeError{Type: "acme:echo", Version: "1.0.0", Message: "no such issue"})
	if !errors.Is(err, capabilityruntime.ErrRuntimeFailure) || err.Error() != "capability runtime acme:echo@1.0.0: no such issue" {
		t.Fatalf("RuntimeError = %q", err)
	}
}
