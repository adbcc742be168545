// Package retrieval runs the retrieve tasks of a live evaluation: a batch
// of gold queries is sent to the retriever under test, each answer is kept
// the moment it arrives, and the queries are scored as a run file of the
// same rankings would be.
//
// # Answers are inputs
//
// An answer, or a query's failure after every retry, is stored once per
// job and query through Answers, first writer wins. Every attempt at a task
// (a redelivery after a worker crash, a second worker holding the same task
// after a stall, a resumed coordinator's re-publication) reads the stored
// answers first and asks the retriever only for the others, so a task's
// result depends on the stored answers alone: two attempts give the same
// bytes, which the queue's determinism check requires, and the retriever is
// asked at most once per query except for requests in flight when a worker
// died.
//
// # The rows
//
// The ranking is the answer's list order (cut at the retriever file's k).
// Rows are built with ingest.Ranker, as ingest does for a run file: a
// repeated doc id keeps its best-ranked occurrence, --depth cuts, judged
// documents keep their gold ids. An answered query counts as a query of the
// run (with no hits, as an empty list in a JSONL run); a failed query as a
// gold query missing from the run, scoring 0. Sequence numbers keep gold
// order with the failed queries after the answered ones, the order a
// --save-run file replayed with `score --rank-by rank` gives them, so
// per-query outputs and tie-breaks agree too.
//
// # Results
//
// A task's result (Result) is the kernel's partial sums and, per query,
// what the summary's retrieval section needs: latency of the answer used,
// attempts, hit count, or the failure. Totals merges them in any order into
// exact figures: latency percentiles are order statistics over every
// answered query, not estimates.
package retrieval
