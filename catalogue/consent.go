package catalogue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
)

// Grant adds c's capabilities, credentials, services, effect kinds and
// effect operations to what c.Scope has consented to with connection
// account c.Account, and returns the whole consent. It is the only way
// consent grows.
func (c *Catalogue) Grant(ctx context.Context, g cataloguestore.Consent) (cataloguestore.Consent, error) {
	if err := checkConsent(g); err != nil {
		return cataloguestore.Consent{}, err
	}
	out, err := c.store.GrantConsent(ctx, g)
	if err != nil {
		return out, fmt.Errorf("catalogue: granting consent to account %q: %w", g.Account, err)
	}
	return out, nil
}

// Revoke removes c's sets from the consent of (c.Scope, c.Account) and
// returns what is left. It takes effect at the next check: the next
// Prepare, and the CheckAdmission and CheckEffect of attempts already
// running.
func (c *Catalogue) Revoke(ctx context.Context, r cataloguestore.Consent) (cataloguestore.Consent, error) {
	if err := checkConsent(r); err != nil {
		return cataloguestore.Consent{}, err
	}
	out, err := c.store.RevokeConsent(ctx, r)
	if err != nil {
		return out, fmt.Errorf("catalogue: revoking consent of account %q: %w", r.Account, err)
	}
	return out, nil
}

// Consents returns what scope has consented to, per account.
func (c *Catalogue) Consents(ctx context.Context, scope ledger.Scope) ([]cataloguestore.Consent, error) {
	if err := scope.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCall, err)
	}
	out, err := c.store.Consents(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("catalogue: consents: %w", err)
	}
	return out, nil
}

func checkConsent(g cataloguestore.Consent) error {
	errs := []error{g.Scope.Validate(), protocol.CheckIdentifier("Account", g.Account)}
	for _, set := range []struct {
		name string
		vs   []string
	}{{"Capabilities", g.Capabilities}, {"Credentials", g.Credentials}, {"Services", g.Services},
		{"EffectKinds", g.EffectKinds}, {"EffectOperations", g.EffectOperations}} {
		for i, v := range set.vs {
			errs = append(errs, protocol.CheckIdentifier(fmt.Sprintf("%s[%d]", set.name, i), v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidCall, err)
	}
	return nil
}

// missing lists what running capability e with consent g needs and g does
// not grant, as "kind:value" in a fixed order.
func missing(e *Capability, g cataloguestore.Consent) []string {
	var out []string
	if !has(g.Capabilities, e.ID) {
		out = append(out, "capability:"+e.ID)
	}
	r := e.Manifest.Requirements
	for _, v := range r.Credentials {
		if !has(g.Credentials, v) {
			out = append(out, "credential:"+v)
		}
	}
	for _, v := range r.Services {
		if !has(g.Services, v) {
			out = append(out, "service:"+v)
		}
	}
	for _, k := range e.Manifest.Effects.Kinds {
		if !has(g.EffectKinds, string(k)) {
			out = append(out, "effect_kind:"+string(k))
		}
	}
	return out
}

// has reports whether the sorted set holds v.
func has(set []string, v string) bool {
	_, ok := slices.BinarySearch(set, v)
	return ok
}

// consentOf returns the consent of account in scope, and whether there is
// one.
func (c *Catalogue) consentOf(ctx context.Context, scope ledger.Scope, account string) (cataloguestore.Consent, bool, error) {
	all, err := c.store.Consents(ctx, scope)
	if err != nil {
		return cataloguestore.Consent{}, false, fmt.Errorf("catalogue: consents: %w", err)
	}
	i, ok := slices.BinarySearchFunc(all, account, func(g cataloguestore.Consent, a string) int { return compare(g.Account, a) })
	if !ok {
		return cataloguestore.Consent{}, false, nil
	}
	return all[i], true, nil
}

// checkConsentFor returns nil when e may run with account in scope: no
// account for a capability that needs none, a consent covering it
// otherwise.
func (c *Catalogue) checkConsentFor(ctx context.Context, scope ledger.Scope, e *Capability, account string) error {
	if !e.NeedsAccount {
		return nil
	}
	g, _, err := c.consentOf(ctx, scope, account)
	if err != nil {
		return err
	}
	if m := missing(e, g); len(m) > 0 {
		return &ConsentError{Scope: scope, CapabilityID: e.ID, Account: account, Missing: m}
	}
	return nil
}
