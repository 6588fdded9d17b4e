package catalogue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

func echo(t testing.TB, description string) manifest.CapabilityManifest {
	m := capManifest(t, "example.echo@1.0.0", "parallel_safe", nil, nil, nil)
	m.Description = description
	return m
}

func wantGeneration(t testing.TB, what string, err error, presented, latest int64) {
	t.Helper()
	var ge *cataloguestore.GenerationError
	if !errors.As(err, &ge) || !errors.Is(err, cataloguestore.ErrStaleGeneration) {
		t.Fatalf("%s: err = %v, want a *cataloguestore.GenerationError", what, err)
	}
	if ge.Presented != presented || ge.Latest != latest {
		t.Fatalf("%s: presented %d latest %d, want %d and %d", what, ge.Presented, ge.Latest, presented, latest)
	}
}

// TestGenerations: generations strictly increase per provider; a lower or
// equal one is refused, and so is a binding the host's discovery does not
// confirm, or one that fails manifest validation; nothing refused is
// recorded.
func TestGenerations(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := b.open(t)
		c := newCatalogue(t, s)
		a1 := catalogue.Admission{Binding: binding(t, 1, echo(t, "one")), Audience: everyone("org-a")}
		g1 := mustAdmit(t, c, a1)
		if g1.Generation != 1 || g1.ManifestDigest != a1.Binding.ManifestDigest || g1.AdmittedAt.IsZero() {
			t.Fatalf("Admit = %+v", g1)
		}
		again := mustAdmit(t, c, a1)
		diff(t, "the same admission again", again.AdmittedAt, g1.AdmittedAt)

		_, err := c.Admit(bg, catalogue.Admission{Binding: binding(t, 1, echo(t, "other")), Audience: everyone("org-a")})
		wantGeneration(t, "an equal generation with another binding", err, 1, 1)

		lying, err := catalogue.New(catalogue.Config{Store: s, Discover: func(context.Context, manifest.ProviderBinding) (canon.Digest, error) {
			return canon.Sum([]byte("another inventory")), nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = lying.Admit(bg, catalogue.Admission{Binding: binding(t, 2, echo(t, "two")), Audience: everyone("org-a")})
		wantIs(t, "a binding the host's discovery contradicts", err, catalogue.ErrDiscoveryDisagrees)
		failing, err := catalogue.New(catalogue.Config{Store: s, Discover: func(context.Context, manifest.ProviderBinding) (canon.Digest, error) {
			return "", errors.New("the host exited 8")
		}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = failing.Admit(bg, catalogue.Admission{Binding: binding(t, 2, echo(t, "two")), Audience: everyone("org-a")})
		wantIs(t, "a binding whose discovery fails", err, catalogue.ErrDiscoveryDisagrees)

		bad := binding(t, 2, echo(t, "two"))
		bad.ManifestDigest = canon.Sum([]byte("wrong"))
		_, err = c.Admit(bg, catalogue.Admission{Binding: bad, Audience: everyone("org-a")})
		wantIs(t, "a binding whose digest is wrong", err, catalogue.ErrInvalidAdmission)
		_, err = c.Admit(bg, catalogue.Admission{Binding: binding(t, 2, echo(t, "two")),
			CapabilityAudience: map[string][]catalogue.Audience{"example.nope@1.0.0": everyone("org-a")}})
		wantIs(t, "an audience for a capability the binding lacks", err, catalogue.ErrInvalidAdmission)
		_, err = c.Admit(bg, catalogue.Admission{Binding: binding(t, 2, echo(t, "two")), Audience: []catalogue.Audience{{}}})
		wantIs(t, "an audience without organization", err, catalogue.ErrInvalidAdmission)
		_, err = c.Admit(bg, catalogue.Admission{Binding: otherProvider(t, 1, echo(t, "mine")), Audience: everyone("org-a")})
		wantIs(t, "a capability id another provider holds", err, catalogue.ErrCapabilityTaken)

		g3 := mustAdmit(t, c, catalogue.Admission{Binding: binding(t, 3, echo(t, "three")), Audience: everyone("org-a")})
		_, err = c.Admit(bg, catalogue.Admission{Binding: binding(t, 2, echo(t, "two")), Audience: everyone("org-a")})
		wantGeneration(t, "a lower generation", err, 2, 3)

		gens, err := c.Generations(bg, g1.Provider)
		if err != nil {
			t.Fatal(err)
		}
		if len(gens) != 2 || gens[0].Generation != 1 || gens[1].Generation != 3 || gens[1].BindingDigest != g3.BindingDigest {
			t.Fatalf("Generations = %+v, want 1 and 3", gens)
		}
		provs, err := c.Providers(bg)
		if err != nil {
			t.Fatal(err)
		}
		if len(provs) != 1 || provs[0].Generation != 3 || provs[0].Binding.Manifests[0].Description != "three" {
			t.Fatalf("Providers = %+v, want generation 3 alone", provs)
		}
	})
}

// TestNewGenerationKeepsRunningOperations: an operation pinned to a
// generation keeps its exact binding and manifest digest after a newer
// generation is admitted; a new operation gets the newer one.
func TestNewGenerationKeepsRunningOperations(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := b.open(t)
		c := newCatalogue(t, s)
		g1 := mustAdmit(t, c, catalogue.Admission{Binding: binding(t, 1, echo(t, "one")), Audience: everyone("org-a")})
		p1, err := c.Prepare(bg, catalogue.Request{Scope: scopeA, OperationID: "op-1", CapabilityID: "example.echo@1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		newOperation(t, s, scopeA, "op-1", p1, farFuture())
		g2 := mustAdmit(t, c, catalogue.Admission{Binding: binding(t, 2, echo(t, "two")), Audience: everyone("org-a")})
		if g1.ManifestDigest == g2.ManifestDigest {
			t.Fatal("the generations' inventories should differ")
		}
		// A retry of op-1 (another attempt, maybe another controller)
		// gets generation 1, whole.
		again, err := c.Prepare(bg, catalogue.Request{Scope: scopeA, OperationID: "op-1", CapabilityID: "example.echo@1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		diff(t, "the running operation's binding", again.Binding, g1.Binding)
		if again.Pin.Generation != 1 || again.Pin.ManifestDigest != g1.ManifestDigest || again.Pin.BindingDigest != g1.BindingDigest {
			t.Fatalf("pin %+v, want generation 1", again.Pin)
		}
		op, err := s.Operation(bg, scopeA, "op-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckAdmission(bg, op.Operation); err != nil {
			t.Fatalf("CheckAdmission of the operation on generation 1: %v", err)
		}
		p2, err := c.Prepare(bg, catalogue.Request{Scope: scopeA, OperationID: "op-2", CapabilityID: "example.echo@1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		diff(t, "a new operation's binding", p2.Binding, g2.Binding)
		if p2.Manifest.Description != "two" || again.Manifest.Description != "one" {
			t.Fatalf("manifests %q and %q, want one and two", again.Manifest.Description, p2.Manifest.Description)
		}
		// The view shows the current generation only.
		v, err := c.View(bg, scopeA)
		if err != nil {
			t.Fatal(err)
		}
		if caps := v.Capabilities(); len(caps) != 1 || caps[0].Generation != 2 {
			t.Fatalf("view %+v, want generation 2", caps)
		}
	})
}

// TestConcurrentAdmissions: controllers (separate catalogues, on separate
// ledger handles where the backend has them) admitting the same
// generations at once end with one winner per generation number, and the
// recorded binding is the winner's.
func TestConcurrentAdmissions(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const controllers, gens = 6, 5
		s := b.open(t)
		cats := make([]*catalogue.Catalogue, controllers)
		for i := range cats {
			st := s
			if b.second != nil && i%2 == 1 {
				st = b.second(t, s)
			}
			cats[i] = newCatalogue(t, st)
		}
		won := make([][]catalogue.Generation, controllers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range controllers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				won[i] = make([]catalogue.Generation, gens+1)
				for g := int64(1); g <= gens; g++ {
					got, err := cats[i].Admit(bg, catalogue.Admission{Binding: binding(t, g, echo(t, fmt.Sprintf("controller %d generation %d", i, g))),
						Audience: everyone("org-a")})
					switch {
					case err == nil:
						won[i][g] = got
					case !errors.Is(err, cataloguestore.ErrStaleGeneration):
						t.Errorf("controller %d generation %d: %v", i, g, err)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		for g := int64(1); g <= gens; g++ {
			var winners []int
			for i := range controllers {
				if won[i][g].Generation == g {
					winners = append(winners, i)
				}
			}
			if len(winners) > 1 {
				t.Fatalf("generation %d admitted by controllers %v", g, winners)
			}
			rec, err := cats[0].Generation(bg, demoProvider, g)
			if len(winners) == 0 {
				if err == nil {
					t.Fatalf("generation %d recorded with no winner", g)
				}
				continue
			}
			if err != nil || rec.BindingDigest != won[winners[0]][g].BindingDigest {
				t.Fatalf("generation %d recorded %+v, %v; the winner admitted %s", g, rec.BindingDigest, err, won[winners[0]][g].BindingDigest)
			}
		}
	})
}
