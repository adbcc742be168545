// Package compare runs the A/B test of several retrieval systems on one
// gold set: run files and live retrievers in any mix, each compared with
// the first (the reference) query by query — the same paired job as
// `score --baseline-run`: Poisson bootstrap intervals of the mean
// difference and a paired sign-flip randomization test.
//
// A retriever is asked once per gold query, in this process, with its own
// rate limit and concurrency (coordinator.Score with a Retriever). Its
// answers are written as a JSONL run without scores to a temporary file,
// removed before Run returns, so that the answer's list order is the
// ranking whatever the options say for file runs (--rank-by), and that file
// is compared like a run file: its values are those of a run file holding
// the same rankings, bit for bit. The summaries keep the retriever's live
// retrieval section (latencies, requests, failed queries) and name the
// retriever file, never the temporary one.
//
// Every retriever is probed (coordinator.Probe) before any system is
// asked or scored: a gold query without text, a retriever file that does
// not fit the retriever's answers, or a retriever that does not answer
// stops the test before it costs anything.
//
// With k > 1 comparisons against the reference, each measure's k p-values
// are one family: AdjustHolm adds their Holm adjustment (metric.Holm) to
// the summaries, next to the raw p-values.
package compare
