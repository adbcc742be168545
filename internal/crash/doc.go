// Package crash ends the process the way kill -9 does, for the fault
// injection of tests: no deferred function, no flush, no clean shutdown.
package crash
