// Package ingest joins a run with its gold set and produces shard-batch
// rows, the input of the scoring kernel.
//
// LoadGold reads the whole gold set into a compact in-memory index (gold
// sets are small next to runs), built on every core with the same result,
// errors included, whatever their number. Join then streams the run: it cuts it into
// per-query groups, ranks each group (score descending with trec_eval's
// tie-break, or the rank column), drops duplicate doc ids (keeping the
// best-ranked), applies the depth cut-off, and interns doc ids per query:
// the query's judged documents get ids 0..G-1 in order of decreasing grade
// and every other document an id ≥ G, comparing the doc-id strings exactly.
//
// Work is split into units of consecutive queries. Units are built in
// parallel and handed to the caller's Process function in parallel, then to
// Commit one at a time in input order, so everything downstream is
// deterministic. Runs are streamed in bounded memory when each query's lines
// are contiguous (as most tools write them); a run whose queries are
// interleaved makes Join return ErrRunNotGrouped before it commits the unit
// that would hold a query's late lines, and JoinSpilled reads such a run in
// two passes through temporary files, still in bounded memory, handing the
// queries on in gold-set order.
//
// LoadBaseline joins a baseline run the same way and keeps each query's
// interned ranking for the rows of a paired join: as its length and where
// its judged documents are (the unjudged ones are numbered in ranking
// order), a few bytes per judged document retrieved.
//
// Every choice follows trec_eval unless a Config field says otherwise; the
// counts of what was not scored (queries only in the run, gold queries
// missing from the run, queries without relevant documents, duplicate doc
// ids) are reported in Stats, never dropped silently.
package ingest
