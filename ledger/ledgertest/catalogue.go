package ledgertest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
)

// CatalogueLedger is a ledger whose backend also keeps the catalogue's
// records.
type CatalogueLedger interface {
	ledger.Ledger
	cataloguestore.Store
}

// CatalogueOpener returns a fresh, empty ledger for one subtest; the suite
// closes it.
type CatalogueOpener func(t *testing.T) CatalogueLedger

// RunCatalogue runs the conformance subtests of [cataloguestore.Store]
// against ledgers made by open: generations, pins, consent and
// reservations, alone, racing, and against a model (ReservationModel).
// Every backend that implements cataloguestore.Store runs it beside [Run].
func RunCatalogue(t *testing.T, open CatalogueOpener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, l CatalogueLedger)
	}{
		{"GenerationsStrictlyIncrease", testGenerations},
		{"RacingAdmissionsOneWinnerPerGeneration", testRacingAdmissions},
		{"CatalogueInvalidArgumentsRefused", testCatalogueInvalid},
		{"PinFirstWriterWins", testPins},
		{"ConsentGrantedAndRevokedAsSets", testConsent},
		{"ReservationExcludesOtherHolders", testReservations},
		{"ReservationFreedByFenceEndAndDeadline", testReservationLiveness},
		{"RacingReservationsOneHolder", testRacingReservations},
		{"ReservationModel", testReservationModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := openChecked(t, open)
			tt.fn(t, l)
			Check(t, l)
		})
	}
}

var (
	provA = cataloguestore.ProviderKey{Distribution: "dist-a", Factory: "pkg.a:factory"}
	provB = cataloguestore.ProviderKey{Distribution: "dist-b", Factory: "pkg.b:factory"}
)

func provRec(p cataloguestore.ProviderKey, gen int64, doc string) cataloguestore.ProviderRecord {
	return cataloguestore.ProviderRecord{Provider: p, Generation: gen, BindingDigest: Digest("binding:" + doc),
		ManifestDigest: Digest("manifest:" + doc), Document: []byte(`{"doc":"` + doc + `"}`)}
}

func wantGenerationError(t testing.TB, what string, err error, presented, latest int64) {
	t.Helper()
	var ge *cataloguestore.GenerationError
	if !errors.As(err, &ge) || !errors.Is(err, cataloguestore.ErrStaleGeneration) {
		t.Fatalf("%s: err = %v, want a *cataloguestore.GenerationError wrapping ErrStaleGeneration", what, err)
	}
	if ge.Presented != presented || ge.Latest != latest {
		t.Fatalf("%s: GenerationError presented %d latest %d, want %d and %d", what, ge.Presented, ge.Latest, presented, latest)
	}
}

func revision(t testing.TB, l CatalogueLedger) int64 {
	t.Helper()
	r, err := l.CatalogueRevision(bg)
	if err != nil {
		t.Fatalf("CatalogueRevision: %v", err)
	}
	return r
}

func testGenerations(t *testing.T, l CatalogueLedger) {
	if r := revision(t, l); r != 0 {
		t.Fatalf("revision of an empty catalogue = %d, want 0", r)
	}
	if _, err := l.ProviderGeneration(bg, provA, 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("ProviderGeneration of an unknown provider: err = %v, want ErrNotFound", err)
	}
	g1, err := l.AdmitProvider(bg, provRec(provA, 1, "one"))
	if err != nil {
		t.Fatalf("AdmitProvider gen 1: %v", err)
	}
	if g1.AdmittedAt.IsZero() || string(g1.Document) != `{"doc":"one"}` {
		t.Fatalf("AdmitProvider returned %+v", g1)
	}
	again, err := l.AdmitProvider(bg, provRec(provA, 1, "one"))
	if err != nil {
		t.Fatalf("AdmitProvider gen 1 again: %v", err)
	}
	diff(t, "repeated admission", again, g1)
	_, err = l.AdmitProvider(bg, provRec(provA, 1, "other"))
	wantGenerationError(t, "equal generation, other content", err, 1, 1)
	if r := revision(t, l); r != 1 {
		t.Fatalf("revision after one admission (and a repeat, a refusal) = %d, want 1", r)
	}
	g3, err := l.AdmitProvider(bg, provRec(provA, 3, "three"))
	if err != nil {
		t.Fatalf("AdmitProvider gen 3: %v", err)
	}
	_, err = l.AdmitProvider(bg, provRec(provA, 2, "two"))
	wantGenerationError(t, "lower generation", err, 2, 3)
	_, err = l.AdmitProvider(bg, provRec(provA, 3, "three-b"))
	wantGenerationError(t, "equal generation", err, 3, 3)
	// A lost reply of an older admission is still answered.
	if again, err := l.AdmitProvider(bg, provRec(provA, 1, "one")); err != nil || again.Generation != 1 {
		t.Fatalf("repeating generation 1 after 3: %+v, %v", again, err)
	}
	if _, err := l.AdmitProvider(bg, provRec(provB, 7, "b7")); err != nil {
		t.Fatalf("AdmitProvider other provider: %v", err)
	}
	if r := revision(t, l); r != 3 {
		t.Fatalf("revision after three admissions = %d, want 3", r)
	}
	latest, err := l.ProviderGeneration(bg, provA, 0)
	if err != nil {
		t.Fatalf("ProviderGeneration latest: %v", err)
	}
	diff(t, "latest generation", latest, g3)
	if _, err := l.ProviderGeneration(bg, provA, 2); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("ProviderGeneration of a refused generation: err = %v, want ErrNotFound", err)
	}
	gens, err := l.ProviderGenerations(bg, provA)
	if err != nil {
		t.Fatalf("ProviderGenerations: %v", err)
	}
	h1, h3 := g1, g3
	h1.Document, h3.Document = nil, nil
	diff(t, "generations", gens, []cataloguestore.ProviderRecord{h1, h3})
	snap, err := l.LatestProviders(bg)
	if err != nil {
		t.Fatalf("LatestProviders: %v", err)
	}
	if snap.Revision != 3 || len(snap.Providers) != 2 || snap.Providers[0].Provider != provA || snap.Providers[0].Generation != 3 ||
		snap.Providers[1].Provider != provB || snap.Providers[1].Generation != 7 || string(snap.Providers[1].Document) != `{"doc":"b7"}` {
		t.Fatalf("LatestProviders = %+v", snap)
	}
}

func testRacingAdmissions(t *testing.T, l CatalogueLedger) {
	const controllers, gens = 8, 6
	// Every controller admits generations 1..gens in order, each with its
	// own document: per generation number at most one may win, and the
	// one recorded is the winner's.
	won := make([][]bool, controllers)
	parallel(controllers, func(i int) {
		won[i] = make([]bool, gens+1)
		for g := int64(1); g <= gens; g++ {
			_, err := l.AdmitProvider(bg, provRec(provA, g, fmt.Sprintf("c%d-g%d", i, g)))
			switch {
			case err == nil:
				won[i][g] = true
			case errors.Is(err, cataloguestore.ErrStaleGeneration):
			default:
				t.Errorf("controller %d generation %d: %v", i, g, err)
			}
		}
	})
	var latest int64
	for g := int64(1); g <= gens; g++ {
		winner := -1
		for i := range controllers {
			if won[i][g] {
				if winner >= 0 {
					t.Fatalf("generation %d admitted by controllers %d and %d", g, winner, i)
				}
				winner = i
			}
		}
		rec, err := l.ProviderGeneration(bg, provA, g)
		switch {
		case winner < 0 && !errors.Is(err, ledger.ErrNotFound):
			t.Fatalf("generation %d won by nobody, but ProviderGeneration: %+v, %v", g, rec, err)
		case winner >= 0 && (err != nil || string(rec.Document) != fmt.Sprintf(`{"doc":"c%d-g%d"}`, winner, g)):
			t.Fatalf("generation %d won by controller %d, recorded %q, %v", g, winner, rec.Document, err)
		case winner >= 0:
			latest = g
		}
	}
	if latest != gens {
		t.Fatalf("latest winner generation %d, want %d (the greatest is always admissible)", latest, gens)
	}
}

func testCatalogueInvalid(t *testing.T, l CatalogueLedger) {
	f := newOp(t, l, "op1", 0)
	long := string(make([]rune, 300))
	calls := map[string]error{}
	bad := provRec(provA, 1, "x")
	bad.Generation = 0
	_, calls["generation 0"] = l.AdmitProvider(bg, bad)
	bad = provRec(cataloguestore.ProviderKey{Distribution: "", Factory: "f:g"}, 1, "x")
	_, calls["empty distribution"] = l.AdmitProvider(bg, bad)
	bad = provRec(provA, 1, "x")
	bad.Document = nil
	_, calls["no document"] = l.AdmitProvider(bg, bad)
	bad = provRec(provA, 1, "x")
	bad.BindingDigest = "sha256:nope"
	_, calls["bad digest"] = l.AdmitProvider(bg, bad)
	_, calls["negative generation"] = l.ProviderGeneration(bg, provA, -1)
	_, calls["pin without provider"] = l.PinOperation(bg, cataloguestore.OperationPin{Scope: scopeA, OperationID: "op1", CapabilityID: "c", Generation: 1,
		BindingDigest: Digest("b"), ManifestDigest: Digest("m")})
	_, calls["consent long account"] = l.GrantConsent(bg, cataloguestore.Consent{Scope: scopeA, Account: long})
	_, calls["consent empty entry"] = l.GrantConsent(bg, cataloguestore.Consent{Scope: scopeA, Account: "acct", Credentials: []string{""}})
	_, calls["claim empty key"] = l.Reserve(bg, f, []cataloguestore.Claim{{Key: "", CapabilityID: "c"}})
	_, calls["claim twice"] = l.Reserve(bg, f, []cataloguestore.Claim{{Key: "k", CapabilityID: "c"}, {Key: "k", Shared: true, CapabilityID: "c"}})
	_, calls["reserve generation 0"] = l.Reserve(bg, ledger.Fence{Scope: scopeA, OperationID: "op1", AttemptID: "a1"}, nil)
	_, calls["release bad fence"] = l.Release(bg, ledger.Fence{Scope: scopeA, OperationID: "op1"})
	_, calls["reservations bad scope"] = l.Reservations(bg, ledger.Scope{})
	for name, err := range calls {
		if !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if r := revision(t, l); r != 0 {
		t.Fatalf("revision after refused calls = %d, want 0", r)
	}
}

func pin(s ledger.Scope, op string, gen int64, account string) cataloguestore.OperationPin {
	return cataloguestore.OperationPin{Scope: s, OperationID: op, CapabilityID: "ns.cap@1.0.0", Provider: provA, Generation: gen,
		BindingDigest: Digest(fmt.Sprint("binding", gen)), ManifestDigest: Digest(fmt.Sprint("manifest", gen)), Account: account}
}

func testPins(t *testing.T, l CatalogueLedger) {
	if _, err := l.OperationPin(bg, scopeA, "op1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("OperationPin before any: err = %v, want ErrNotFound", err)
	}
	first := pin(scopeA, "op1", 1, "acct")
	got, err := l.PinOperation(bg, first)
	if err != nil {
		t.Fatalf("PinOperation: %v", err)
	}
	diff(t, "pin", got, first)
	got, err = l.PinOperation(bg, pin(scopeA, "op1", 2, ""))
	if err != nil {
		t.Fatalf("PinOperation again: %v", err)
	}
	diff(t, "second pin answers the first", got, first)
	if got, err := l.OperationPin(bg, scopeA, "op1"); err != nil {
		t.Fatalf("OperationPin: %v", err)
	} else {
		diff(t, "OperationPin", got, first)
	}
	if _, err := l.OperationPin(bg, scopeB, "op1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("OperationPin in another scope: err = %v, want ErrNotFound", err)
	}
	// Racing pins: one wins, every caller is answered with it.
	const n = 8
	answers := make([]cataloguestore.OperationPin, n)
	parallel(n, func(i int) {
		var err error
		answers[i], err = l.PinOperation(bg, pin(scopeA, "op2", int64(i+1), ""))
		if err != nil {
			t.Errorf("racing PinOperation %d: %v", i, err)
		}
	})
	for i := range n {
		diff(t, fmt.Sprintf("racing pin %d", i), answers[i], answers[0])
	}
}

func testConsent(t *testing.T, l CatalogueLedger) {
	got, err := l.GrantConsent(bg, cataloguestore.Consent{Scope: scopeA, Account: "work", Capabilities: []string{"b@1", "a@1", "b@1"},
		Credentials: []string{"gmail"}, EffectKinds: []string{"write", "read"}})
	if err != nil {
		t.Fatalf("GrantConsent: %v", err)
	}
	want := cataloguestore.Consent{Scope: scopeA, Account: "work", Capabilities: []string{"a@1", "b@1"}, Credentials: []string{"gmail"},
		Services: []string{}, EffectKinds: []string{"read", "write"}, EffectOperations: []string{}}
	diff(t, "granted", got, want)
	got, err = l.GrantConsent(bg, cataloguestore.Consent{Scope: scopeA, Account: "work", Services: []string{"mail"}, EffectOperations: []string{"send"}})
	if err != nil {
		t.Fatalf("GrantConsent more: %v", err)
	}
	want.Services, want.EffectOperations = []string{"mail"}, []string{"send"}
	diff(t, "granted more", got, want)
	if _, err := l.GrantConsent(bg, cataloguestore.Consent{Scope: scopeA, Account: "home", Capabilities: []string{"a@1"}}); err != nil {
		t.Fatalf("GrantConsent home: %v", err)
	}
	if _, err := l.GrantConsent(bg, cataloguestore.Consent{Scope: scopeB, Account: "other", Capabilities: []string{"a@1"}}); err != nil {
		t.Fatalf("GrantConsent other scope: %v", err)
	}
	got, err = l.RevokeConsent(bg, cataloguestore.Consent{Scope: scopeA, Account: "work", Credentials: []string{"gmail", "never-granted"}, Capabilities: []string{"a@1"}})
	if err != nil {
		t.Fatalf("RevokeConsent: %v", err)
	}
	want.Credentials, want.Capabilities = []string{}, []string{"b@1"}
	diff(t, "revoked", got, want)
	all, err := l.Consents(bg, scopeA)
	if err != nil {
		t.Fatalf("Consents: %v", err)
	}
	home := cataloguestore.Consent{Scope: scopeA, Account: "home", Capabilities: []string{"a@1"}, Credentials: []string{}, Services: []string{},
		EffectKinds: []string{}, EffectOperations: []string{}}
	diff(t, "consents", all, []cataloguestore.Consent{home, want})
	// Revoking everything removes the account's consent.
	if _, err := l.RevokeConsent(bg, home); err != nil {
		t.Fatalf("RevokeConsent all: %v", err)
	}
	all, err = l.Consents(bg, scopeA)
	if err != nil {
		t.Fatalf("Consents: %v", err)
	}
	diff(t, "consents after revoking home", all, []cataloguestore.Consent{want})
}

func claim(key string, shared bool) cataloguestore.Claim {
	return cataloguestore.Claim{Key: key, Shared: shared, CapabilityID: "ns.cap@1.0.0"}
}

func wantReserved(t testing.TB, what string, err error, holder ledger.Fence) {
	t.Helper()
	var re *cataloguestore.ReservationError
	if !errors.As(err, &re) || !errors.Is(err, cataloguestore.ErrReserved) {
		t.Fatalf("%s: err = %v, want a *cataloguestore.ReservationError wrapping ErrReserved", what, err)
	}
	if re.Holder.Holder != holder {
		t.Fatalf("%s: holder %+v, want %+v", what, re.Holder.Holder, holder)
	}
}

func mustReserve(t testing.TB, l CatalogueLedger, f ledger.Fence, claims ...cataloguestore.Claim) []cataloguestore.Reservation {
	t.Helper()
	rs, err := l.Reserve(bg, f, claims)
	if err != nil {
		t.Fatalf("Reserve(%s, %v): %v", f.OperationID, claims, err)
	}
	return rs
}

func reservations(t testing.TB, l CatalogueLedger, s ledger.Scope) []cataloguestore.Reservation {
	t.Helper()
	rs, err := l.Reservations(bg, s)
	if err != nil {
		t.Fatalf("Reservations: %v", err)
	}
	return rs
}

func testReservations(t *testing.T, l CatalogueLedger) {
	f1, f2, f3 := newOp(t, l, "op1", 0), newOp(t, l, "op2", 0), newOp(t, l, "op3", 0)
	rs := mustReserve(t, l, f1, claim("k1", false), claim("p", true))
	dl := spec(scopeA, "op1", 0).Deadline
	want := []cataloguestore.Reservation{{Claim: claim("k1", false), Holder: f1, Deadline: dl}, {Claim: claim("p", true), Holder: f1, Deadline: dl}}
	diff(t, "Reserve", rs, want)
	diff(t, "Reserve again (idempotent)", mustReserve(t, l, f1, claim("k1", false), claim("p", true)), want)
	_, err := l.Reserve(bg, f2, []cataloguestore.Claim{claim("k2", false), claim("k1", false)})
	wantReserved(t, "exclusive claim of a held key", err, f1)
	// All or none: k2 was not taken.
	diff(t, "HeldBy f2 after a refusal", heldBy(t, l, f2), []cataloguestore.Reservation{})
	_, err = l.Reserve(bg, f2, []cataloguestore.Claim{claim("k1", true)})
	wantReserved(t, "shared claim of an exclusively held key", err, f1)
	_, err = l.Reserve(bg, f2, []cataloguestore.Claim{claim("p", false)})
	wantReserved(t, "exclusive claim of a shared key", err, f1)
	mustReserve(t, l, f2, claim("p", true), claim("k2", false))
	mustReserve(t, l, f3, claim("p", true))
	if got := reservations(t, l, scopeA); len(got) != 5 {
		t.Fatalf("Reservations = %+v, want 5", got)
	}
	if got := reservations(t, l, scopeB); len(got) != 0 {
		t.Fatalf("Reservations of another scope = %+v", got)
	}
	// A key is per scope.
	mustCreate(t, l, spec(scopeB, "op1", 0))
	fb := mustStart(t, l, scopeB, "op1", "a1")
	mustReserve(t, l, fb, claim("k1", false))
	diff(t, "HeldBy f1", heldBy(t, l, f1), want)
	n, err := l.Release(bg, f1)
	if err != nil || n != 2 {
		t.Fatalf("Release f1 = %d, %v; want 2", n, err)
	}
	if n, err := l.Release(bg, f1); err != nil || n != 0 {
		t.Fatalf("Release f1 again = %d, %v; want 0", n, err)
	}
	diff(t, "HeldBy after release", heldBy(t, l, f1), []cataloguestore.Reservation{})
	mustReserve(t, l, f2, claim("k1", false))
	_, err = l.Reserve(bg, f3, []cataloguestore.Claim{claim("p", false)})
	wantReserved(t, "exclusive claim with two shared holders", err, f2)
}

func heldBy(t testing.TB, l CatalogueLedger, f ledger.Fence) []cataloguestore.Reservation {
	t.Helper()
	rs, err := l.HeldBy(bg, f)
	if err != nil {
		t.Fatalf("HeldBy: %v", err)
	}
	return rs
}

func testReservationLiveness(t *testing.T, l CatalogueLedger) {
	f1, f2 := newOp(t, l, "op1", 0), newOp(t, l, "op2", 0)
	mustReserve(t, l, f1, claim("k", false))
	// The holder's next attempt frees it, without any release.
	f1b := mustStart(t, l, scopeA, "op1", "a2")
	diff(t, "HeldBy a fenced-off attempt", heldBy(t, l, f1), []cataloguestore.Reservation{})
	_, err := l.Reserve(bg, f1, []cataloguestore.Claim{claim("k", false)})
	wantStale(t, "Reserve with a stale fence", err)
	mustReserve(t, l, f2, claim("k", false))
	_, err = l.Reserve(bg, f1b, []cataloguestore.Claim{claim("k", false)})
	wantReserved(t, "the new attempt waits like any other", err, f2)
	// Cancelling the holder's operation frees it.
	if _, err := l.Cancel(bg, scopeA, "op2", "test"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	mustReserve(t, l, f1b, claim("k", false))
	_, err = l.Reserve(bg, f2, []cataloguestore.Claim{claim("other", false)})
	wantErr(t, "Reserve for a cancelled operation", err, ledger.ErrOperationCancelled)
	// Accepting the holder's result frees it.
	ready(t, l, f1b)
	if _, err := l.AcceptResult(bg, f1b, Digest("data"), []byte("{}")); err != nil {
		t.Fatalf("AcceptResult: %v", err)
	}
	f3 := newOp(t, l, "op3", 0)
	mustReserve(t, l, f3, claim("k", false))
	_, err = l.Reserve(bg, f1b, []cataloguestore.Claim{claim("k", false)})
	wantErr(t, "Reserve for a completed operation", err, ledger.ErrResultAlreadyAccepted)
	_, err = l.Reserve(bg, ledger.Fence{Scope: scopeA, OperationID: "nope", AttemptID: "a1", Generation: 1}, []cataloguestore.Claim{claim("k", false)})
	wantErr(t, "Reserve for an unknown operation", err, ledger.ErrNotFound)
	// The holder's deadline frees it.
	sp := spec(scopeA, "op4", 0)
	sp.Deadline = time.Now().Add(300 * time.Millisecond)
	mustCreate(t, l, sp)
	f4 := mustStart(t, l, scopeA, "op4", "a1")
	mustReserve(t, l, f4, claim("d", false))
	f5 := newOp(t, l, "op5", 0)
	if _, err := l.Reserve(bg, f5, []cataloguestore.Claim{claim("d", false)}); err != nil {
		// Taken before the deadline: held until it passes.
		wantReserved(t, "before the holder's deadline", err, f4)
		for time.Now().Before(sp.Deadline.Add(10 * time.Millisecond)) {
			time.Sleep(time.Until(sp.Deadline.Add(10 * time.Millisecond)))
		}
		mustReserve(t, l, f5, claim("d", false))
	}
	_, err = l.Reserve(bg, f4, []cataloguestore.Claim{claim("e", false)})
	wantErr(t, "Reserve past the operation's deadline", err, ledger.ErrDeadlineExceeded)
	diff(t, "HeldBy past the deadline", heldBy(t, l, f4), []cataloguestore.Reservation{})
	// Releasing a dead holder's records is still allowed and counted.
	if n, err := l.Release(bg, f4); err != nil || n > 1 {
		t.Fatalf("Release of an expired holder = %d, %v", n, err)
	}
}

func testRacingReservations(t *testing.T, l CatalogueLedger) {
	const n = 12
	fences := make([]ledger.Fence, n)
	for i := range n {
		fences[i] = newOp(t, l, fmt.Sprintf("op%02d", i), 0)
	}
	for round := range 3 {
		key := fmt.Sprintf("k%d", round)
		errs := make([]error, n)
		parallel(n, func(i int) { _, errs[i] = l.Reserve(bg, fences[i], []cataloguestore.Claim{claim(key, false)}) })
		winners := 0
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
			case errors.Is(err, cataloguestore.ErrReserved):
			default:
				t.Fatalf("round %d, Reserve %d: %v", round, i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d holders of one exclusive key", round, winners)
		}
		// Shared claims all win together.
		skey := fmt.Sprintf("s%d", round)
		parallel(n, func(i int) { _, errs[i] = l.Reserve(bg, fences[i], []cataloguestore.Claim{claim(skey, true)}) })
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, shared Reserve %d: %v", round, i, err)
			}
		}
		for _, f := range fences {
			if _, err := l.Release(bg, f); err != nil {
				t.Fatalf("Release: %v", err)
			}
		}
	}
	if got := reservations(t, l, scopeA); len(got) != 0 {
		t.Fatalf("Reservations after every release = %+v", got)
	}
}
