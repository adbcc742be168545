// Command evalgate scores retrieval runs against gold sets and gates
// releases on the result. See README.md.
//
// This package is wiring only: one file per subcommand builds its flags
// (defaults taken from the library packages) and calls coordinator,
// worker, gate and schema. Exit codes: 0 success, 1 a blocking gate
// failed (or history --fail-on-alert found an alert), 2 bad usage or
// input, 3 the evaluation could not run.
package main
