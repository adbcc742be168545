// Package judging runs the judge tasks of `evalgate judge`: (query,
// document) pairs of a run's top k that no human judged, each graded by an
// LLM (package llm), on a worker or in this process.
//
// # Each pair once
//
// A pair's outcome — its judgment, or its failure after every retry and
// the model's second chance — is stored once per job and pair through
// Answers (first writer wins), like a live retrieval's answers: every
// attempt at a task reads them first, so a task run twice gives the same
// bytes, and the model is asked at most once per pair but for the
// requests in flight when a worker died. Across jobs, judgments are cached
// by content (Cache, keyed by Key: model, prompt hash, query text and
// passage hash): a rerun, or another run with the same holes, pays only
// for new pairs. A failure is not cached: the next job asks again.
//
// # Results
//
// A task's result lists its pairs' records in order; Totals merges
// results in any order into the judgments (sorted), the failures, the
// token usage billed (cached judgments bill nothing) and the re-judged
// pairs' grades next to the human ones.
package judging
