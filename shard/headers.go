package shard

// Task headers: how a worker must score a task. The coordinator sets them,
// the worker reads them; they are part of the queue's message format.
const (
	HeaderMeasures = "Evalgate-Measures"  // comma-separated canonical measure names
	HeaderRelLevel = "Evalgate-Rel-Level" // integer
	HeaderPerQuery = "Evalgate-Per-Query" // "1" to return per-query values
	HeaderQueries  = "Evalgate-Queries"   // queries in the task, for progress
	HeaderPaired   = "Evalgate-Paired"    // "1": rows carry baseline rankings
	HeaderPairing  = "Evalgate-Pairing"   // metric.Pairing, for paired statistics
	HeaderCurve    = "Evalgate-Curve"     // recall curve depth
	// HeaderJudgedOnly is "1" to drop the unjudged documents from every
	// ranking before scoring it (trec_eval -J).
	HeaderJudgedOnly = "Evalgate-Judged-Only"
	// HeaderKind names what the task does: absent or KindScore for a
	// shard part to score, KindRetrieve for gold queries to send to the
	// retriever under test and score (package retrieval), KindJudge for
	// pairs to grade with an LLM (package judging).
	HeaderKind = "Evalgate-Kind"
)

// Task kinds (HeaderKind).
const (
	KindScore    = "score"
	KindRetrieve = "retrieve"
	KindJudge    = "judge"
)
