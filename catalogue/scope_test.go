package catalogue_test

import (
	"fmt"
	"testing"

	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// answers is everything a scope can learn about one capability id: the
// text of every answer, and the listing and count of its view.
type answers struct {
	Lookup, Prepare, PrepareAccount string
	Listing                         []string
	Count                           int
}

func ask(t *testing.T, c *catalogue.Catalogue, scope ledger.Scope, id string) answers {
	t.Helper()
	var a answers
	v, err := c.View(bg, scope)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v.Capabilities() {
		a.Listing = append(a.Listing, e.ID)
	}
	a.Count = len(v.Capabilities())
	_, err = v.Lookup(id)
	a.Lookup = fmt.Sprint(err)
	_, err = c.Prepare(bg, catalogue.Request{Scope: scope, OperationID: "op-" + id, CapabilityID: id})
	a.Prepare = fmt.Sprint(err)
	_, err = c.Prepare(bg, catalogue.Request{Scope: scope, OperationID: "op2-" + id, CapabilityID: id, Account: "work"})
	a.PrepareAccount = fmt.Sprint(err)
	return a
}

// TestScopeVisibility: outside its audience a capability does not exist:
// for every id, a scope that may not see it gets, from every method, the
// same bytes as from a catalogue where the id was never admitted; a scope
// that may see it finds it.
func TestScopeVisibility(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		all := []manifest.CapabilityManifest{
			capManifest(t, "example.echo@1.0.0", "parallel_safe", nil, nil, nil),
			capManifest(t, "example.secret@1.0.0", "parallel_safe", nil, nil, nil),
			capManifest(t, "example.locked@1.0.0", "parallel_safe", nil, []string{"vault"}, nil),
			capManifest(t, "example.hidden@1.0.0", "parallel_safe", nil, nil, nil),
		}
		orgAOnly := []catalogue.Audience{{OrganizationID: "org-a", ProjectID: "project-a"}}
		audience := map[string][]catalogue.Audience{
			"example.secret@1.0.0": orgAOnly, "example.locked@1.0.0": orgAOnly, "example.hidden@1.0.0": {}}
		// admitted is a catalogue of the inventory without the id left out.
		admitted := func(leftOut string) *catalogue.Catalogue {
			var ms []manifest.CapabilityManifest
			aud := map[string][]catalogue.Audience{}
			for _, m := range all {
				if id := m.ID.String(); id != leftOut {
					ms = append(ms, m)
					if a, ok := audience[id]; ok {
						aud[id] = a
					}
				}
			}
			c := newCatalogue(t, b.open(t))
			mustAdmit(t, c, catalogue.Admission{Binding: binding(t, 1, ms...), Audience: everyone("org-a", "org-b"), CapabilityAudience: aud})
			return c
		}
		full := admitted("")
		otherProject := ledger.Scope{OrganizationID: "org-a", ProjectID: "project-z"}

		for _, tt := range []struct {
			name    string
			scope   ledger.Scope
			id      string
			visible bool
		}{
			{"public to org-a", scopeA, "example.echo@1.0.0", true},
			{"public to org-b", scopeB, "example.echo@1.0.0", true},
			{"secret to its project", scopeA, "example.secret@1.0.0", true},
			{"secret to org-b", scopeB, "example.secret@1.0.0", false},
			{"secret to another project of org-a", otherProject, "example.secret@1.0.0", false},
			{"credentialed to org-b", scopeB, "example.locked@1.0.0", false},
			{"visible to nobody", scopeA, "example.hidden@1.0.0", false},
			{"never admitted", scopeB, "example.nothing@1.0.0", false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				got := ask(t, full, tt.scope, tt.id)
				if !tt.visible {
					diff(t, "answers for an invisible id (-never admitted +invisible)", got, ask(t, admitted(tt.id), tt.scope, tt.id))
					return
				}
				if got.Lookup != "<nil>" || got.Prepare != "<nil>" {
					t.Fatalf("a visible id: %+v", got)
				}
			})
		}
		// The credentialed capability, visible to its project, is known
		// there: it refuses for consent, not as unknown.
		if got := ask(t, full, scopeA, "example.locked@1.0.0"); got.Lookup != "<nil>" || got.Prepare == ask(t, admitted("example.locked@1.0.0"), scopeA, "example.locked@1.0.0").Prepare {
			t.Fatalf("the credentialed capability in its own scope: %+v", got)
		}
	})
}
