package supervise_test

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// recorders are an in-memory span exporter and a manual metric reader,
// with the providers that feed them.
type recorders struct {
	spans   *tracetest.InMemoryExporter
	reader  *sdkmetric.ManualReader
	tracers *sdktrace.TracerProvider
	meters  *sdkmetric.MeterProvider
}

func newRecorders(t *testing.T) *recorders {
	r := &recorders{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	r.tracers = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	r.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		r.tracers.Shutdown(context.Background())
		r.meters.Shutdown(context.Background())
	})
	return r
}

// metrics returns every data point collected so far as "name{k=v,...}"
// → value: a counter's sum, a histogram's count (a duration is never
// compared).
func (r *recorders) metrics(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/zeoruntime/runtimeipc/supervise" {
			t.Errorf("metrics of scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+"{"+attrs(p.Attributes.ToSlice())+"}"] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if m.Unit != "s" || p.Count == 0 || p.Sum <= 0 {
						t.Errorf("%s: unit %q, count %d, sum %v", m.Name, m.Unit, p.Count, p.Sum)
					}
					out[m.Name+"{"+attrs(p.Attributes.ToSlice())+"}"] += int64(p.Count)
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func attrs(kv []attribute.KeyValue) string {
	s := make([]string, len(kv))
	for i, a := range kv {
		s[i] = string(a.Key) + "=" + a.Value.String()
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// tree renders the spans as an indented tree, one line per span: its
// name, its attributes and, when not unset, its status. Siblings are in
// start order, except that the attempt's own ledger writes come before
// its IPC methods: the launch is recorded while the host starts, beside
// the methods, and the methods' sequence numbers give their order.
func tree(spans tracetest.SpanStubs) string {
	kids := map[trace.SpanID][]tracetest.SpanStub{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if p := s.Parent.SpanID(); s.Parent.IsValid() && ids[p] {
			kids[p] = append(kids[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(ss []tracetest.SpanStub, parent string, depth int)
	walk = func(ss []tracetest.SpanStub, parent string, depth int) {
		group := func(s tracetest.SpanStub) int {
			if parent == "zeo.attempt" && strings.HasPrefix(s.Name, "zeo.ledger.") {
				return 0
			}
			return 1
		}
		slices.SortStableFunc(ss, func(x, y tracetest.SpanStub) int {
			if g := group(x) - group(y); g != 0 {
				return g
			}
			return x.StartTime.Compare(y.StartTime)
		})
		for _, s := range ss {
			fmt.Fprintf(&b, "%s%s %s", strings.Repeat("  ", depth), s.Name, attrs(s.Attributes))
			if s.Status.Code != 0 {
				fmt.Fprintf(&b, " status=%s:%s", s.Status.Code, s.Status.Description)
			}
			b.WriteString("\n")
			walk(kids[s.SpanContext.SpanID()], s.Name, depth+1)
		}
	}
	walk(roots, "", 0)
	return b.String()
}

// TestTelemetry runs an operation of the demo (two effects, dispatched
// and confirmed) on the simulated host and the memory ledger, then asks
// for it again (its result comes from the ledger): the span tree is
// operation → attempt → IPC methods → ledger writes and dispatches, every
// attribute an id and no argument value anywhere, and each metric counts
// what happened.
func TestTelemetry(t *testing.T) {
	t.Parallel()
	r := newRecorders(t)
	cfg := supervisetest.SupervisorConfig(t, supervisetest.WellBehaved)
	cfg.Dispatcher = newDispatcher()
	cfg.TracerProvider, cfg.MeterProvider = r.tracers, r.meters
	cfg.LeaseTTL = time.Hour // no renewal during the test
	s := newSupervisor(t, cfg)
	ctx := testCtx(t)

	secret := "argument-value-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c := supervise.Call{Scope: scope, OperationID: "op-telemetry", CapabilityID: supervisetest.TwoEffects,
		Arguments: map[string]any{"target": secret}, EffectBudget: 2, Deadline: time.Now().Add(time.Minute)}
	o, err := s.Invoke(ctx, c)
	wantState(t, o, err, launch.StateSucceeded, nil)
	again, err := s.Invoke(ctx, c)
	wantState(t, again, err, launch.StateSucceeded, nil)
	if !again.Reconnected {
		t.Fatalf("the second Invoke launched: %+v", again)
	}
	if len(o.Effects) != 2 {
		t.Fatalf("effects %+v", o.Effects)
	}

	capID := supervisetest.TwoEffects
	// line is one span of the tree: its depth, name and attributes.
	line := func(depth int, name string, kv ...string) string {
		slices.Sort(kv)
		return strings.Repeat("  ", depth) + name + " " + strings.Join(kv, ",") + "\n"
	}
	ids := []string{"zeo.capability.id=" + capID, "zeo.controller.id=" + s.ControllerID(), "zeo.operation.id=op-telemetry",
		"zeo.organization.id=" + scope.OrganizationID, "zeo.project.id=" + scope.ProjectID, "zeo.invoke.shared=false", "zeo.state=succeeded"}
	attempt := []string{"zeo.attempt.generation=1", "zeo.attempt.id=" + o.AttemptID}
	write := func(depth int, w string) string { return line(depth, "zeo.ledger."+w) }
	effect := func(seq int, id, op string) string {
		var authz string
		for _, e := range o.Effects {
			if e.LogicalEffectID == id {
				authz = e.AuthorizationID
			}
		}
		effect := []string{"zeo.effect.connection=connection-a", "zeo.effect.id=" + id, "zeo.effect.operation=" + op}
		return line(2, "zeo.ipc.effect.request", append(slices.Clone(effect), fmt.Sprint("zeo.ipc.sequence=", seq), "zeo.state=allowed")...) +
			write(3, "begin_effect") +
			line(3, "zeo.dispatch", append(effect, "zeo.effect.authorization.id="+authz)...) +
			write(3, "confirm_effect")
	}
	want := line(0, "zeo.invoke", append(slices.Concat(ids, attempt), "zeo.invoke.reconnected=false")...) +
		line(1, "zeo.attempt", append(slices.Clone(attempt), "zeo.host.start=cold", "zeo.state=succeeded")...) +
		write(2, "acquire_lease") + write(2, "launch_attempt") + write(2, "record_attempt") +
		line(2, "zeo.ipc.bootstrap", "zeo.ipc.sequence=1", "zeo.state=allowed") +
		write(3, "redeem_bootstrap") +
		line(2, "zeo.ipc.invoke.admit", "zeo.ipc.sequence=2", "zeo.state=allowed") +
		write(3, "admit") +
		effect(3, "effect-1", "prepare") +
		effect(4, "effect-2", "commit") +
		line(2, "zeo.ipc.result.publish", "zeo.ipc.sequence=5", "zeo.state=allowed") +
		write(3, "accept_result") +
		// The accepted result, from the ledger: no attempt.
		line(0, "zeo.invoke", append(slices.Clone(ids), "zeo.invoke.reconnected=true")...)
	spans := r.spans.GetSpans()
	got := tree(spans)
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("span tree (-want +got):\n%s\ngot:\n%s", diff, got)
	}
	// Every span lies within its parent's time, and the IPC methods, and
	// the ledger writes and dispatches of each, one after the other: the
	// spans that end while the host waits for a reply are recorded after
	// it is written, stamped when their work ended.
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	serial := map[trace.SpanID][]tracetest.SpanStub{} // by parent: the methods under the attempt, what each method did
	for _, sp := range spans {
		p, ok := byID[sp.Parent.SpanID()]
		if !ok {
			continue
		}
		if sp.StartTime.Before(p.StartTime) || sp.EndTime.After(p.EndTime) {
			t.Errorf("span %s (%v to %v) is not within its parent %s (%v to %v)", sp.Name, sp.StartTime, sp.EndTime, p.Name, p.StartTime, p.EndTime)
		}
		if strings.HasPrefix(sp.Name, "zeo.ipc.") || strings.HasPrefix(p.Name, "zeo.ipc.") {
			serial[p.SpanContext.SpanID()] = append(serial[p.SpanContext.SpanID()], sp)
		}
	}
	for _, ss := range serial {
		slices.SortFunc(ss, func(x, y tracetest.SpanStub) int { return x.StartTime.Compare(y.StartTime) })
		for i := 1; i < len(ss); i++ {
			if ss[i].StartTime.Before(ss[i-1].EndTime) {
				t.Errorf("span %s starts before %s ends", ss[i].Name, ss[i-1].Name)
			}
		}
	}
	invokes := map[trace.TraceID]bool{}
	for _, sp := range spans {
		invokes[sp.SpanContext.TraceID()] = true
		if sp.SpanKind != trace.SpanKindInternal && !(strings.HasPrefix(sp.Name, "zeo.ipc.") && sp.SpanKind == trace.SpanKindServer) {
			t.Errorf("span %s has kind %s", sp.Name, sp.SpanKind)
		}
		if len(sp.Events) > 0 || len(sp.Links) > 0 {
			t.Errorf("span %s has events %v, links %v", sp.Name, sp.Events, sp.Links)
		}
		all := sp.Name + " " + sp.Status.Description + " " + attrs(sp.Attributes)
		if strings.Contains(all, secret) || strings.Contains(all, "doc-") {
			t.Errorf("span %s carries an argument value: %s", sp.Name, all)
		}
	}
	if len(invokes) != 2 {
		t.Errorf("%d traces, want one per Invoke", len(invokes))
	}

	cs := "zeo.capability.id=" + capID
	wantMetrics := map[string]int64{
		"zeo.runtime.invocations{" + cs + ",zeo.state=succeeded}":              2,
		"zeo.runtime.invocation.duration{" + cs + ",zeo.state=succeeded}":      2,
		"zeo.runtime.effects{" + cs + ",zeo.effect.outcome=confirmed}":         2,
		"zeo.runtime.effect_budget.used{" + cs + "}":                           2,
		"zeo.runtime.host.starts{zeo.host.start=cold}":                         1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=acquire_lease}":    1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=launch_attempt}":   1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=redeem_bootstrap}": 1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=admit}":            1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=begin_effect}":     2,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=confirm_effect}":   2,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=accept_result}":    1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=record_attempt}":   1,
	}
	if diff := cmp.Diff(wantMetrics, r.metrics(t)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// TestTelemetryOutcomes: a refused and an uncertain effect, a refused
// admission, an invalid call's preflight, warm fallbacks, lease renewals
// and a takeover each count under their own attributes, and a span that
// ends in error carries the error's class, never its text.
func TestTelemetryOutcomes(t *testing.T) {
	t.Parallel()
	r := newRecorders(t)
	base := memory.New()
	t.Cleanup(func() { base.Close(context.Background()) })
	cfg := supervisetest.SupervisorConfig(t, supervisetest.WellBehaved)
	d := newDispatcher()
	auth := newAuthority()
	cfg.Ledger, cfg.Dispatcher, cfg.Authority = base, d, auth
	cfg.TracerProvider, cfg.MeterProvider = r.tracers, r.meters
	// A fork server cannot start from the simulated host: every
	// environment falls back to cold launches.
	cfg.Warm = &launch.ZygoteConfig{}
	cfg.LeaseTTL = 300 * time.Millisecond
	s := newSupervisor(t, cfg)
	ctx := testCtx(t)
	capID := supervisetest.TwoEffects
	run := func(op string, st launch.State, sentinel error) {
		t.Helper()
		o, err := s.Invoke(ctx, supervise.Call{Scope: scope, OperationID: op, CapabilityID: capID,
			Arguments: map[string]any{"target": "doc-" + op}, EffectBudget: 2, Deadline: time.Now().Add(time.Minute)})
		wantState(t, o, err, st, sentinel)
	}
	d.set("effect-1", "uncertain")
	run("op-uncertain", launch.StateNeedsReconciliation, supervise.ErrNeedsReconciliation)
	d.set("effect-1", "not-consumed")
	run("op-not-consumed", launch.StateRefused, supervise.ErrRefused)
	d.set("effect-1", "")
	auth.effect["effect-2"] = port.Refuse
	run("op-refused", launch.StateRefused, supervise.ErrRefused)
	auth.admit = port.Hold
	run("op-held", launch.StateWaitingApproval, supervise.ErrWaitingApproval)
	auth.admit = ""

	// A controller that is gone left an attempt launched: Recover takes
	// it over.
	gone := "ctl-gone"
	if _, err := base.AcquireLease(ctx, gone, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	digest := canon.Sum([]byte("{}"))
	if _, err := base.LaunchAttempt(ctx, ledger.AttemptLaunch{
		Operation: ledger.OperationSpec{Scope: scope, OperationID: "op-orphan", CapabilityID: capID, RequestDigest: digest,
			ManifestDigest: digest, EffectBudget: 1, Deadline: time.Now().Add(time.Hour)},
		AttemptID: "attempt-orphan", Generation: 1, BootstrapID: "bootstrap-orphan", LaunchDigest: digest, ControllerID: gone,
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !leaseOf(t, base, gone).Live })
	rec, err := s.Recover(ctx)
	if err != nil || len(rec.Fenced) != 1 {
		t.Fatalf("Recover: %+v, %v", rec, err)
	}
	// Renewals every 100 ms: wait for one.
	renewed := "zeo.runtime.lease.renewals{zeo.lease.result=renewed}"
	waitFor(t, func() bool { return r.metrics(t)[renewed] > 0 })

	got := r.metrics(t)
	cs := "zeo.capability.id=" + capID
	for k, want := range map[string]int64{
		"zeo.runtime.invocations{" + cs + ",zeo.state=needs_reconciliation}":           1,
		"zeo.runtime.invocations{" + cs + ",zeo.state=refused}":                        2,
		"zeo.runtime.invocations{" + cs + ",zeo.state=waiting_approval}":               1,
		"zeo.runtime.effects{" + cs + ",zeo.effect.outcome=unknown}":                   1,
		"zeo.runtime.effects{" + cs + ",zeo.effect.outcome=not_consumed}":              1,
		"zeo.runtime.effects{" + cs + ",zeo.effect.outcome=confirmed}":                 1,
		"zeo.runtime.effects{" + cs + ",zeo.effect.outcome=refused}":                   1,
		"zeo.runtime.effect_budget.used{" + cs + "}":                                   3,
		"zeo.runtime.host.starts{zeo.host.start=cold}":                                 3,
		"zeo.runtime.host.warm_fallbacks{zeo.host.fallback.reason=fork_server_failed}": 1,
		"zeo.runtime.takeovers{}":                                                      1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=mark_unknown}":             1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=mark_not_consumed}":        1,
		"zeo.runtime.ledger.write.duration{zeo.ledger.write=take_over}":                1,
	} {
		if got[k] != want {
			t.Errorf("%s = %d, want %d", k, got[k], want)
		}
	}
	if got[renewed] < 1 || got["zeo.runtime.ledger.write.duration{zeo.ledger.write=renew_lease}"] < got[renewed] {
		t.Errorf("renewals: %v", got)
	}

	// Errors: the class, never the text; no background write starts a
	// trace.
	var classes []string
	for _, sp := range r.spans.GetSpans() {
		if !sp.Parent.IsValid() && sp.Name != "zeo.invoke" {
			t.Errorf("root span %s", sp.Name)
		}
		if sp.Status.Code == codes.Unset {
			continue
		}
		class := ""
		for _, a := range sp.Attributes {
			if a.Key == "error.type" {
				class = a.Value.AsString()
			}
		}
		if sp.Status.Code != codes.Error || sp.Status.Description != class {
			t.Errorf("span %s: status %s %q, error.type %q", sp.Name, sp.Status.Code, sp.Status.Description, class)
		}
		if all := sp.Status.Description + " " + attrs(sp.Attributes); strings.Contains(all, "doc-") || strings.Contains(all, "connection reset") {
			t.Errorf("span %s carries an error's text: %s", sp.Name, all)
		}
		classes = append(classes, sp.Name+" "+class)
	}
	slices.Sort(classes)
	wantClasses := []string{
		"zeo.attempt needs_reconciliation", "zeo.attempt refused", "zeo.attempt refused", "zeo.attempt waiting_approval",
		"zeo.dispatch not_consumed", "zeo.dispatch other",
		"zeo.invoke needs_reconciliation", "zeo.invoke refused", "zeo.invoke refused", "zeo.invoke waiting_approval",
	}
	if diff := cmp.Diff(wantClasses, classes); diff != "" {
		t.Errorf("spans ended in error (-want +got):\n%s", diff)
	}
}

// TestTelemetryOff: with no providers configured, a Supervisor reports
// nothing, and neither reads nor sets OpenTelemetry's global providers:
// global providers that record are left empty and in place.
func TestTelemetryOff(t *testing.T) {
	// Not parallel: it sets the process's global providers, which no
	// other test reads.
	r := newRecorders(t)
	otel.SetTracerProvider(r.tracers)
	otel.SetMeterProvider(r.meters)
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
	})
	cfg := supervisetest.SupervisorConfig(t, supervisetest.WellBehaved)
	cfg.Dispatcher = newDispatcher()
	s := newSupervisor(t, cfg)
	ctx, root := r.tracers.Tracer("test").Start(testCtx(t), "caller")
	o, err := s.Invoke(ctx, supervise.Call{Scope: scope, OperationID: "op-off", CapabilityID: supervisetest.TwoEffects,
		Arguments: map[string]any{"target": "doc-1"}, EffectBudget: 2, Deadline: time.Now().Add(time.Minute)})
	wantState(t, o, err, launch.StateSucceeded, nil)
	root.End()
	closeSupervisor(t, s)
	if spans := r.spans.GetSpans(); len(spans) != 1 || spans[0].Name != "caller" {
		t.Errorf("spans recorded without a provider: %s", tree(spans))
	}
	if m := r.metrics(t); len(m) != 0 {
		t.Errorf("metrics recorded without a provider: %v", m)
	}
	if otel.GetTracerProvider() != trace.TracerProvider(r.tracers) || otel.GetMeterProvider() != r.meters {
		t.Error("the global providers were replaced")
	}
}

// TestTelemetryImports: the library's packages use the OpenTelemetry API
// only (trace, metric, attribute, codes), never the global package, the
// SDK or an exporter; those are for zeoctl, the examples and the tests.
func TestTelemetryImports(t *testing.T) {
	t.Parallel()
	allowed := []string{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/metric",
		"go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes"}
	n := 0
	err := filepath.WalkDir("..", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case "cmd", "examples", "bench", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !strings.HasPrefix(p, "go.opentelemetry.io/") {
				continue
			}
			n++
			if !slices.Contains(allowed, p) {
				t.Errorf("%s imports %s", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("no library file imports the OpenTelemetry API")
	}
}

// TestHandlerTelemetry: a Handler used alone, with its own providers in
// handler.Config, reports its methods with their ledger writes and
// dispatches under them, and the effect metrics.
func TestHandlerTelemetry(t *testing.T) {
	t.Parallel()
	r := newRecorders(t)
	l := memory.New()
	t.Cleanup(func() { l.Close(context.Background()) })
	w := startLower(t, l, newLauncher(t, 0), "op-handler", "attempt-1", supervisetest.TwoEffects, map[string]any{"target": "doc-1"}, 2)
	w.cfg.Dispatcher = newDispatcher()
	w.cfg.TracerProvider, w.cfg.MeterProvider = r.tracers, r.meters
	out, _ := w.run(t)
	if out.Result.State != launch.StateSucceeded {
		t.Fatalf("state %s", out.Result.State)
	}
	names := func(depth int, ss ...string) string {
		var b strings.Builder
		for _, s := range ss {
			b.WriteString(strings.Repeat("  ", depth) + s + "\n")
		}
		return b.String()
	}
	effect := names(0, "zeo.ipc.effect.request") + names(1, "zeo.ledger.begin_effect", "zeo.dispatch", "zeo.ledger.confirm_effect")
	want := names(0, "zeo.ipc.bootstrap") + names(1, "zeo.ledger.redeem_bootstrap") +
		names(0, "zeo.ipc.invoke.admit") + names(1, "zeo.ledger.admit") + effect + effect +
		names(0, "zeo.ipc.result.publish") + names(1, "zeo.ledger.accept_result")
	var got strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(tree(r.spans.GetSpans()), "\n"), "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		got.WriteString(line[:indent] + strings.Fields(line)[0] + "\n")
	}
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	cs := "zeo.capability.id=" + supervisetest.TwoEffects
	m := r.metrics(t)
	if m["zeo.runtime.effects{"+cs+",zeo.effect.outcome=confirmed}"] != 2 || m["zeo.runtime.effect_budget.used{"+cs+"}"] != 2 ||
		m["zeo.runtime.ledger.write.duration{zeo.ledger.write=confirm_effect}"] != 2 {
		t.Errorf("metrics %v", m)
	}
}
