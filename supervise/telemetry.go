package supervise

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
)

// The attribute keys of the package's spans, metrics and log records
// (doc/design.md, “Telemetry”): one name per fact, wherever it appears.
// The value of a span or metric attribute is an identifier, a state or a
// count, never an argument, a result or an error's text, which can quote
// them; only log records carry reasons and errors.
const (
	keyOrganization = "zeo.organization.id"
	keyProject      = "zeo.project.id"
	keyOperation    = "zeo.operation.id"
	keyAttempt      = "zeo.attempt.id"
	keyGeneration   = "zeo.attempt.generation"
	keyCapability   = "zeo.capability.id"
	keyController   = "zeo.controller.id"
	keyMethod       = "zeo.ipc.method"
	keySequence     = "zeo.ipc.sequence"
	keyState        = "zeo.state"
	keyEffect       = "zeo.effect.id"
	keyEffectOp     = "zeo.effect.operation"
	keyConnection   = "zeo.effect.connection"
	keyAuthz        = "zeo.effect.authorization.id"
	keyEffectOut    = "zeo.effect.outcome"
	keyWrite        = "zeo.ledger.write"
	keyHostStart    = "zeo.host.start"
	keyFallback     = "zeo.host.fallback.reason"
	keyLeaseResult  = "zeo.lease.result"
	keyShared       = "zeo.invoke.shared"
	keyReconnected  = "zeo.invoke.reconnected"
	keyErrorType    = "error.type"

	// Keys of log records only.
	keyDistribution       = "zeo.provider.distribution"
	keyEnvironment        = "zeo.provider.environment_digest"
	keyProviderGeneration = "zeo.provider.generation"
	keyLeaseTTL           = "zeo.lease.ttl"
	keyLeaseExpires       = "zeo.lease.expires"
	keyCount              = "zeo.count"
	keyReason             = "reason"
	keyErr                = "err"
)

// scopeName is the instrumentation scope of the tracer and the meter.
const scopeName = "github.com/zeoruntime/runtimeipc/supervise"

// stateError is the zeo.state of an Invoke that returned no Outcome.
const stateError = "error"

// writeKind names a ledger write (zeo.ledger.write).
type writeKind int

const (
	writeCreateOperation writeKind = iota
	writeStartAttempt
	writeIssueBootstrap
	writeLaunchAttempt
	writeRedeemBootstrap
	writeAdmit
	writeBeginEffect
	writeConfirmEffect
	writeMarkNotConsumed
	writeMarkUnknown
	writeResolve
	writeAcceptResult
	writeCancel
	writeRecordAttempt
	writeAcquireLease
	writeRenewLease
	writeReleaseLease
	writeTakeOver
	nWrites
)

var writeNames = [nWrites]string{
	"create_operation", "start_attempt", "issue_bootstrap", "launch_attempt", "redeem_bootstrap", "admit",
	"begin_effect", "confirm_effect", "mark_not_consumed", "mark_unknown", "resolve", "accept_result",
	"cancel", "record_attempt", "acquire_lease", "renew_lease", "release_lease", "take_over",
}

// methods are the IPC methods the Handler answers, in the order of
// methodIndex.
var methods = [...]ipc.Method{ipc.MethodBootstrap, ipc.MethodAdmit, ipc.MethodEffect, ipc.MethodPublish}

func methodIndex(m ipc.Method) int {
	for i, x := range methods {
		if x == m {
			return i
		}
	}
	return -1
}

// telemetry is where the Supervisor and its Handlers report spans and
// metrics. A nil *telemetry reports nothing and costs a nil check: the
// Supervisor makes one only when Config names a provider, and never
// reads or sets OpenTelemetry's global providers.
type telemetry struct {
	tracer trace.Tracer // nil: no spans
	meter  bool         // false: no metrics

	invocations metric.Int64Counter
	invokeTime  metric.Float64Histogram
	effects     metric.Int64Counter
	budgetUsed  metric.Int64Counter
	writeTime   metric.Float64Histogram
	starts      metric.Int64Counter
	fallbacks   metric.Int64Counter
	renewals    metric.Int64Counter
	takeovers   metric.Int64Counter

	// What every call would otherwise allocate, made once: span names,
	// start options, attribute sets and the option slices passed to the
	// instruments (a slice passed on with ... is not copied).
	writeSets    [nWrites][]metric.RecordOption
	writeSpans   [nWrites]string
	methodSpans  [len(methods)]string
	methodStart  []trace.SpanStartOption
	startSets    [2][]metric.AddOption // cold, warm
	startAttrs   [2]attribute.KeyValue
	fallbackSets map[string][]metric.AddOption
	renewalSets  map[string][]metric.AddOption
}

// Metric names (doc/design.md, “Telemetry”).
const (
	metricInvocations = "zeo.runtime.invocations"
	metricInvokeTime  = "zeo.runtime.invocation.duration"
	metricEffects     = "zeo.runtime.effects"
	metricBudgetUsed  = "zeo.runtime.effect_budget.used"
	metricWriteTime   = "zeo.runtime.ledger.write.duration"
	metricStarts      = "zeo.runtime.host.starts"
	metricFallbacks   = "zeo.runtime.host.warm_fallbacks"
	metricRenewals    = "zeo.runtime.lease.renewals"
	metricTakeovers   = "zeo.runtime.takeovers"
)

// The reasons of a warm fallback (zeo.host.fallback.reason).
const (
	fallbackServer = "fork_server_failed"  // a fork server (warm or provider-warm) did not start
	fallbackLaunch = "warm_launch_refused" // the fork server could not start this host warm
)

// The results of a lease renewal (zeo.lease.result).
const (
	renewalOK     = "renewed"
	renewalFailed = "failed" // tried again at the next tick
	renewalLost   = "lost"   // the store says the lease expired: fail-stop
)

// Bucket boundaries, in seconds: an invocation spans a host's life, a
// ledger write a map update to a replicated fsync.
var (
	invokeBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	writeBuckets  = []float64{0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}
)

// newTelemetry returns the telemetry of tp and mp, or nil when both are
// nil.
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	t := &telemetry{}
	if tp != nil {
		t.tracer = tp.Tracer(scopeName)
	}
	for k := range nWrites {
		t.writeSpans[k] = "zeo.ledger." + writeNames[k]
		t.writeSets[k] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(keyWrite, writeNames[k])))}
	}
	for i, m := range methods {
		t.methodSpans[i] = "zeo.ipc." + string(m)
	}
	t.methodStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	add := func(kv attribute.KeyValue) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv))}
	}
	for i, v := range [2]string{"cold", "warm"} {
		t.startAttrs[i] = attribute.String(keyHostStart, v)
		t.startSets[i] = add(t.startAttrs[i])
	}
	t.fallbackSets = map[string][]metric.AddOption{}
	for _, v := range []string{fallbackServer, fallbackLaunch} {
		t.fallbackSets[v] = add(attribute.String(keyFallback, v))
	}
	t.renewalSets = map[string][]metric.AddOption{}
	for _, v := range []string{renewalOK, renewalFailed, renewalLost} {
		t.renewalSets[v] = add(attribute.String(keyLeaseResult, v))
	}
	if mp == nil {
		return t, nil
	}
	m := mp.Meter(scopeName)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	t.invocations = counter(metricInvocations, "{invocation}", "Invoke calls ended, by final state and capability")
	t.invokeTime = histogram(metricInvokeTime, "Duration of Invoke calls, by final state and capability", invokeBuckets)
	t.effects = counter(metricEffects, "{effect}", "effect.request decisions, by outcome and capability")
	t.budgetUsed = counter(metricBudgetUsed, "{effect}", "Effect budget debited: new logical effects authorized, by capability")
	t.writeTime = histogram(metricWriteTime, "Duration of ledger writes, by write", writeBuckets)
	t.starts = counter(metricStarts, "{host}", "Hosts started, warm (forked from a fork server) or cold")
	t.fallbacks = counter(metricFallbacks, "{fallback}", "Hosts of a warm Supervisor started cold, by reason")
	t.renewals = counter(metricRenewals, "{renewal}", "Controller lease renewals, by result")
	t.takeovers = counter(metricTakeovers, "{attempt}", "Attempts of gone controllers taken over by Recover")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.meter = true
	return t, nil
}

// span is a span in progress, or the zero value when spans are off.
type span struct {
	s trace.Span
	t *telemetry
}

func (s span) on() bool { return s.s != nil }

// end ends the span, with status Error and error.type when err is not
// nil. The error's text is never recorded: it can quote arguments.
func (s span) end(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		class := errorClass(err)
		s.s.SetAttributes(attribute.String(keyErrorType, class))
		s.s.SetStatus(codes.Error, class)
	}
	s.s.End()
}

// invokeCall is an Invoke in progress.
type invokeCall struct {
	t     *telemetry
	c     *Call
	span  span
	start time.Time
}

// invoke starts the span of an Invoke call (zeo.invoke), the root of its
// attempts.
func (t *telemetry) invoke(ctx context.Context, c *Call, controller string) (context.Context, invokeCall) {
	if t == nil {
		return ctx, invokeCall{}
	}
	ic := invokeCall{t: t, c: c, start: time.Now()}
	if t.tracer != nil {
		var s trace.Span
		ctx, s = t.tracer.Start(ctx, "zeo.invoke", trace.WithAttributes(
			attribute.String(keyOrganization, c.Scope.OrganizationID), attribute.String(keyProject, c.Scope.ProjectID),
			attribute.String(keyOperation, c.OperationID), attribute.String(keyCapability, c.CapabilityID),
			attribute.String(keyController, controller)))
		ic.span = span{s, t}
	}
	return ctx, ic
}

// end ends an Invoke: its span, and the invocation's count and duration
// by final state.
func (ic invokeCall) end(o *Outcome, err error) {
	if ic.t == nil {
		return
	}
	state := stateError
	if o != nil {
		state = string(o.State)
	}
	if ic.span.on() {
		attrs := []attribute.KeyValue{attribute.String(keyState, state)}
		if o != nil {
			if o.AttemptID != "" {
				attrs = append(attrs, attribute.String(keyAttempt, o.AttemptID), attribute.Int64(keyGeneration, o.Generation))
			}
			attrs = append(attrs, attribute.Bool(keyShared, o.Shared), attribute.Bool(keyReconnected, o.Reconnected))
		}
		ic.span.s.SetAttributes(attrs...)
		ic.span.end(err)
	}
	if ic.t.meter {
		set := metric.WithAttributeSet(attribute.NewSet(attribute.String(keyState, state), attribute.String(keyCapability, ic.c.CapabilityID)))
		ctx := context.Background()
		ic.t.invocations.Add(ctx, 1, set)
		ic.t.invokeTime.Record(ctx, time.Since(ic.start).Seconds(), set)
	}
}

// attempt starts the span of one attempt (zeo.attempt).
func (t *telemetry) attempt(ctx context.Context) (context.Context, span) {
	if t == nil || t.tracer == nil {
		return ctx, span{}
	}
	ctx, s := t.tracer.Start(ctx, "zeo.attempt")
	return ctx, span{s, t}
}

// endAttempt ends a's span with its ids and the state it reached.
func (s span) endAttempt(a *attempt, err error) {
	if !s.on() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	if a.fence.AttemptID != "" {
		attrs = append(attrs, attribute.String(keyAttempt, a.fence.AttemptID), attribute.Int64(keyGeneration, a.fence.Generation))
	}
	if a.o.State != "" {
		attrs = append(attrs, attribute.String(keyState, string(a.o.State)))
	}
	s.s.SetAttributes(attrs...)
	s.end(err)
}

// methodSpan is the span of one IPC request, with what its attributes
// are made of: they are set once, when it ends, in one call.
type methodSpan struct {
	span
	seq    int64
	effect *ipc.EffectRequest
}

// method starts the span of one IPC request the Handler answers
// (zeo.ipc.<method>), under the attempt's span.
func (t *telemetry) method(ctx context.Context, call ipc.Call, effect *ipc.EffectRequest) (context.Context, methodSpan) {
	if t == nil || t.tracer == nil {
		return ctx, methodSpan{}
	}
	i := methodIndex(call.Method)
	if i < 0 {
		return ctx, methodSpan{}
	}
	ctx, s := t.tracer.Start(ctx, t.methodSpans[i], t.methodStart...)
	return ctx, methodSpan{span{s, t}, call.Sequence, effect}
}

// endMethod ends a method's span with its sequence, effect and reply
// state.
func (s methodSpan) endMethod(st ipc.ReplyState, err error) {
	if !s.on() {
		return
	}
	attrs := make([]attribute.KeyValue, 1, 5)
	attrs[0] = attribute.Int64(keySequence, s.seq)
	if s.effect != nil {
		attrs = append(attrs, attribute.String(keyEffect, s.effect.LogicalEffectID),
			attribute.String(keyEffectOp, s.effect.Operation), attribute.String(keyConnection, s.effect.ConnectionRef))
	}
	if st != "" {
		attrs = append(attrs, attribute.String(keyState, string(st)))
	}
	s.s.SetAttributes(attrs...)
	s.end(err)
}

// dispatch starts the span of a Dispatcher call (zeo.dispatch).
func (t *telemetry) dispatch(ctx context.Context, d *Dispatch) (context.Context, span) {
	if t == nil || t.tracer == nil {
		return ctx, span{}
	}
	ctx, s := t.tracer.Start(ctx, "zeo.dispatch", trace.WithAttributes(
		attribute.String(keyEffect, d.LogicalEffectID), attribute.String(keyEffectOp, d.Request.Operation),
		attribute.String(keyConnection, d.Request.ConnectionRef), attribute.String(keyAuthz, d.AuthorizationID)))
	return ctx, span{s, t}
}

// write is a ledger write in progress.
type write struct {
	t     *telemetry
	k     writeKind
	span  span
	start time.Time
}

// write starts a ledger write: a span (zeo.ledger.<write>) when ctx
// carries one, so that background writes (lease renewals) start no
// traces of their own, and its duration for the histogram. The span has
// no attributes: its name names the write, and its parent the ids; an
// invocation makes ten of them, and a span without attributes is the
// cheapest the SDK records.
func (t *telemetry) write(ctx context.Context, k writeKind) (context.Context, write) {
	w := write{t: t, k: k, start: time.Now()}
	if t.tracer != nil && trace.SpanContextFromContext(ctx).IsValid() {
		var s trace.Span
		ctx, s = t.tracer.Start(ctx, t.writeSpans[k])
		w.span = span{s, t}
	}
	return ctx, w
}

func (w write) end(err error) {
	if w.t.meter {
		w.t.writeTime.Record(context.Background(), time.Since(w.start).Seconds(), w.t.writeSets[w.k]...)
	}
	w.span.end(err)
}

// effectDecided counts an effect.request's decision (ev) by its outcome
// (zeo.effect.outcome).
func (t *telemetry) effectDecided(capability string, ev *Event) {
	if t == nil || !t.meter {
		return
	}
	t.effects.Add(context.Background(), 1, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(keyEffectOut, effectOutcome(ev)), attribute.String(keyCapability, capability))))
}

// effectFailed counts an effect.request the Handler could not decide
// (the Session answered needs_reconciliation).
func (t *telemetry) effectFailed(capability string) {
	if t == nil || !t.meter {
		return
	}
	t.effects.Add(context.Background(), 1, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(keyEffectOut, stateError), attribute.String(keyCapability, capability))))
}

// debited counts one unit of effect budget debited: BeginEffect
// authorized a new logical effect.
func (t *telemetry) debited(capability string) {
	if t == nil || !t.meter {
		return
	}
	t.budgetUsed.Add(context.Background(), 1, metric.WithAttributeSet(attribute.NewSet(attribute.String(keyCapability, capability))))
}

// effectOutcome is the zeo.effect.outcome of an effect.request decision:
// the recorded outcome of a dispatched effect (confirmed, not_consumed,
// unknown), redelivered for one answered from the ledger, and otherwise
// the reply state (refused, waiting_approval, cancelled,
// needs_reconciliation).
func effectOutcome(ev *Event) string {
	switch {
	case ev.Redelivery:
		return "redelivered"
	case ev.Dispatched && ev.Effect != nil:
		return string(ev.Effect.State)
	}
	return string(ev.State)
}

// started counts a host started by a launch that returned lo, warm or
// cold, and a warm fallback when a fork server was asked (warm) but the
// host started cold; it also names the start on the attempt's span.
func (t *telemetry) started(ctx context.Context, lo *launch.Outcome, warm bool) {
	if t == nil || lo == nil || lo.Process.PID == 0 {
		return
	}
	i := 0
	if lo.Process.Warm {
		i = 1
	}
	if t.tracer != nil {
		trace.SpanFromContext(ctx).SetAttributes(t.startAttrs[i])
	}
	if !t.meter {
		return
	}
	t.starts.Add(context.Background(), 1, t.startSets[i]...)
	if warm && !lo.Process.Warm {
		t.fallbacks.Add(context.Background(), 1, t.fallbackSets[fallbackLaunch]...)
	}
}

// serverFailed counts a warm fallback: a fork server (warm, or a
// binding's provider-warm one) did not start, and its hosts start cold.
func (t *telemetry) serverFailed() {
	if t == nil || !t.meter {
		return
	}
	t.fallbacks.Add(context.Background(), 1, t.fallbackSets[fallbackServer]...)
}

// renewal counts a lease renewal by its result.
func (t *telemetry) renewal(result string) {
	if t == nil || !t.meter {
		return
	}
	t.renewals.Add(context.Background(), 1, t.renewalSets[result]...)
}

// tookOver counts an attempt taken over by Recover.
func (t *telemetry) tookOver() {
	if t == nil || !t.meter {
		return
	}
	t.takeovers.Add(context.Background(), 1)
}

// errorClasses name the errors a span's error.type reports, most
// specific first.
var errorClasses = []struct {
	err  error
	name string
}{
	{ErrRefused, "refused"}, {ErrWaitingApproval, "waiting_approval"}, {ErrFailed, "failed"},
	{ErrInvalidRequest, "invalid_request"}, {ErrUnavailable, "unavailable"}, {ErrCancelled, "cancelled"},
	{ErrTimedOut, "timed_out"}, {ErrNeedsReconciliation, "needs_reconciliation"}, {ErrProtocol, "protocol_error"},
	{ErrRunning, "running"}, {ErrPreflight, "preflight"}, {ErrOperationMismatch, "operation_mismatch"},
	{ErrLeaseLost, "lease_lost"}, {ErrClosed, "closed"}, {ErrNotConsumed, "not_consumed"},
	{ErrInvalidCall, "invalid_call"}, {ErrInvalidConfig, "invalid_config"},
	{ledger.ErrStaleFence, "ledger.stale_fence"}, {ledger.ErrOperationCancelled, "ledger.cancelled"},
	{ledger.ErrBootstrapRedeemed, "ledger.bootstrap_redeemed"}, {ledger.ErrChangedInput, "ledger.changed_input"},
	{ledger.ErrBudgetExhausted, "ledger.budget_exhausted"}, {ledger.ErrResultAlreadyAccepted, "ledger.result_already_accepted"},
	{ledger.ErrDeadlineExceeded, "ledger.deadline_exceeded"}, {ledger.ErrOutOfOrder, "ledger.out_of_order"},
	{ledger.ErrOutOfScope, "ledger.out_of_scope"}, {ledger.ErrNotFound, "ledger.not_found"},
	{ledger.ErrInvalidTransition, "ledger.invalid_transition"}, {cataloguestore.ErrReserved, "ledger.reserved"},
	{ledger.ErrInFlight, "ledger.in_flight"}, {ledger.ErrOwnerLive, "ledger.owner_live"},
	{ledger.ErrLeaseExpired, "ledger.lease_expired"}, {ledger.ErrLeaseHeld, "ledger.lease_held"},
	{ledger.ErrCorrupt, "ledger.corrupt"}, {ledger.ErrClosed, "ledger.closed"},
	{ledger.ErrNotApplied, "ledger.not_applied"}, {ledger.ErrOutcomeUnknown, "ledger.outcome_unknown"},
	{ledger.ErrInvalid, "ledger.invalid"},
	{context.DeadlineExceeded, "context.deadline_exceeded"}, {context.Canceled, "context.canceled"},
}

// errorClass is err's error.type: the name of the first sentinel it
// wraps, or "other".
func errorClass(err error) string {
	for _, c := range errorClasses {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other"
}
