// Package coordinator runs evaluation jobs: it ingests the gold set and the
// run, cuts the joined queries into shards, has them scored, merges the
// partial sums and builds the summary.
//
// Score runs a job in one process: the same ingest, the same kernel and the
// same exact accumulators as the distributed path, with the units scored by
// goroutines instead of workers. It is the reference the distributed
// evaluation is tested against: both produce the same summary bits.
//
// The coordinator never imports package worker; in-process workers are
// wired by cmd/evalgate.
package coordinator
