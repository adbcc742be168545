// Package synth generates synthetic gold sets and runs for benchmarks and
// tests, in the shape ranx publishes its benchmarks with: each query has 1–9
// relevant documents graded 1–5 and a ranking of Depth documents in which
// some of the relevant ones appear at random ranks (or, with RankDecay,
// near the top, as a useful retriever ranks them).
//
// Generation is deterministic: query i is drawn from a generator seeded with
// (Seed, i), so the output depends only on the options, whatever the
// parallelism; the gold set depends only on Seed and Queries.
//
// WriteCorpus writes, instead of a run, a corpus of documents and a gold
// set of queries over it that a real search engine answers (the example
// retriever of examples/retriever does): the run is then what the engine
// returns. Its output depends only on Seed, Queries and Docs.
package synth
