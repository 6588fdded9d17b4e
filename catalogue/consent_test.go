package catalogue_test

import (
	"errors"
	"testing"

	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

func wantConsent(t testing.TB, what string, err error, account string, missing ...string) {
	t.Helper()
	var ce *catalogue.ConsentError
	if !errors.As(err, &ce) || !errors.Is(err, catalogue.ErrConsentRequired) {
		t.Fatalf("%s: err = %v, want a *catalogue.ConsentError", what, err)
	}
	if ce.Account != account {
		t.Fatalf("%s: account %q, want %q", what, ce.Account, account)
	}
	diff(t, what+": missing", ce.Missing, missing)
}

func mail(t testing.TB, credentials ...string) manifest.CapabilityManifest {
	return capManifest(t, "example.mail@1.0.0", "parallel_safe", nil, credentials, nil)
}

func prepare(c *catalogue.Catalogue, op, account string) (catalogue.Plan, error) {
	return c.Prepare(bg, catalogue.Request{Scope: scopeA, OperationID: op, CapabilityID: "example.mail@1.0.0", Account: account})
}

func operation(t testing.TB, s catalogue.Store, op string) ledger.Operation {
	t.Helper()
	v, err := s.Operation(bg, scopeA, op)
	if err != nil {
		t.Fatal(err)
	}
	return v.Operation
}

// TestConsent: a new generation whose capability needs a credential is
// admitted but does not run until the scope consents, explicitly, for a
// connection account; consent is never widened by a later generation;
// with several consented accounts the caller must choose; a revocation
// refuses the next admission check, also of an operation prepared before.
func TestConsent(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := b.open(t)
		c := newCatalogue(t, s)
		mustAdmit(t, c, catalogue.Admission{Binding: binding(t, 1, mail(t)), Audience: everyone("org-a")})
		p1, err := prepare(c, "op-1", "")
		if err != nil {
			t.Fatalf("a capability needing no credential: %v", err)
		}
		if p1.Pin.Account != "" || p1.Capability.NeedsAccount {
			t.Fatalf("pin %+v needs no account", p1.Pin)
		}
		newOperation(t, s, scopeA, "op-1", p1, farFuture())

		// Generation 2 needs the gmail credential: admitted, not runnable.
		mustAdmit(t, c, catalogue.Admission{Binding: binding(t, 2, mail(t, "gmail")), Audience: everyone("org-a")})
		_, err = prepare(c, "op-2", "")
		wantConsent(t, "generation 2 without consent", err, "",
			"capability:example.mail@1.0.0", "credential:gmail", "effect_kind:read", "effect_kind:external_communication")
		_, err = prepare(c, "op-2", "work")
		wantConsent(t, "generation 2 with an account never consented", err, "work",
			"capability:example.mail@1.0.0", "credential:gmail", "effect_kind:read", "effect_kind:external_communication")
		// The operation of generation 1 runs on as it started.
		if _, err := prepare(c, "op-1", ""); err != nil {
			t.Fatalf("the operation pinned to generation 1: %v", err)
		}
		if err := c.CheckAdmission(bg, operation(t, s, "op-1")); err != nil {
			t.Fatalf("CheckAdmission of the generation 1 operation: %v", err)
		}

		work := cataloguestore.Consent{Scope: scopeA, Account: "work", Capabilities: []string{"example.mail@1.0.0"}, Credentials: []string{"gmail"},
			EffectKinds: []string{"read", "external_communication"}}
		if _, err := c.Grant(bg, work); err != nil {
			t.Fatal(err)
		}
		p2, err := prepare(c, "op-2", "")
		if err != nil {
			t.Fatalf("with the one consented account: %v", err)
		}
		if p2.Pin.Account != "work" || p2.Pin.Generation != 2 {
			t.Fatalf("pin %+v, want account work on generation 2", p2.Pin)
		}
		newOperation(t, s, scopeA, "op-2", p2, farFuture())

		// Two accounts could serve: an implicit choice is refused.
		home := work
		home.Account = "home"
		if _, err := c.Grant(bg, home); err != nil {
			t.Fatal(err)
		}
		_, err = prepare(c, "op-3", "")
		var ae *catalogue.AccountError
		if !errors.As(err, &ae) || !errors.Is(err, catalogue.ErrAccountRequired) {
			t.Fatalf("two accounts, none named: err = %v, want an *AccountError", err)
		}
		diff(t, "candidates", ae.Candidates, []string{"home", "work"})
		p3, err := prepare(c, "op-3", "home")
		if err != nil || p3.Pin.Account != "home" {
			t.Fatalf("naming home: %+v, %v", p3.Pin, err)
		}
		newOperation(t, s, scopeA, "op-3", p3, farFuture())
		// The operation keeps its account: another is a mismatch, none is
		// the recorded one.
		_, err = prepare(c, "op-3", "work")
		wantIs(t, "another account for a pinned operation", err, catalogue.ErrPinMismatch)
		if p, err := prepare(c, "op-3", ""); err != nil || p.Pin.Account != "home" {
			t.Fatalf("the pinned operation without an account: %+v, %v", p.Pin, err)
		}

		// Generation 3 also needs a calendar credential: the consent given
		// for generation 2 does not cover it.
		mustAdmit(t, c, catalogue.Admission{Binding: binding(t, 3, mail(t, "gmail", "calendar")), Audience: everyone("org-a")})
		_, err = prepare(c, "op-4", "work")
		wantConsent(t, "generation 3 needs more", err, "work", "credential:calendar")
		if err := c.CheckAdmission(bg, operation(t, s, "op-2")); err != nil {
			t.Fatalf("the generation 2 operation after generation 3: %v", err)
		}

		// Effects: the account the operation runs with, an effect
		// operation the consent names.
		op3 := operation(t, s, "op-3")
		err = c.CheckEffect(bg, op3, "home", "send")
		wantConsent(t, "an effect operation not consented", err, "home", "effect_operation:send")
		if _, err := c.Grant(bg, cataloguestore.Consent{Scope: scopeA, Account: "home", EffectOperations: []string{"send"}}); err != nil {
			t.Fatal(err)
		}
		if err := c.CheckEffect(bg, op3, "home", "send"); err != nil {
			t.Fatalf("a consented effect: %v", err)
		}
		wantIs(t, "an effect on another account", c.CheckEffect(bg, op3, "work", "send"), catalogue.ErrPinMismatch)
		wantIs(t, "an effect of a capability without account", c.CheckEffect(bg, operation(t, s, "op-1"), "home", "send"), catalogue.ErrPinMismatch)

		// Revocation takes effect at the next check.
		if _, err := c.Revoke(bg, cataloguestore.Consent{Scope: scopeA, Account: "work", Credentials: []string{"gmail"}}); err != nil {
			t.Fatal(err)
		}
		wantConsent(t, "CheckAdmission after revocation", c.CheckAdmission(bg, operation(t, s, "op-2")), "work", "credential:gmail")
		_, err = prepare(c, "op-2", "")
		wantConsent(t, "Prepare after revocation", err, "work", "credential:gmail")
		if err := c.CheckAdmission(bg, op3); err != nil {
			t.Fatalf("another account's operation after the revocation: %v", err)
		}
		if _, err := c.Revoke(bg, cataloguestore.Consent{Scope: scopeA, Account: "home", EffectOperations: []string{"send"}}); err != nil {
			t.Fatal(err)
		}
		wantConsent(t, "CheckEffect after revocation", c.CheckEffect(bg, op3, "home", "send"), "home", "effect_operation:send")

		// Consent is per scope.
		consents, err := c.Consents(bg, scopeB)
		if err != nil || len(consents) != 0 {
			t.Fatalf("consents of another scope: %+v, %v", consents, err)
		}
		// An operation that was never prepared is refused.
		wantIs(t, "an operation never prepared", c.CheckAdmission(bg, ledger.Operation{Scope: scopeA, OperationID: "stranger",
			CapabilityID: "example.mail@1.0.0", ManifestDigest: p2.Pin.ManifestDigest}), catalogue.ErrNotPinned)
	})
}
