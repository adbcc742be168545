// Package jsq is evalgate's adapter to NATS JetStream, the only package
// that imports the NATS client. It owns the topology (streams, consumer,
// buckets) and implements the interfaces the worker and the coordinator
// declare: worker.TaskSource and worker.ResultStore, coordinator.Queue.
//
// # Topology
//
// Names are fixed so operators can inspect them with the nats CLI:
//
//	EVALGATE_TASKS       work queue, subjects evalgate.task.<job>.<task>, one
//	                     message per subject (a task is pending at most once);
//	                     durable pull consumer "workers", explicit ack
//	EVALGATE_PARTIALS    limits, evalgate.partial.<job>.<task>, first writer
//	                     wins (a second result for a task is rejected)
//	EVALGATE_DLQ         limits, evalgate.fail.<job>.<task> (last failed
//	                     attempt) and evalgate.dlq.<job>.<task> (final
//	                     failures that fail the job)
//	EVALGATE_ADVISORIES  the server's max-deliveries and terminated
//	                     advisories for EVALGATE_TASKS, kept (advisories are
//	                     otherwise fire-and-forget)
//	KV evalgate-jobs     job manifests
//	KV evalgate-workers  worker heartbeats (entries expire; file storage,
//	                     so they survive a server restart; a worker's
//	                     heartbeat recreates the bucket if it is missing)
//	Object evalgate-shards  payloads too large to travel inline
//	EVALGATE_ANSWERS     limits, evalgate.answer.<job>.<task>.<n>: a live
//	                     retrieval's answer to query n of a task, first
//	                     writer wins
//	KV evalgate-limits   request schedules (memory): one key per job and
//	                     service, holding a job's rate across workers
//
// # Failures it turns into clear errors
//
// Wrong credentials fail Connect at once with the server's reason (an
// in-process connection otherwise reports a closed pipe); permission
// violations, which JetStream API calls would only show as timeouts, are
// captured from the asynchronous error handler and attached to the
// timeout.
package jsq
