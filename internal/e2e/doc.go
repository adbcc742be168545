// Package e2e holds the end-to-end and fault-tolerance tests of the
// distributed evaluation: a real JetStream server (embedded, on loopback),
// real workers (in-process, or separate processes that the tests kill),
// and the same-bits check against single-process scoring.
package e2e
