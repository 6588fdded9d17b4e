package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// words the generated capabilities and queries are made of, so that
// queries match some capabilities and not others.
var searchWords = []string{"mail", "send", "Calendar", "event", "read", "write", "Ünïcode", "x"}

func genDoc(t *rapid.T, id string) *doc {
	pick := rapid.SampledFrom(searchWords)
	m := manifest.CapabilityManifest{
		Description: strings.Join(rapid.SliceOfN(pick, 0, 4).Draw(t, "description"), " "),
		Tags:        rapid.SliceOfNDistinct(pick, 0, 3, rapid.ID[string]).Draw(t, "tags"),
		Metadata:    map[string]any{},
	}
	if rapid.Bool().Draw(t, "titled") {
		m.Metadata["title"] = strings.Join(rapid.SliceOfN(pick, 1, 2).Draw(t, "title"), " ")
	}
	return newDoc(id, &m)
}

func genID(t *rapid.T, label string) string {
	ns := rapid.SampledFrom([]string{"mail", "calendar", "files", "a.b"}).Draw(t, label+".ns")
	name := rapid.SampledFrom([]string{"send", "read", "event", "list", "x"}).Draw(t, label+".name")
	return fmt.Sprintf("%s.%s@1.%d.0", ns, name, rapid.IntRange(0, 3).Draw(t, label+".minor"))
}

func genDocs(t *rapid.T, label string) []*doc {
	ids := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) string { return genID(t, "id") }), 0, 40, rapid.ID[string]).Draw(t, label)
	slices.Sort(ids)
	docs := make([]*doc, len(ids))
	for i, id := range ids {
		docs[i] = genDoc(t, id)
	}
	return docs
}

// reference is the order search must produce: every match, sorted by score
// then id, computed the slow way.
func reference(docs []*doc, q query) []string {
	var hits []hit
	for _, d := range docs {
		if s, ok := q.score(d); ok {
			hits = append(hits, hit{score: s, d: d})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.d.sum.CapabilityID
	}
	return ids
}

// pageThrough follows cursors from the first page to the last.
func pageThrough(t *rapid.T, docs []*doc, scope ledger.Scope, q query, limit int) []string {
	var got []string
	var from *position
	for range len(docs) + 2 {
		page, more := search(newDocSet(docs), q, from, limit)
		if len(page) > limit {
			t.Fatalf("page of %d for limit %d", len(page), limit)
		}
		for _, h := range page {
			got = append(got, h.d.sum.CapabilityID)
		}
		if !more {
			return got
		}
		if len(page) == 0 {
			t.Fatalf("an empty page says more follow")
		}
		last := page[len(page)-1]
		c := encodeCursor(scope, q, position{score: last.score, id: last.d.sum.CapabilityID})
		p, err := decodeCursor(c, scope, q)
		if err != nil {
			t.Fatalf("decoding our own cursor: %v", err)
		}
		from = &p
	}
	t.Fatalf("paging did not end")
	return nil
}

// TestSearchPagesProperty checks, over random catalogues and queries, that
// following cursors yields exactly the reference order (every match once,
// in order, pages of at most limit), whatever the page size.
func TestSearchPagesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		docs := genDocs(t, "docs")
		q, err := parseQuery(strings.Join(rapid.SliceOfN(rapid.SampledFrom(append(searchWords, "MAIL.SEND", "1.2", "@")), 0, 3).Draw(t, "query"), " "))
		if err != nil {
			t.Fatal(err)
		}
		limit := rapid.IntRange(1, 7).Draw(t, "limit")
		scope := ledger.Scope{OrganizationID: "org", ProjectID: "p"}
		want := reference(docs, q)
		got := pageThrough(t, docs, scope, q, limit)
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("paged results differ from the reference order (-want +got):\n%s", diff)
		}
	})
}

// TestSearchCursorAcrossChanges checks what a keyset cursor promises when
// the catalogue changes between two pages: a capability present and
// unchanged before and after is never repeated nor skipped, and the second
// page holds exactly the matches of the new catalogue that come after the
// cursor. A capability removed and added again with other content is a
// changed one: its score, and so its place, may move past the cursor, and
// it may then be listed again.
func TestSearchCursorAcrossChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		before := genDocs(t, "before")
		q, _ := parseQuery(rapid.SampledFrom([]string{"", "mail", "e", "read x"}).Draw(t, "query"))
		limit := rapid.IntRange(1, 5).Draw(t, "limit")
		first, more := search(newDocSet(before), q, nil, limit)
		if !more {
			return
		}
		last := first[len(first)-1]
		from := position{score: last.score, id: last.d.sum.CapabilityID}
		// The catalogue changes: some documents go, others come.
		var after []*doc
		for _, d := range before {
			if rapid.Bool().Draw(t, "keep "+d.sum.CapabilityID) {
				after = append(after, d)
			}
		}
		for _, d := range genDocs(t, "added") {
			if !slices.ContainsFunc(after, func(e *doc) bool { return e.sum.CapabilityID == d.sum.CapabilityID }) {
				after = append(after, d)
			}
		}
		slices.SortFunc(after, func(a, b *doc) int { return strings.Compare(a.sum.CapabilityID, b.sum.CapabilityID) })
		second, _ := search(newDocSet(after), q, &from, len(after)+1)
		seen := map[string]*doc{}
		for _, h := range first {
			seen[h.d.sum.CapabilityID] = h.d
		}
		var want []string
		for _, id := range reference(after, q) {
			d := after[slices.IndexFunc(after, func(d *doc) bool { return d.sum.CapabilityID == id })]
			s, _ := q.score(d)
			if (hit{score: s, d: d}).after(from) {
				want = append(want, id)
			}
		}
		var got []string
		for _, h := range second {
			if seen[h.d.sum.CapabilityID] == h.d {
				t.Fatalf("%s, unchanged, repeated on the second page", h.d.sum.CapabilityID)
			}
			got = append(got, h.d.sum.CapabilityID)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("second page (-want +got):\n%s", diff)
		}
	})
}

func TestSearchRanking(t *testing.T) {
	mk := func(id, desc string, tags ...string) *doc {
		return newDoc(id, &manifest.CapabilityManifest{Description: desc, Tags: tags})
	}
	docs := []*doc{
		mk("calendar.event.create@1.0.0", "Creates an event; can send mail invitations"),
		mk("mail.read@1.0.0", "Reads mail"),
		mk("mail.send@1.0.0", "Sends one message"),
		mk("notes.write@1.0.0", "Writes a note", "mail"),
	}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"", []string{"calendar.event.create@1.0.0", "mail.read@1.0.0", "mail.send@1.0.0", "notes.write@1.0.0"}},
		// id (8) before tag (2) before description (1).
		{"MAIL", []string{"mail.read@1.0.0", "mail.send@1.0.0", "notes.write@1.0.0", "calendar.event.create@1.0.0"}},
		// Every word must match somewhere.
		{"mail send", []string{"mail.send@1.0.0", "calendar.event.create@1.0.0"}},
		// The exact id first, whatever else matches.
		{"mail.send@1.0.0", []string{"mail.send@1.0.0"}},
		{"nothing", nil},
	} {
		q, err := parseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := search(newDocSet(docs), q, nil, MaxPageSize)
		var got []string
		for _, h := range page {
			got = append(got, h.d.sum.CapabilityID)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("query %q (-want +got):\n%s", tt.query, diff)
		}
	}
}

func TestParseQueryRefuses(t *testing.T) {
	for _, q := range []string{
		strings.Repeat("a", MaxQueryBytes+1),
		distinctWords(MaxQueryTerms + 1),
		"bad \xff utf-8",
		"nul\x00",
	} {
		if _, err := parseQuery(q); !errors.Is(err, ErrInvalidCall) {
			t.Errorf("parseQuery(%.20q...) = %v, want ErrInvalidCall", q, err)
		}
	}
	q, err := parseQuery("  Mail  mail\tSEND ")
	if err != nil || q.norm != "mail send" {
		t.Errorf("parseQuery normalizes to %q, %v; want \"mail send\"", q.norm, err)
	}
}

func TestCursorBoundToSearch(t *testing.T) {
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "p"}
	q, _ := parseQuery("mail")
	c := encodeCursor(scope, q, position{score: 9, id: "mail.send@1.0.0"})
	if p, err := decodeCursor(c, scope, q); err != nil || p != (position{9, "mail.send@1.0.0"}) {
		t.Fatalf("round trip: %v, %v", p, err)
	}
	other, _ := parseQuery("send")
	bad := []struct {
		name   string
		cursor string
		scope  ledger.Scope
		q      query
	}{
		{"another query", c, scope, other},
		{"another project", c, ledger.Scope{OrganizationID: "org", ProjectID: "q"}, q},
		{"another organization", c, ledger.Scope{OrganizationID: "org2", ProjectID: "p"}, q},
		{"not base64", "!!!", scope, q},
		{"truncated", c[:10], scope, q},
		{"damaged", c[:4] + "A" + c[5:], scope, q},
		{"too long", c + strings.Repeat("A", maxCursorBytes), scope, q},
	}
	var texts []string
	for _, tt := range bad {
		_, err := decodeCursor(tt.cursor, tt.scope, tt.q)
		if !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("%s: %v, want ErrInvalidCursor", tt.name, err)
			continue
		}
		texts = append(texts, err.Error())
	}
	if len(slices.Compact(slices.Clone(texts))) != 1 {
		t.Errorf("refusals differ in wording: %q", texts)
	}
}

// FuzzDecodeCursor: a cursor is untrusted text from an agent. Decoding
// never panics, and what decodes re-encodes to the same cursor.
func FuzzDecodeCursor(f *testing.F) {
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "p"}
	q, _ := parseQuery("mail")
	f.Add(encodeCursor(scope, q, position{score: 9, id: "mail.send@1.0.0"}))
	f.Add(encodeCursor(scope, q, position{score: 0, id: "é"}))
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodeCursor(s, scope, q)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("error %v does not wrap ErrInvalidCursor", err)
			}
			return
		}
		if got := encodeCursor(scope, q, p); got != s {
			t.Fatalf("re-encoded %q as %q", s, got)
		}
	})
}

// distinctWords returns n different words separated by spaces.
func distinctWords(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(w, " ")
}
