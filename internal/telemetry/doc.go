// Package telemetry exports what evalgate's processes do as Prometheus
// metrics, and serves them with the health and readiness probes
// (`--metrics-listen` on `worker`, `run` and `server`). It is the only
// package that imports the Prometheus client, and it owns the registry:
// the worker and the coordinator report through small interfaces they
// declare (worker.Metrics, coordinator.Metrics), which WorkerMetrics and
// CoordinatorMetrics implement.
//
// # Names
//
// Every metric is named evalgate_<subsystem>_<what>_<unit>, in base units
// (seconds, bytes), counters ending in _total, with only low-cardinality
// labels whose values come from fixed sets (kind, final, step, class,
// type, stream; version, revision and goversion on evalgate_build_info):
// no job, query, task or worker ids — a worker is told apart by the
// scrape target, a job by time. The Go runtime's go_* and the process's
// process_* metrics of the standard collectors come along. The tests lint
// the registry for all of this (TestRegistryLint).
//
// # Groups
//
// New registers evalgate_build_info and the runtime and process
// collectors; Worker, Coordinator, Connection and Queue add their groups
// once each, so a process exports only what it does: a worker has no
// coordinator metrics, `server` only the queue's.
//
// # Probes
//
// /healthz answers 200 while the process runs. /readyz answers 200 when
// the readiness function the command gives says so (a worker: connected
// to NATS with its consumer bound; `server`: JetStream enabled and
// ready), else 503 with the reason.
package telemetry
