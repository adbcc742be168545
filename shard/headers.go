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
)
