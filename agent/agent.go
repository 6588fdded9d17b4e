package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// Config configures a Facade. New validates and copies it.
type Config struct {
	// Catalogue holds the admitted providers and decides visibility,
	// consent and reservations. Required.
	Catalogue *catalogue.Catalogue
	// Supervisor is the configuration of the facade's one Supervisor,
	// which runs every provider and generation of the catalogue. The
	// facade sets Providers and Reserver (the catalogue) and Authority (the
	// catalogue's checks, then Supervisor.Authority when it is set).
	// Ledger must be the catalogue's store. Its other fields are required
	// as supervise.New requires them, when a run first needs the
	// Supervisor: a facade without a Launcher answers search and describe,
	// and its runs fail with supervise.ErrInvalidConfig.
	Supervisor supervise.Config
	// EffectBudget is the total effect budget of each new operation:
	// the distinct logical effects it may authorize across its attempts.
	EffectBudget int64
	// ReservationWait is how long a run waits for a resource reservation
	// another attempt holds before it is answered refused, naming the
	// holder. Zero means it does not wait.
	ReservationWait time.Duration
	// Logger receives warnings; nil means none.
	Logger *slog.Logger
}

// Facade answers search, describe and run for any scope, over one
// catalogue and one ledger. It is safe for concurrent use.
type Facade struct {
	cat    *catalogue.Catalogue
	ledger ledger.Ledger
	tmpl   supervise.Config
	budget int64
	wait   time.Duration
	log    *slog.Logger

	mu     sync.Mutex // guards idx, sup and closed
	idx    *index
	sup    *supervise.Supervisor // made by the first run
	closed bool
}

// New validates cfg and returns a Facade. Errors wrap ErrInvalidConfig and
// list every problem.
func New(cfg Config) (*Facade, error) {
	var errs []error
	if cfg.Catalogue == nil {
		errs = append(errs, errors.New("Catalogue is nil"))
	}
	if cfg.Supervisor.Ledger == nil {
		errs = append(errs, errors.New("Supervisor.Ledger is nil"))
	}
	if cfg.Supervisor.Reserver != nil {
		errs = append(errs, errors.New("Supervisor.Reserver is set: the facade's reservations are the catalogue's"))
	}
	if cfg.Supervisor.Providers != nil {
		errs = append(errs, errors.New("Supervisor.Providers is set: the facade's providers are the catalogue's"))
	}
	if cfg.EffectBudget < 0 {
		errs = append(errs, fmt.Errorf("EffectBudget %d is negative", cfg.EffectBudget))
	}
	if cfg.ReservationWait < 0 {
		errs = append(errs, fmt.Errorf("ReservationWait %v is negative", cfg.ReservationWait))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	f := &Facade{cat: cfg.Catalogue, ledger: cfg.Supervisor.Ledger, tmpl: cfg.Supervisor, budget: cfg.EffectBudget,
		wait: cfg.ReservationWait, log: cfg.Logger}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	f.tmpl.Authority = Authority(cfg.Catalogue, cfg.Supervisor.Authority)
	f.tmpl.Reserver = cfg.Catalogue
	f.tmpl.Providers = cfg.Catalogue
	return f, nil
}

// Search returns one page of the capabilities scope sees that match
// req.Query (see SearchRequest), ordered by relevance then id. Nothing
// outside the scope is counted, listed or ranked. Errors: ErrInvalidCall,
// ErrInvalidCursor, the catalogue's (an invalid scope, storage failures).
func (f *Facade) Search(ctx context.Context, scope ledger.Scope, req SearchRequest) (SearchPage, error) {
	q, err := parseQuery(req.Query)
	if err != nil {
		return SearchPage{}, err
	}
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 0 || limit > MaxPageSize:
		return SearchPage{}, invalidf("limit %d is outside 1..%d", limit, MaxPageSize)
	}
	var from *position
	if req.Cursor != "" {
		p, err := decodeCursor(req.Cursor, scope, q)
		if err != nil {
			return SearchPage{}, err
		}
		from = &p
	}
	set, err := f.docSet(ctx, scope)
	if err != nil {
		return SearchPage{}, err
	}
	hits, more := search(set, q, from, limit)
	page := SearchPage{Capabilities: make([]Summary, len(hits))}
	for i, h := range hits {
		page.Capabilities[i] = h.d.sum
	}
	if more {
		last := hits[len(hits)-1]
		page.NextCursor = encodeCursor(scope, q, position{score: last.score, id: last.d.sum.CapabilityID})
	}
	return page, nil
}

// Description is what describe answers: the capability's manifest as its
// host projects it, and the schema its arguments must satisfy.
type Description struct {
	// CapabilityID is the canonical id.
	CapabilityID string `json:"capability_id"`
	// Title is as in Summary.
	Title string `json:"title"`
	// Provider and Generation name the provider generation a new run of
	// the capability is pinned to.
	Provider   cataloguestore.ProviderKey `json:"provider"`
	Generation int64                      `json:"generation"`
	// NeedsAccount reports that the capability runs only with a
	// connection account the scope has consented to; run names one when
	// several could serve.
	NeedsAccount bool `json:"needs_account"`
	// RequestSchema is the JSON Schema (draft 2020-12) run's arguments
	// must satisfy; its defaults are filled in before the run.
	RequestSchema map[string]any `json:"request_schema"`
	// Manifest is the projection of the admitted manifest (see
	// manifest.Project).
	Manifest manifest.CapabilityManifest `json:"manifest"`
}

// Describe returns the capability scope sees as id. An id outside the
// scope is answered exactly as an id that does not exist: an error
// wrapping catalogue.ErrUnknownCapability whose text depends only on id.
func (f *Facade) Describe(ctx context.Context, scope ledger.Scope, id string) (Description, error) {
	v, err := f.cat.View(ctx, scope)
	if err != nil {
		return Description{}, err
	}
	c, err := v.Lookup(id)
	if err != nil {
		return Description{}, err
	}
	m := manifest.Project(c.Manifest)
	return Description{CapabilityID: c.ID, Title: title(&m), Provider: c.Provider, Generation: c.Generation,
		NeedsAccount: c.NeedsAccount, RequestSchema: m.RequestSchema, Manifest: m}, nil
}

// RunRequest is a run of one capability.
type RunRequest struct {
	// CapabilityID is the exact canonical id, "namespace.name@version".
	CapabilityID string
	// Arguments are the request's arguments (JSON values as canon decodes
	// them: int64 integers, float64 other numbers).
	Arguments map[string]any
	// OperationID continues an operation (after waiting_approval,
	// needs_reconciliation, a busy reservation or a lost answer); empty
	// starts a new one with a random id. An operation's accepted result is
	// returned without running anything again.
	OperationID string
	// Account is the connection account to run with; it may be left empty
	// unless several consented accounts could serve.
	Account string
}

// RunResult is what a run established.
type RunResult struct {
	// CapabilityID is the capability run, and OperationID the operation:
	// pass it back to continue the operation.
	CapabilityID string `json:"capability_id"`
	OperationID  string `json:"operation_id"`
	// State is succeeded, or why there is no result yet.
	State launch.State `json:"state"`
	// Artifact is the accepted result (its stored canonical JSON) when
	// State is succeeded, and ArtifactRef its ref.
	Artifact    json.RawMessage `json:"artifact,omitempty"`
	ArtifactRef string          `json:"artifact_ref,omitempty"`
	// Reconnected reports that the result had been accepted before:
	// nothing ran this time.
	Reconnected bool `json:"reconnected,omitempty"`
	// ErrorCode is the host's error code, when it reported one.
	ErrorCode string `json:"error_code,omitempty"`
	// Reason says why the state is not succeeded, and Detail what was
	// found (the check that refused, the reservation's holder, the
	// schema's complaint), when there is more to say.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Next says what the caller may do now, for a state other than
	// succeeded.
	Next string `json:"next,omitempty"`
	// Outcome is the Supervisor's full outcome (not part of the JSON form).
	Outcome *supervise.Outcome `json:"-"`
}

// Run runs a capability the scope sees, with its arguments as data: the
// catalogue decides visibility, consent and the connection account and pins
// the operation to a provider generation, then the pinned generation's
// Supervisor invokes it (reservations taken by the catalogue).
//
// The error is nil exactly when the State is succeeded. A run that ended
// otherwise returns its RunResult (State, Reason, Next) with the
// Supervisor's *supervise.OutcomeError. A run refused before an operation
// ran returns a zero RunResult and the refusal: an id outside the scope
// exactly as an unknown id (catalogue.ErrUnknownCapability), a
// *catalogue.ConsentError, a *catalogue.AccountError,
// catalogue.ErrPinMismatch, supervise.ErrOperationMismatch,
// ErrInvalidCall.
func (f *Facade) Run(ctx context.Context, scope ledger.Scope, req RunRequest) (RunResult, error) {
	if req.OperationID == "" {
		req.OperationID = newOperationID()
	} else if err := protocol.CheckIdentifier("operation_id", req.OperationID); err != nil {
		return RunResult{}, fmt.Errorf("%w: %w", ErrInvalidCall, err)
	}
	if req.Arguments == nil {
		req.Arguments = map[string]any{}
	}
	plan, err := f.cat.Prepare(ctx, catalogue.Request{Scope: scope, OperationID: req.OperationID,
		CapabilityID: req.CapabilityID, Account: req.Account})
	if err != nil {
		return RunResult{}, err
	}
	sup, err := f.supervisor()
	if err != nil {
		return RunResult{}, err
	}
	call := supervise.Call{Scope: scope, OperationID: req.OperationID, CapabilityID: plan.Capability.ID,
		Provider: plan.Pin.Provider, Generation: plan.Pin.Generation,
		Arguments: req.Arguments, EffectBudget: f.budget, ReservationWait: f.wait}
	switch _, err := f.ledger.Operation(ctx, scope, req.OperationID); {
	case err == nil:
		// Continuing: the recorded budget and deadline stand.
		call.EffectBudget = 0
	case !errors.Is(err, ledger.ErrNotFound):
		return RunResult{}, fmt.Errorf("agent: reading operation %q: %w", req.OperationID, err)
	}
	o, ierr := sup.Invoke(ctx, call)
	if o == nil {
		return RunResult{}, ierr
	}
	res := RunResult{CapabilityID: plan.Capability.ID, OperationID: o.OperationID, State: o.State,
		Reconnected: o.Reconnected, ErrorCode: o.ErrorCode, Reason: o.Reason, Outcome: o}
	if o.State == launch.StateSucceeded && o.Result != nil && len(o.Result.ArtifactRefs) > 0 {
		ref := o.Result.ArtifactRefs[0]
		a, err := sup.Artifact(ctx, scope, ref)
		if err != nil {
			return res, fmt.Errorf("agent: operation %q succeeded; reading its artifact %s: %w", o.OperationID, ref, err)
		}
		res.Artifact, res.ArtifactRef = a.Bytes, ref
	}
	var oe *supervise.OutcomeError
	if errors.As(ierr, &oe) && oe.Cause != nil {
		res.Detail = oe.Cause.Error()
	}
	res.Next = next(o, ierr)
	if res.Reason == "" && o.State != launch.StateSucceeded {
		res.Reason = reasonFor(o, res.Detail)
	}
	return res, ierr
}

// supervisor returns the facade's Supervisor, made on first use.
func (f *Facade) supervisor() (*supervise.Supervisor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, supervise.ErrClosed
	}
	if f.sup != nil {
		return f.sup, nil
	}
	s, err := supervise.New(f.tmpl)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	f.sup = s
	return s, nil
}

// Supervisor returns the facade's one Supervisor (made on first use), for
// what the facade does not answer itself: Cancel, Resolve, Recover.
func (f *Facade) Supervisor() (*supervise.Supervisor, error) { return f.supervisor() }

// Close closes the facade's Supervisor within ctx's bound (see
// supervise.Supervisor.Close); later runs fail with supervise.ErrClosed.
// The catalogue and the ledger stay the embedder's to close.
func (f *Facade) Close(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	s := f.sup
	f.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close(ctx)
}

// next says what a caller may do after an outcome that is not a success.
func next(o *supervise.Outcome, err error) string {
	again := fmt.Sprintf("call run again with operation_id %q and the same arguments", o.OperationID)
	switch o.State {
	case launch.StateSucceeded:
		return ""
	case launch.StateWaitingApproval:
		return "an approver must allow what is held (consent, or the effect); then " + again
	case launch.StateNeedsReconciliation:
		return "an operator must settle the effect whose outcome is uncertain ('zeoctl ledger resolve'); then " + again
	case launch.StateProtocolError:
		return again + ": effects already recorded are answered from the ledger, never dispatched twice"
	case launch.StateRefused:
		if errors.Is(err, cataloguestore.ErrReserved) {
			return "another run holds the reservation this one needs; " + again + " once it ends"
		}
		return "the reason says who refused and why; do not retry unchanged"
	case launch.StateInvalidRequest:
		return "fix the arguments so that they satisfy the request schema ('describe'), then run with a new operation"
	case launch.StateUnavailable:
		return "the capability cannot run in this environment (the reason says which requirement); ask an operator"
	case launch.StateTimedOut:
		return "the operation's deadline passed; run with a new operation to try again"
	case launch.StateCancelled:
		return "the operation was cancelled; run with a new operation if it is still wanted"
	case launch.StateFailed:
		return "the capability failed (the reason, and error_code when given, say how); run with a new operation once the cause is fixed"
	}
	return ""
}

// reasonFor is the reason of an outcome that gave none, so that every
// state other than succeeded has both a reason and a next step.
func reasonFor(o *supervise.Outcome, detail string) string {
	switch {
	case detail != "":
		return detail
	case o.ErrorCode != "":
		return fmt.Sprintf("the operation ended %s with error code %s, and no further reason", o.State, o.ErrorCode)
	}
	return fmt.Sprintf("the operation ended %s, and no further reason was reported", o.State)
}

// newOperationID returns a random operation id.
func newOperationID() string {
	var b [16]byte
	rand.Read(b[:])
	return "op-" + hex.EncodeToString(b[:])
}
