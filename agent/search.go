package agent

import (
	"container/heap"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zeoruntime/runtimeipc/manifest"
)

// Search limits. A page holds at most MaxPageSize capabilities, as a
// host's own listing does (see doc/protocol.md, “Pagination”).
const (
	// MaxPageSize is the largest page Search returns.
	MaxPageSize = 100
	// DefaultPageSize is the page size of a SearchRequest whose Limit is
	// zero.
	DefaultPageSize = 20
	// MaxQueryBytes bounds a search query.
	MaxQueryBytes = 1024
	// MaxQueryTerms bounds the number of words in a query.
	MaxQueryTerms = 16
)

// Field weights of a term's best match: a term found in the id ranks a
// capability above one where it is only in the description.
const (
	weightID          = 8
	weightTitle       = 4
	weightTag         = 2
	weightDescription = 1
	// exactIDBonus puts the capability whose id is the whole query first.
	exactIDBonus = 1 << 10
)

// SearchRequest asks for one page of the capabilities a scope sees.
type SearchRequest struct {
	// Query is free text. Each whitespace-separated word must appear, in
	// any case, in the capability's id, title, description or one of its
	// tags; an empty query matches every visible capability.
	Query string `json:"query,omitempty"`
	// Cursor continues the search from the page that returned it; empty
	// starts from the first page. It is opaque, bound to the query and
	// the scope.
	Cursor string `json:"cursor,omitempty"`
	// Limit is the page size, 1..MaxPageSize; zero means DefaultPageSize.
	Limit int `json:"limit,omitempty"`
}

// Summary is one capability in a search page.
type Summary struct {
	// CapabilityID is the canonical id, "namespace.name@version": the
	// argument describe and run take.
	CapabilityID string `json:"capability_id"`
	// Title is the manifest's metadata "title" when it is a string, else
	// its projection_name, else empty.
	Title string `json:"title"`
	// Description is the manifest's description.
	Description string `json:"description"`
	// Tags are the manifest's tags, sorted.
	Tags []string `json:"tags"`
	// Deprecated reports the manifest's deprecation flag.
	Deprecated bool `json:"deprecated"`
}

// SearchPage is one page of search results.
type SearchPage struct {
	// Capabilities are ordered by relevance to the query, then by id.
	// The order is deterministic: the same catalogue, scope and query
	// always give the same pages.
	Capabilities []Summary `json:"capabilities"`
	// NextCursor continues the search; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// doc is one capability prepared for search: its summary and the lowercased
// text of its searched fields, each a part of text. Immutable once built.
type doc struct {
	sum Summary
	// text is the id, the title, each tag and the description, lowercased,
	// each ended by '\n': a search term holds no whitespace, so it never
	// spans two fields.
	text  string
	id    string
	title string
	tags  string
	desc  string
}

// title is what Summary.Title documents.
func title(m *manifest.CapabilityManifest) string {
	if t, ok := m.Metadata["title"].(string); ok {
		return t
	}
	if m.ProjectionName != nil {
		return *m.ProjectionName
	}
	return ""
}

// newDoc prepares capability id's manifest for search.
func newDoc(id string, m *manifest.CapabilityManifest) *doc {
	tags := slices.Clone(m.Tags)
	if tags == nil {
		tags = []string{}
	}
	slices.Sort(tags)
	d := &doc{sum: Summary{CapabilityID: id, Title: title(m), Description: m.Description, Tags: tags,
		Deprecated: m.Deprecation.Deprecated}}
	// Each field's end in text, so that the fields share its bytes.
	var b strings.Builder
	end := func(s string) int {
		b.WriteString(strings.ToLower(s))
		b.WriteByte('\n')
		return b.Len()
	}
	idEnd := end(id)
	titleEnd := end(d.sum.Title)
	tagsEnd := titleEnd
	for _, t := range tags {
		tagsEnd = end(t)
	}
	end(d.sum.Description)
	d.text = b.String()
	d.id = d.text[:idEnd-1]
	d.title = d.text[idEnd : titleEnd-1]
	d.tags = d.text[titleEnd:tagsEnd]
	d.desc = d.text[tagsEnd : len(d.text)-1]
	return d
}

// query is a parsed search query.
type query struct {
	// norm is the lowercased query, its words joined by one space.
	norm  string
	terms []string
}

// parseQuery splits q into lowercased words, without duplicates.
func parseQuery(q string) (query, error) {
	if len(q) > MaxQueryBytes {
		return query{}, invalidf("query is %d bytes; at most %d", len(q), MaxQueryBytes)
	}
	if !validText(q) {
		return query{}, invalidf("query is not valid UTF-8 text")
	}
	var terms []string
	for _, t := range strings.Fields(strings.ToLower(q)) {
		if !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
	}
	if len(terms) > MaxQueryTerms {
		return query{}, invalidf("query has %d words; at most %d", len(terms), MaxQueryTerms)
	}
	return query{norm: strings.Join(terms, " "), terms: terms}, nil
}

// score returns how well d matches q, and false when some term is found in
// no field.
func (q *query) score(d *doc) (uint32, bool) {
	var s uint32
	for _, t := range q.terms {
		switch {
		case strings.Contains(d.id, t):
			s += weightID
		case strings.Contains(d.title, t):
			s += weightTitle
		case strings.Contains(d.tags, t):
			s += weightTag
		case strings.Contains(d.desc, t):
			s += weightDescription
		default:
			return 0, false
		}
	}
	if len(q.terms) == 1 && q.terms[0] == d.id {
		s += exactIDBonus
	}
	return s, true
}

// hit is a match and its place in the order.
type hit struct {
	score uint32
	d     *doc
}

// before reports whether a comes before b: higher score first, then id.
func (a hit) before(b hit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.d.sum.CapabilityID < b.d.sum.CapabilityID
}

// after reports whether h comes after the position p in the order.
func (h hit) after(p position) bool {
	if h.score != p.score {
		return h.score < p.score
	}
	return h.d.sum.CapabilityID > p.id
}

// worstFirst is a heap of hits whose root is the last in the order, so that
// the best n of a stream are kept in O(log n) per hit.
type worstFirst []hit

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return h[j].before(h[i]) }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(hit)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// docSet is the documents one scope sees at one revision, in id order,
// and, built on first use by a query with words, their texts end to end,
// so that a word is looked for in one pass over one string rather than
// document by document. Safe for concurrent use.
type docSet struct {
	docs   []*doc
	once   sync.Once
	corpus string
	// starts[i] is where docs[i]'s text begins in corpus;
	// starts[len(docs)] is len(corpus).
	starts []int
	// freq counts each byte value in corpus.
	freq [256]int
}

func newDocSet(docs []*doc) *docSet { return &docSet{docs: docs} }

// text returns the corpus and the documents' starts in it.
func (s *docSet) text() (string, []int) {
	s.once.Do(func() {
		n := 0
		for _, d := range s.docs {
			n += len(d.text)
		}
		var b strings.Builder
		b.Grow(n)
		s.starts = make([]int, len(s.docs)+1)
		for i, d := range s.docs {
			s.starts[i] = b.Len()
			b.WriteString(d.text)
		}
		s.starts[len(s.docs)] = b.Len()
		s.corpus = b.String()
		for i := 0; i < len(s.corpus); i++ {
			s.freq[s.corpus[i]]++
		}
	})
	return s.corpus, s.starts
}

// finder looks for one word in a docSet's corpus by its rarest byte:
// strings.Index looks for the first byte, and a word's first byte is often
// one of the most common letters, so that it stops at nearly every word of
// the text.
type finder struct {
	word   string
	anchor int // the index in word of its rarest byte in the corpus
}

func (s *docSet) finder(word string) finder {
	f := finder{word: word}
	for i := 1; i < len(word); i++ {
		if s.freq[word[i]] < s.freq[word[f.anchor]] {
			f.anchor = i
		}
	}
	return f
}

// next returns the first position at or after from where the word starts
// in corpus, or -1.
func (f finder) next(corpus string, from int) int {
	c := f.word[f.anchor]
	for p := from + f.anchor; p < len(corpus); {
		i := strings.IndexByte(corpus[p:], c)
		if i < 0 {
			return -1
		}
		start := p + i - f.anchor
		if start+len(f.word) <= len(corpus) && corpus[start:start+len(f.word)] == f.word {
			return start
		}
		p += i + 1
	}
	return -1
}

// search returns the first limit matches of q in set that come after
// from (nil: from the start), in order, and whether more follow.
func search(set *docSet, q query, from *position, limit int) (page []hit, more bool) {
	docs := set.docs
	if len(q.terms) == 0 {
		// Every score is zero: the order is the id order docs already have.
		start := 0
		if from != nil {
			if from.score != 0 {
				return nil, false
			}
			start, _ = slices.BinarySearchFunc(docs, from.id, func(d *doc, id string) int {
				return strings.Compare(d.sum.CapabilityID, id)
			})
			if start < len(docs) && docs[start].sum.CapabilityID == from.id {
				start++
			}
		}
		end := min(start+limit, len(docs))
		page = make([]hit, 0, end-start)
		for _, d := range docs[start:end] {
			page = append(page, hit{d: d})
		}
		return page, end < len(docs)
	}
	// Keep the best limit+1 hits after from: the extra one says whether
	// another page follows.
	keep := limit + 1
	h := make(worstFirst, 0, min(keep, 64))
	// Find the documents holding the longest word in one pass over the
	// corpus (a word never spans two documents: each text ends with
	// '\n'), then score each against every word.
	scan := q.terms[0]
	for _, t := range q.terms[1:] {
		if len(t) > len(scan) {
			scan = t
		}
	}
	corpus, starts := set.text()
	find := set.finder(scan)
	for pos := 0; pos < len(corpus); {
		i := find.next(corpus, pos)
		if i < 0 {
			break
		}
		k := sort.SearchInts(starts, i+1) - 1
		pos = starts[k+1]
		s, ok := q.score(docs[k])
		if !ok {
			continue
		}
		c := hit{score: s, d: docs[k]}
		if from != nil && !c.after(*from) {
			continue
		}
		if len(h) < keep {
			heap.Push(&h, c)
		} else if c.before(h[0]) {
			h[0] = c
			heap.Fix(&h, 0)
		}
	}
	page = []hit(h)
	slices.SortFunc(page, func(a, b hit) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	if len(page) > limit {
		return page[:limit], true
	}
	return page, false
}
