// Package summary defines evalgate's versioned summary — the result of one
// evaluation: measure values overall and per tag, the counts of what was
// and was not scored, warnings, and digests of the inputs — and renders it
// as a table, JSON or trec_eval-style lines.
//
// The JSON form (schema "evalgate.summary/v1", documented in
// docs/summary-schema.md) is the contract between runs: the release gate
// reads it as a baseline, and the distributed evaluation must produce it
// byte for byte equal to the single-process one, except the "execution"
// object, which holds timing and how the job ran.
package summary
