package telemetry

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// The attribute keys of package supervise's spans, metrics and log records
// (doc/design.md, “Telemetry”): one name per fact, wherever it appears.
// The value of a span or metric attribute is an identifier, a state or a
// count, never an argument, a result or an error's text, which can quote
// them; only log records carry reasons and errors.
const (
	KeyOrganization = "zeo.organization.id"
	KeyProject      = "zeo.project.id"
	KeyOperation    = "zeo.operation.id"
	KeyAttempt      = "zeo.attempt.id"
	KeyGeneration   = "zeo.attempt.generation"
	KeyCapability   = "zeo.capability.id"
	KeyController   = "zeo.controller.id"
	KeyMethod       = "zeo.ipc.method"
	KeySequence     = "zeo.ipc.sequence"
	KeyState        = "zeo.state"
	KeyEffect       = "zeo.effect.id"
	KeyEffectOp     = "zeo.effect.operation"
	KeyConnection   = "zeo.effect.connection"
	KeyAuthz        = "zeo.effect.authorization.id"
	KeyEffectOut    = "zeo.effect.outcome"
	KeyWrite        = "zeo.ledger.write"
	KeyHostStart    = "zeo.host.start"
	KeyFallback     = "zeo.host.fallback.reason"
	KeyLeaseResult  = "zeo.lease.result"
	KeyShared       = "zeo.invoke.shared"
	KeyReconnected  = "zeo.invoke.reconnected"
	KeyErrorType    = "error.type"

	// Keys of log records only.
	KeyDistribution       = "zeo.provider.distribution"
	KeyEnvironment        = "zeo.provider.environment_digest"
	KeyProviderGeneration = "zeo.provider.generation"
	KeyLeaseTTL           = "zeo.lease.ttl"
	KeyLeaseExpires       = "zeo.lease.expires"
	KeyCount              = "zeo.count"
	KeyReason             = "reason"
	KeyErr                = "err"
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
	"create_operation", "start_attempt", "launch_attempt", "redeem_bootstrap", "admit",
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

// T is where a Supervisor and its Handlers report spans and metrics. A
// nil *T reports nothing and costs a nil check: one is made only when a
// config names a provider, and OpenTelemetry's global providers are never
// read or set.
type T struct {
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
	classes      []Class // error.type names, most specific first

	// capabilitySets holds, by capability and state or outcome, the
	// options of the measurements that carry a capability id, made on
	// first use: an attribute set is sorted and hashed when it is made,
	// and an invocation would otherwise make five. The keys are bounded
	// as the metrics' own series are: capabilities by the admitted
	// inventories, states and outcomes by their lists.
	capabilitySets sync.Map // capabilityKey → *capabilitySet
}

// capabilityKey names a capabilitySet: the key and value besides the
// capability's (none when key is empty).
type capabilityKey struct{ key, value, capability string }

// capabilitySet is one attribute set, as the options of a counter and
// of a histogram.
type capabilitySet struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// capabilitySet returns the options of the attribute set {capability,
// key: value} (only the capability when key is empty).
func (t *T) capabilitySet(key, value, capability string) *capabilitySet {
	k := capabilityKey{key, value, capability}
	if v, ok := t.capabilitySets.Load(k); ok {
		return v.(*capabilitySet)
	}
	kv := []attribute.KeyValue{attribute.String(KeyCapability, capability)}
	if key != "" {
		kv = append(kv, attribute.String(key, value))
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	v, _ := t.capabilitySets.LoadOrStore(k, &capabilitySet{add: []metric.AddOption{o}, record: []metric.RecordOption{o}})
	return v.(*capabilitySet)
}

// Class names the errors that wrap Err in a span's error.type.
type Class struct {
	Err  error
	Name string
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
	RenewalOK     = "renewed"
	RenewalFailed = "failed" // tried again at the next tick
	RenewalLost   = "lost"   // the store says the lease expired: fail-stop
)

// Bucket boundaries, in seconds: an invocation spans a host's life, a
// ledger write a map update to a replicated fsync.
var (
	invokeBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	writeBuckets  = []float64{0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}
)

// New returns the telemetry of tp and mp, or nil when both are nil.
// classes name the errors of the caller's package in a span's error.type,
// most specific first; those of the ledger, the ports and the context
// follow them.
func New(tp trace.TracerProvider, mp metric.MeterProvider, classes []Class) (*T, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	t := &T{classes: append(slices.Clip(classes), baseClasses...)}
	if tp != nil {
		t.tracer = tp.Tracer(scopeName)
	}
	for k := range nWrites {
		t.writeSpans[k] = "zeo.ledger." + writeNames[k]
		t.writeSets[k] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(KeyWrite, writeNames[k])))}
	}
	for i, m := range methods {
		t.methodSpans[i] = "zeo.ipc." + string(m)
	}
	t.methodStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	add := func(kv attribute.KeyValue) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv))}
	}
	for i, v := range [2]string{"cold", "warm"} {
		t.startAttrs[i] = attribute.String(KeyHostStart, v)
		t.startSets[i] = add(t.startAttrs[i])
	}
	t.fallbackSets = map[string][]metric.AddOption{}
	for _, v := range []string{fallbackServer, fallbackLaunch} {
		t.fallbackSets[v] = add(attribute.String(KeyFallback, v))
	}
	t.renewalSets = map[string][]metric.AddOption{}
	for _, v := range []string{RenewalOK, RenewalFailed, RenewalLost} {
		t.renewalSets[v] = add(attribute.String(KeyLeaseResult, v))
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

// Span is a span in progress, or the zero value when spans are off.
type Span struct {
	s trace.Span
	t *T
}

func (s Span) on() bool { return s.s != nil }

// End ends the span, with status Error and error.type when err is not
// nil. The error's text is never recorded: it can quote arguments.
func (s Span) End(err error) {
	if s.s == nil {
		return
	}
	s.endAt(time.Now(), err)
}

// endAt is End with the span's end time at.
func (s Span) endAt(at time.Time, err error) {
	if err != nil {
		class := s.t.errorClass(err)
		s.s.SetAttributes(attribute.String(KeyErrorType, class))
		s.s.SetStatus(codes.Error, class)
	}
	s.s.End(trace.WithTimestamp(at))
}

// endAfterReply calls end with the time of this call, once the reply to
// the IPC request ctx belongs to has been written (ipc.AfterReply), or at
// once when ctx belongs to no exchange under way.
//
// Why: the spans of an IPC method, and of the ledger writes and dispatches
// made while deciding it, end while the host waits for the reply. Ending
// a span is the SDK's work (a snapshot, and with a synchronous exporter
// the export itself, on the calling goroutine): done before the reply is
// written, it delays the host; done right after, it overlaps the host's
// own work on the reply. Nothing of the span changes: it started at its
// own time under its own parent, and its end time is taken when its work
// ended, not when end runs. Every end of an exchange runs before the Session
// reads the next request, so before Serve, and the Invoke, return.
func endAfterReply(ctx context.Context, end func(at time.Time)) {
	at := time.Now()
	if !ipc.AfterReply(ctx, func() { end(at) }) {
		end(at)
	}
}

// EndAfterReply ends the span as End does, stamped now, once the reply
// to the IPC request ctx belongs to has been written (see endAfterReply), or
// at once when ctx belongs to none.
func (s Span) EndAfterReply(ctx context.Context, err error) {
	if s.s == nil {
		return
	}
	endAfterReply(ctx, func(at time.Time) { s.endAt(at, err) })
}

// InvokeCall is an Invoke in progress.
type InvokeCall struct {
	t          *T
	capability string
	span       Span
	start      time.Time
}

// Ended is what an Invoke established, for its span and metrics.
type Ended struct {
	State               string
	AttemptID           string
	Generation          int64
	Shared, Reconnected bool
}

// Invoke starts the span of an Invoke call (zeo.invoke), the root of its
// attempts.
func (t *T) Invoke(ctx context.Context, scope ledger.Scope, operationID, capabilityID, controller string) (context.Context, InvokeCall) {
	if t == nil {
		return ctx, InvokeCall{}
	}
	ic := InvokeCall{t: t, capability: capabilityID, start: time.Now()}
	if t.tracer != nil {
		var s trace.Span
		ctx, s = t.tracer.Start(ctx, "zeo.invoke", trace.WithAttributes(
			attribute.String(KeyOrganization, scope.OrganizationID), attribute.String(KeyProject, scope.ProjectID),
			attribute.String(KeyOperation, operationID), attribute.String(KeyCapability, capabilityID),
			attribute.String(KeyController, controller)))
		ic.span = Span{s, t}
	}
	return ctx, ic
}

// End ends an Invoke: its span, and the invocation's count and duration
// by final state. A nil o means Invoke returned no Outcome.
func (ic InvokeCall) End(o *Ended, err error) {
	if ic.t == nil {
		return
	}
	state := stateError
	if o != nil {
		state = o.State
	}
	if ic.span.on() {
		attrs := []attribute.KeyValue{attribute.String(KeyState, state)}
		if o != nil {
			if o.AttemptID != "" {
				attrs = append(attrs, attribute.String(KeyAttempt, o.AttemptID), attribute.Int64(KeyGeneration, o.Generation))
			}
			attrs = append(attrs, attribute.Bool(KeyShared, o.Shared), attribute.Bool(KeyReconnected, o.Reconnected))
		}
		ic.span.s.SetAttributes(attrs...)
		ic.span.End(err)
	}
	if ic.t.meter {
		set := ic.t.capabilitySet(KeyState, state, ic.capability)
		ctx := context.Background()
		ic.t.invocations.Add(ctx, 1, set.add...)
		ic.t.invokeTime.Record(ctx, time.Since(ic.start).Seconds(), set.record...)
	}
}

// Attempt starts the span of one attempt (zeo.attempt).
func (t *T) Attempt(ctx context.Context) (context.Context, Span) {
	if t == nil || t.tracer == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, "zeo.attempt")
	return ctx, Span{s, t}
}

// EndAttempt ends an attempt's span with its ids (none when attemptID is
// empty) and the state it reached (none when empty).
func (s Span) EndAttempt(attemptID string, generation int64, state string, err error) {
	if !s.on() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	if attemptID != "" {
		attrs = append(attrs, attribute.String(KeyAttempt, attemptID), attribute.Int64(KeyGeneration, generation))
	}
	if state != "" {
		attrs = append(attrs, attribute.String(KeyState, state))
	}
	s.s.SetAttributes(attrs...)
	s.End(err)
}

// MethodSpan is the span of one IPC request, with what its attributes
// are made of: they are set once, when it ends, in one call.
type MethodSpan struct {
	Span
	seq    int64
	effect *ipc.EffectRequest
}

// Method starts the span of one IPC request the Handler answers
// (zeo.ipc.<method>), under the attempt's span.
func (t *T) Method(ctx context.Context, call ipc.Call, effect *ipc.EffectRequest) (context.Context, MethodSpan) {
	if t == nil || t.tracer == nil {
		return ctx, MethodSpan{}
	}
	i := methodIndex(call.Method)
	if i < 0 {
		return ctx, MethodSpan{}
	}
	ctx, s := t.tracer.Start(ctx, t.methodSpans[i], t.methodStart...)
	return ctx, MethodSpan{Span{s, t}, call.Sequence, effect}
}

// EndMethod ends a method's span with its sequence, effect and reply
// state, stamped now, once the reply has been written: ctx is the
// method's (see endAfterReply).
func (s MethodSpan) EndMethod(ctx context.Context, st ipc.ReplyState, err error) {
	if !s.on() {
		return
	}
	endAfterReply(ctx, func(at time.Time) { s.endMethod(at, st, err) })
}

// endMethod sets the method span's attributes and ends it at at.
func (s MethodSpan) endMethod(at time.Time, st ipc.ReplyState, err error) {
	attrs := make([]attribute.KeyValue, 1, 5)
	attrs[0] = attribute.Int64(KeySequence, s.seq)
	if s.effect != nil {
		attrs = append(attrs, attribute.String(KeyEffect, s.effect.LogicalEffectID),
			attribute.String(KeyEffectOp, s.effect.Operation), attribute.String(KeyConnection, s.effect.ConnectionRef))
	}
	if st != "" {
		attrs = append(attrs, attribute.String(KeyState, string(st)))
	}
	s.s.SetAttributes(attrs...)
	s.endAt(at, err)
}

// Dispatch starts the span of a Dispatcher call (zeo.dispatch).
func (t *T) Dispatch(ctx context.Context, d *port.Dispatch) (context.Context, Span) {
	if t == nil || t.tracer == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, "zeo.dispatch", trace.WithAttributes(
		attribute.String(KeyEffect, d.LogicalEffectID), attribute.String(KeyEffectOp, d.Request.Operation),
		attribute.String(KeyConnection, d.Request.ConnectionRef), attribute.String(KeyAuthz, d.AuthorizationID)))
	return ctx, Span{s, t}
}

// write is a ledger write in progress.
type write struct {
	t     *T
	k     writeKind
	span  Span
	start time.Time
}

// write starts a ledger write: a span (zeo.ledger.<write>) when ctx
// carries one, so that background writes (lease renewals) start no
// traces of their own, and its duration for the histogram. The span has
// no attributes: its name names the write, and its parent the ids; an
// invocation makes ten of them, and a span without attributes is the
// cheapest the SDK records.
func (t *T) write(ctx context.Context, k writeKind) (context.Context, write) {
	w := write{t: t, k: k, start: time.Now()}
	if t.tracer != nil && trace.SpanContextFromContext(ctx).IsValid() {
		var s trace.Span
		ctx, s = t.tracer.Start(ctx, t.writeSpans[k])
		w.span = Span{s, t}
	}
	return ctx, w
}

// end ends the write: its duration and end time are taken now, and
// recorded once the reply to the IPC request ctx belongs to has been
// written (see endAfterReply), or at once when ctx belongs to none.
func (w write) end(ctx context.Context, err error) {
	if !w.t.meter && !w.span.on() {
		return
	}
	endAfterReply(ctx, func(at time.Time) { w.finish(at, err) })
}

// finish records a write that ended at at and ends its span there.
func (w write) finish(at time.Time, err error) {
	if w.t.meter {
		w.t.writeTime.Record(context.Background(), at.Sub(w.start).Seconds(), w.t.writeSets[w.k]...)
	}
	if w.span.on() {
		w.span.endAt(at, err)
	}
}

// EffectDecided counts an effect.request's decision by its outcome
// (zeo.effect.outcome): the recorded outcome of a dispatched effect
// (confirmed, not_consumed, unknown), redelivered for one answered from
// the ledger, and otherwise the reply state (refused, waiting_approval,
// cancelled, needs_reconciliation).
func (t *T) EffectDecided(capability, outcome string) {
	if t == nil || !t.meter {
		return
	}
	t.effects.Add(context.Background(), 1, t.capabilitySet(KeyEffectOut, outcome, capability).add...)
}

// EffectFailed counts an effect.request the Handler could not decide
// (the Session answered needs_reconciliation).
func (t *T) EffectFailed(capability string) {
	if t == nil || !t.meter {
		return
	}
	t.effects.Add(context.Background(), 1, t.capabilitySet(KeyEffectOut, stateError, capability).add...)
}

// Debited counts one unit of effect budget debited: BeginEffect
// authorized a new logical effect.
func (t *T) Debited(capability string) {
	if t == nil || !t.meter {
		return
	}
	t.budgetUsed.Add(context.Background(), 1, t.capabilitySet("", "", capability).add...)
}

// Started counts a host started by a launch that returned lo, warm or
// cold, and a warm fallback when a fork server was asked (warm) but the
// host started cold; it also names the start on the attempt's span.
func (t *T) Started(ctx context.Context, lo *launch.Outcome, warm bool) {
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

// ServerFailed counts a warm fallback: a fork server (warm, or a
// binding's provider-warm one) did not start, and its hosts start cold.
func (t *T) ServerFailed() {
	if t == nil || !t.meter {
		return
	}
	t.fallbacks.Add(context.Background(), 1, t.fallbackSets[fallbackServer]...)
}

// Renewal counts a lease renewal by its result.
func (t *T) Renewal(result string) {
	if t == nil || !t.meter {
		return
	}
	t.renewals.Add(context.Background(), 1, t.renewalSets[result]...)
}

// TookOver counts an attempt taken over by Recover.
func (t *T) TookOver() {
	if t == nil || !t.meter {
		return
	}
	t.takeovers.Add(context.Background(), 1)
}

// baseClasses name the errors of the packages below supervise in a span's
// error.type, after the caller's own.
var baseClasses = []Class{
	{port.ErrNotConsumed, "not_consumed"},
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

// errorClass is err's error.type: the name of the first class it wraps,
// or "other".
func (t *T) errorClass(err error) string {
	for _, c := range t.classes {
		if errors.Is(err, c.Err) {
			return c.Name
		}
	}
	return "other"
}
