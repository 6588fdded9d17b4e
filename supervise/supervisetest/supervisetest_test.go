package supervisetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

func TestMain(m *testing.M) { supervisetest.Main(m) }

func TestBindingValid(t *testing.T) {
	if err := manifest.ValidateBinding(supervisetest.Binding()); err != nil {
		t.Fatal(err)
	}
}

// TestBehaviours runs each documented behaviour once and checks the
// outcome the package documentation promises.
func TestBehaviours(t *testing.T) {
	scope := ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"}
	cases := []struct {
		name       string
		sc         supervisetest.Scenario
		capability string
		args       map[string]any
		timeout    time.Duration
		want       error
	}{
		{"echo", supervisetest.WellBehaved, supervisetest.Echo, map[string]any{"text": "hi"}, time.Minute, nil},
		{"fail", supervisetest.WellBehaved, supervisetest.Fail, map[string]any{}, time.Minute, supervise.ErrFailed},
		{"slow", supervisetest.WellBehaved, supervisetest.Slow, map[string]any{"millis": int64(50), "text": "hi"}, time.Minute, nil},
		{"crash", supervisetest.WellBehaved, supervisetest.Crash, map[string]any{}, time.Minute, supervise.ErrProtocol},
		{"exit-1", supervisetest.CrashExit, supervisetest.Echo, map[string]any{"text": "hi"}, time.Minute, supervise.ErrProtocol},
		{"garbage", supervisetest.Garbage, supervisetest.Echo, map[string]any{"text": "hi"}, time.Minute, supervise.ErrProtocol},
		{"hang", supervisetest.Hang, supervisetest.Echo, map[string]any{"text": "hi"}, 2 * time.Second, supervise.ErrTimedOut},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := supervise.New(supervisetest.SupervisorConfig(t, c.sc))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			o, err := s.Invoke(t.Context(), supervise.Call{Scope: scope, OperationID: "op-" + c.name,
				CapabilityID: c.capability, Arguments: c.args, Deadline: time.Now().Add(c.timeout)})
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Invoke = %s %q, %v; want %v", o.State, o.Reason, err, c.want)
			}
		})
	}
}
