// Package lint holds the project's structural rules as tests (see
// lint_test.go): the JetStream client only in internal/jsq, the server
// only in internal/embedded, Prometheus only in internal/telemetry, the
// coordinator and the worker independent, no printing or os.Exit in
// libraries, a package doc everywhere.
package lint
