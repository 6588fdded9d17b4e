// Package agent is the facade through which agents reach capabilities:
// search, describe and run, each answered as one scope (an organization
// and project) sees the catalogue (package catalogue), with runs carried
// out by the Supervisor (package supervise) of the provider generation the
// operation is pinned to. Package agent/mcpserver serves it over the Model
// Context Protocol as exactly three tools (see doc/design.md, “Three tools
// for agents”).
//
// Start with [New]: a [Config] holds a catalogue.Catalogue and the
// supervise.Config the Facade's Supervisors are built from; the
// [*Facade] answers [Facade.Search], [Facade.Describe] and [Facade.Run]
// for one scope at a time. mcpserver.New serves it to agents.
//
// # What it promises
//
//   - Scope: a capability outside the scope's audience does not exist.
//     Describe and Run of it answer exactly as for an id that was never
//     admitted (catalogue.ErrUnknownCapability, whose text depends only on
//     the id given), Run records nothing for it, and Search never lists,
//     counts or ranks it; a search's pages are the same as in a catalogue
//     where it was never admitted.
//   - Search: every word of the query must appear, in any case, in the
//     capability's id, title, description or one of its tags. Results are
//     ordered by relevance (a word found in the id weighs most, then the
//     title, a tag, the description; the capability whose id is the whole
//     query comes first), then by id, so that the same catalogue, scope
//     and query always give the same pages. A page holds at most
//     MaxPageSize; its cursor continues after the page's last capability,
//     so that a page read after an admission neither repeats nor skips a
//     capability that stayed. A cursor is opaque, bound to its scope and
//     query, and carries nothing the caller has not seen.
//   - Run: capability ids and arguments are data. The catalogue decides
//     visibility, consent and the connection account and pins the
//     operation to a provider generation before anything runs; an
//     operation keeps its generation until it ends, however many newer ones
//     are admitted. The answer is the accepted artifact, or the state and
//     what the caller may do next (RunResult.Next); calling Run again with
//     the same operation id continues the operation, and an operation that
//     succeeded returns its artifact without running anything.
//
// Search costs, after the first search of a scope at a catalogue
// revision, one read of the revision and a pass over the scope's text: a
// few µs for a page of the whole list and a fraction of a millisecond for
// a word over 10,000 capabilities (see BENCHMARKS.md). What a scope sees
// changes only with the revision (an admission), so the facade keeps each
// scope's documents until it moves.
//
// The catalogue also answers, through Authority, the Supervisor's
// questions at invoke.admit and before each new effect, so that a
// revocation of consent or visibility takes effect at the next of them.
package agent
