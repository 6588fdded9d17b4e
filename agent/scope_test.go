package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/agent/mcpserver"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// scopedProvider is one provider of the scope test: its capabilities and
// who may see each.
type scopedProvider struct {
	factory  string
	caps     []manifest.CapabilityManifest
	audience []catalogue.Audience
	// only overrides the audience of some capabilities.
	only map[string][]catalogue.Audience
}

// visible reports whether scope s sees capability id of p, as the
// catalogue documents audiences (an empty project means the whole
// organization).
func (p scopedProvider) visible(id string, s ledger.Scope) bool {
	aud, ok := p.only[id]
	if !ok {
		aud = p.audience
	}
	return slices.ContainsFunc(aud, func(a catalogue.Audience) bool {
		return a.OrganizationID == s.OrganizationID && (a.ProjectID == "" || a.ProjectID == s.ProjectID)
	})
}

func scopeProviders(t *testing.T) []scopedProvider {
	orgA := catalogue.Audience{OrganizationID: "org-a"}
	orgB := catalogue.Audience{OrganizationID: "org-b"}
	a1 := catalogue.Audience{OrganizationID: "org-a", ProjectID: "proj-1"}
	b1 := catalogue.Audience{OrganizationID: "org-b", ProjectID: "proj-1"}
	return []scopedProvider{
		{factory: "alpha:factory", audience: []catalogue.Audience{orgA}, caps: []manifest.CapabilityManifest{
			echoManifest(t, "mail.send@1.0.0", "Sends mail to one recipient", "mail", "write"),
			echoManifest(t, "mail.read@1.0.0", "Reads the inbox", "mail"),
		}},
		{factory: "beta:factory", audience: []catalogue.Audience{b1}, caps: []manifest.CapabilityManifest{
			echoManifest(t, "secret.mail.export@1.0.0", "Exports every mailbox of the organization", "mail", "secret"),
			echoManifest(t, "secret.payroll@1.0.0", "Runs the payroll", "finance"),
		}},
		{factory: "gamma:factory", audience: []catalogue.Audience{orgA, orgB},
			only: map[string][]catalogue.Audience{
				"shared.mail.audit@1.0.0": {orgB},
				"shared.calendar@1.0.0":   {a1},
			},
			caps: []manifest.CapabilityManifest{
				echoManifest(t, "shared.notes@1.0.0", "Writes notes; can mail them", "notes"),
				echoManifest(t, "shared.mail.audit@1.0.0", "Audits who read which mail", "mail", "secret"),
				echoManifest(t, "shared.calendar@1.0.0", "Creates calendar events", "calendar"),
			}},
	}
}

// admissionsFor returns the admissions of the full catalogue (everything,
// with its audiences), or, for a scope, of a catalogue holding only what
// that scope sees there: in it, the ids the scope cannot see do not exist.
func admissionsFor(t *testing.T, ps []scopedProvider, only *ledger.Scope) []catalogue.Admission {
	var out []catalogue.Admission
	for _, p := range ps {
		if only == nil {
			out = append(out, catalogue.Admission{Binding: binding(t, p.factory, 1, p.caps...), Audience: p.audience,
				CapabilityAudience: p.only})
			continue
		}
		var ms []manifest.CapabilityManifest
		for _, m := range p.caps {
			if p.visible(m.ID.String(), *only) {
				ms = append(ms, m)
			}
		}
		if len(ms) > 0 {
			out = append(out, catalogue.Admission{Binding: binding(t, p.factory, 1, ms...),
				Audience: []catalogue.Audience{{OrganizationID: only.OrganizationID, ProjectID: only.ProjectID}}})
		}
	}
	return out
}

// answer is what one call returned, as bytes: the value's JSON, or the
// error's text.
func answer(v any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, jerr := json.Marshal(v)
	if jerr != nil {
		return "marshal: " + jerr.Error()
	}
	return string(b)
}

// mcpClient connects an in-process MCP client to a server for scope.
func mcpClient(t *testing.T, f *agent.Facade, scope ledger.Scope) *mcp.ClientSession {
	t.Helper()
	srv, err := mcpserver.New(f, scope, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := testCtx(t)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "scope-test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool returns the tool result's JSON, or the protocol error.
func callTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) string {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "protocol error: " + err.Error()
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "marshal: " + err.Error()
	}
	return string(b)
}

// TestScope is the scope table test: for every scope, every capability id
// of the catalogue (visible there or not) and ids that exist nowhere,
// search, describe and run are answered, through the facade and through
// the MCP server, exactly as in a catalogue where the ids the scope cannot
// see were never admitted; byte for byte. An invisible id's run records
// nothing.
func TestScope(t *testing.T) {
	noLeaks(t)
	ps := scopeProviders(t)
	var allIDs []string
	for _, p := range ps {
		for _, m := range p.caps {
			allIDs = append(allIDs, m.ID.String())
		}
	}
	ids := append(slices.Clone(allIDs), "nowhere.thing@1.0.0", "mail.send@9.9.9", "secret.payroll@1.0.1")
	queries := []string{"", "mail", "secret", "MAIL export", "payroll", "notes", "shared", "calendar", "audit", "1.0.0", "nothing-matches"}
	full := newWorld(t, agent.Config{}, admissionsFor(t, ps, nil)...)

	scopes := []ledger.Scope{
		{OrganizationID: "org-a", ProjectID: "proj-1"},
		{OrganizationID: "org-a", ProjectID: "proj-2"},
		{OrganizationID: "org-b", ProjectID: "proj-1"},
		{OrganizationID: "org-c", ProjectID: "proj-1"},
	}
	for _, scope := range scopes {
		t.Run(scope.OrganizationID+"/"+scope.ProjectID, func(t *testing.T) {
			ctx := testCtx(t)
			alone := newWorld(t, agent.Config{}, admissionsFor(t, ps, &scope)...)
			worlds := []*world{full, alone}
			clients := []*mcp.ClientSession{mcpClient(t, full.f, scope), mcpClient(t, alone.f, scope)}
			visible := map[string]bool{}
			for _, p := range ps {
				for _, m := range p.caps {
					visible[m.ID.String()] = p.visible(m.ID.String(), scope)
				}
			}

			// search: every page of every query at several page sizes.
			for _, q := range queries {
				for _, limit := range []int{1, 2, 100} {
					var pages [2][]string
					for w, wd := range worlds {
						cursor := ""
						for range 20 {
							page, err := wd.f.Search(ctx, scope, agent.SearchRequest{Query: q, Cursor: cursor, Limit: limit})
							pages[w] = append(pages[w], answer(page, err))
							for _, c := range page.Capabilities {
								if !visible[c.CapabilityID] {
									t.Errorf("search %q lists %s, which the scope cannot see", q, c.CapabilityID)
								}
							}
							if cursor = page.NextCursor; err != nil || cursor == "" {
								break
							}
						}
						args := map[string]any{"query": q, "limit": limit}
						pages[w] = append(pages[w], callTool(ctx, clients[w], "search", args))
					}
					if !slices.Equal(pages[0], pages[1]) {
						t.Errorf("search %q limit %d differs from a catalogue without what the scope cannot see:\n%q\n%q", q, limit, pages[0], pages[1])
					}
				}
			}

			for i, id := range ids {
				// describe
				var got [2][]string
				for w, wd := range worlds {
					d, err := wd.f.Describe(ctx, scope, id)
					got[w] = append(got[w], answer(d, err), callTool(ctx, clients[w], "describe", map[string]any{"capability_id": id}))
				}
				if got[0][0] != got[1][0] || got[0][1] != got[1][1] {
					t.Errorf("describe %s differs:\n%q\n%q", id, got[0], got[1])
				}
				if visible[id] != !strings.HasPrefix(got[0][0], "error: ") {
					t.Errorf("describe %s (visible %v) = %s", id, visible[id], got[0][0])
				}
				if !visible[id] && !errors.Is(describeErr(ctx, full.f, scope, id), catalogue.ErrUnknownCapability) {
					t.Errorf("describe %s: not catalogue.ErrUnknownCapability", id)
				}

				// run, with the same operation id in both catalogues.
				args := map[string]any{"text": "hello " + id}
				var runs [2][]string
				for w, wd := range worlds {
					op := fmt.Sprintf("op-%d", i)
					res, err := wd.f.Run(ctx, scope, agent.RunRequest{CapabilityID: id, Arguments: args, OperationID: op})
					if visible[id] {
						if err != nil || res.State != launch.StateSucceeded || string(res.Artifact) != `{"text":"hello `+id+`"}` {
							t.Errorf("run %s (visible): %+v, %v", id, res, err)
						}
						res.ArtifactRef, res.Outcome = "", nil
					} else {
						for _, err := range []error{
							func() error { _, err := wd.l.Operation(ctx, scope, op); return err }(),
							func() error { _, err := wd.l.OperationPin(ctx, scope, op); return err }(),
						} {
							if !errors.Is(err, ledger.ErrNotFound) {
								t.Errorf("run %s (invisible) left a record of operation %s: %v", id, op, err)
							}
						}
					}
					runs[w] = append(runs[w], answer(res, err))
					if !visible[id] {
						runs[w] = append(runs[w], callTool(ctx, clients[w], "run", map[string]any{"capability_id": id, "arguments": args}))
					}
				}
				if !slices.Equal(runs[0], runs[1]) {
					t.Errorf("run %s differs:\n%q\n%q", id, runs[0], runs[1])
				}
			}
		})
	}
}

func describeErr(ctx context.Context, f *agent.Facade, scope ledger.Scope, id string) error {
	_, err := f.Describe(ctx, scope, id)
	return err
}
