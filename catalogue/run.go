package catalogue

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Request is a run of a capability as a scope asks for it.
type Request struct {
	Scope ledger.Scope
	// OperationID is the operation the run belongs to: the first Prepare
	// of it pins it to a provider generation, later ones (retries, other
	// controllers) find the pin.
	OperationID string
	// CapabilityID is the exact canonical id.
	CapabilityID string
	// Account is the connection account to run with. It may be empty when
	// the capability needs none, or exactly one consented account could
	// serve; otherwise it is required.
	Account string
}

// Plan is what a run executes: the pinned generation's exact binding and
// the capability's manifest in it.
type Plan struct {
	Pin      cataloguestore.OperationPin
	Binding  manifest.ProviderBinding
	Manifest manifest.CapabilityManifest
	// Capability is the capability as the pinned generation holds it.
	Capability *Capability
}

// Prepare decides whether scope may run the capability now and with which
// account, and pins the operation to a provider generation: the current
// one for a new operation, the recorded one for an operation already
// pinned (even if a newer generation was admitted since). The pin is
// written before any attempt, so that every attempt runs the same
// binding.
//
// Errors: ErrInvalidCall; ErrUnknownCapability (unknown, or outside the
// scope: the same text); ErrPinMismatch (the operation is pinned to
// another capability or account); *ConsentError (ErrConsentRequired);
// *AccountError (ErrAccountRequired); storage errors.
func (c *Catalogue) Prepare(ctx context.Context, r Request) (Plan, error) {
	if err := errors.Join(r.Scope.Validate(), protocol.CheckIdentifier("OperationID", r.OperationID),
		protocol.CheckIdentifier("CapabilityID", r.CapabilityID)); err != nil {
		return Plan{}, fmt.Errorf("%w: %w", ErrInvalidCall, err)
	}
	if r.Account != "" && !protocol.ValidIdentifier(r.Account) {
		return Plan{}, fmt.Errorf("%w: %w", ErrInvalidCall, protocol.CheckIdentifier("Account", r.Account))
	}
	pin, err := c.store.OperationPin(ctx, r.Scope, r.OperationID)
	switch {
	case err == nil:
		return c.pinned(ctx, r, pin)
	case !errors.Is(err, ledger.ErrNotFound):
		return Plan{}, fmt.Errorf("catalogue: operation %q: reading its pin: %w", r.OperationID, err)
	}
	v, err := c.View(ctx, r.Scope)
	if err != nil {
		return Plan{}, err
	}
	e, err := v.Lookup(r.CapabilityID)
	if err != nil {
		return Plan{}, err
	}
	account, err := c.chooseAccount(ctx, r, e)
	if err != nil {
		return Plan{}, err
	}
	want := cataloguestore.OperationPin{Scope: r.Scope, OperationID: r.OperationID, CapabilityID: e.ID, Provider: e.Provider,
		Generation: e.Generation, ManifestDigest: e.ManifestDigest, Account: account}
	g, err := c.generation(ctx, e.Provider, e.Generation)
	if err != nil {
		return Plan{}, err
	}
	want.BindingDigest = g.rec.BindingDigest
	got, err := c.store.PinOperation(ctx, want)
	if err != nil {
		return Plan{}, fmt.Errorf("catalogue: operation %q: pinning: %w", r.OperationID, err)
	}
	// Another controller may have pinned it first: its pin is the truth.
	return c.pinned(ctx, Request{Scope: r.Scope, OperationID: r.OperationID, CapabilityID: r.CapabilityID, Account: r.Account}, got)
}

// chooseAccount picks the account a new operation runs with.
func (c *Catalogue) chooseAccount(ctx context.Context, r Request, e *Capability) (string, error) {
	if !e.NeedsAccount {
		return "", nil
	}
	if r.Account != "" {
		return r.Account, c.checkConsentFor(ctx, r.Scope, e, r.Account)
	}
	all, err := c.store.Consents(ctx, r.Scope)
	if err != nil {
		return "", fmt.Errorf("catalogue: consents: %w", err)
	}
	var serve []string
	for _, g := range all {
		if len(missing(e, g)) == 0 {
			serve = append(serve, g.Account)
		}
	}
	switch len(serve) {
	case 0:
		return "", &ConsentError{Scope: r.Scope, CapabilityID: e.ID, Missing: missing(e, cataloguestore.Consent{})}
	case 1:
		return serve[0], nil
	}
	return "", &AccountError{CapabilityID: e.ID, Candidates: serve}
}

// pinned plans a run of an operation that has a pin.
func (c *Catalogue) pinned(ctx context.Context, r Request, pin cataloguestore.OperationPin) (Plan, error) {
	if pin.CapabilityID != r.CapabilityID {
		return Plan{}, fmt.Errorf("%w: operation %q runs capability %q, not %q", ErrPinMismatch, r.OperationID, pin.CapabilityID, r.CapabilityID)
	}
	e, g, err := c.pinnedCapability(ctx, pin)
	if err != nil {
		return Plan{}, err
	}
	if r.Account != "" && e.NeedsAccount && r.Account != pin.Account {
		return Plan{}, fmt.Errorf("%w: operation %q runs with connection account %q, not %q", ErrPinMismatch, r.OperationID, pin.Account, r.Account)
	}
	if err := c.checkConsentFor(ctx, r.Scope, e, pin.Account); err != nil {
		return Plan{}, err
	}
	return Plan{Pin: pin, Binding: g.doc.Binding, Manifest: e.Manifest, Capability: e}, nil
}

// pinnedCapability returns the capability and generation a pin names,
// ErrUnknownCapability if the scope may not see it there.
func (c *Catalogue) pinnedCapability(ctx context.Context, pin cataloguestore.OperationPin) (*Capability, *generation, error) {
	g, err := c.generation(ctx, pin.Provider, pin.Generation)
	if err != nil {
		return nil, nil, err
	}
	e, ok := g.caps[pin.CapabilityID]
	if !ok || !e.visibleTo(pin.Scope) {
		return nil, nil, unknownCapability(pin.CapabilityID)
	}
	return e, g, nil
}

// CheckAdmission is the catalogue's decision at invoke.admit, immediately
// before invocation, for the operation op (as the ledger holds it): the
// operation must be pinned, to the capability and manifest digest op
// records, visible to its scope in the pinned generation, and its account
// still consented (a revocation since launch refuses it here). nil
// means allow. An error wrapping ErrUnknownCapability, ErrNotPinned,
// ErrPinMismatch or ErrConsentRequired means refuse (answer the host
// refused); any other error means the catalogue could not decide.
// Reservations are re-checked separately by Recheck.
func (c *Catalogue) CheckAdmission(ctx context.Context, op ledger.Operation) error {
	pin, e, err := c.running(ctx, op)
	if err != nil {
		return err
	}
	return c.checkConsentFor(ctx, op.Scope, e, pin.Account)
}

// running returns the pin of the recorded operation op and its capability
// in the pinned generation, refusing an operation never prepared, one
// whose record disagrees with its pin, and one its scope may not see.
func (c *Catalogue) running(ctx context.Context, op ledger.Operation) (cataloguestore.OperationPin, *Capability, error) {
	pin, err := c.store.OperationPin(ctx, op.Scope, op.OperationID)
	if errors.Is(err, ledger.ErrNotFound) {
		return pin, nil, fmt.Errorf("%w: operation %q", ErrNotPinned, op.OperationID)
	}
	if err != nil {
		return pin, nil, fmt.Errorf("catalogue: operation %q: reading its pin: %w", op.OperationID, err)
	}
	if pin.CapabilityID != op.CapabilityID || pin.ManifestDigest != op.ManifestDigest {
		return pin, nil, fmt.Errorf("%w: operation %q is recorded for %s with manifest digest %s, pinned to %s with %s",
			ErrPinMismatch, op.OperationID, op.CapabilityID, op.ManifestDigest, pin.CapabilityID, pin.ManifestDigest)
	}
	e, _, err := c.pinnedCapability(ctx, pin)
	return pin, e, err
}

// CheckEffect is the catalogue's decision for a new effect an attempt of
// op requests: the capability must run with a connection account, the
// effect must name that account (connectionRef) and the account's consent
// must still cover the capability and effectOperation. nil means allow.
// An error wrapping ErrConsentRequired means a person must grant consent
// first (answer waiting_approval: nothing is recorded and a later attempt
// asks again); ErrUnknownCapability, ErrNotPinned or ErrPinMismatch
// mean refuse; any other error means the catalogue could not decide.
func (c *Catalogue) CheckEffect(ctx context.Context, op ledger.Operation, connectionRef, effectOperation string) error {
	pin, e, err := c.running(ctx, op)
	if err != nil {
		return err
	}
	if !e.NeedsAccount || connectionRef != pin.Account {
		return fmt.Errorf("%w: operation %q runs with connection account %q; its capability may not request effects on %q",
			ErrPinMismatch, op.OperationID, pin.Account, connectionRef)
	}
	g, _, err := c.consentOf(ctx, op.Scope, pin.Account)
	if err != nil {
		return err
	}
	m := missing(e, g)
	if !has(g.EffectOperations, effectOperation) {
		m = append(m, "effect_operation:"+effectOperation)
	}
	if len(m) > 0 {
		return &ConsentError{Scope: op.Scope, CapabilityID: e.ID, Account: pin.Account, Missing: m}
	}
	return nil
}

// ProviderBinding returns the exact binding of generation gen of provider
// p, the port through which a supervise.Supervisor resolves the provider
// a Call names. gen zero means the generation operation operationID is
// pinned to, when it is pinned to p, and otherwise p's latest: an
// operation keeps the generation it started on. An unknown provider or
// generation wraps ledger.ErrNotFound. It decides no visibility or
// consent: Prepare and the catalogue's Authority do.
func (c *Catalogue) ProviderBinding(ctx context.Context, scope ledger.Scope, operationID string, p cataloguestore.ProviderKey, gen int64) (manifest.ProviderBinding, error) {
	if gen == 0 {
		pin, err := c.store.OperationPin(ctx, scope, operationID)
		switch {
		case err == nil && pin.Provider == p:
			gen = pin.Generation
		case err != nil && !errors.Is(err, ledger.ErrNotFound):
			return manifest.ProviderBinding{}, fmt.Errorf("catalogue: operation %q: reading its pin: %w", operationID, err)
		}
	}
	g, err := c.generation(ctx, p, gen)
	if err != nil {
		return manifest.ProviderBinding{}, err
	}
	return g.doc.Binding, nil
}
