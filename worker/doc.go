// Package worker runs tasks taken from the queue. A score task is one
// shard part, an Arrow IPC payload of shard-batch records, scored with the
// metric kernel into a canonical partial result. A retrieve task holds
// gold queries the worker sends to the retriever under test (package
// retrieval): answers already stored for the task are reused, new ones are
// stored as they arrive, and the rows are scored as for a score task.
//
// # Loop
//
// Run reserves a free slot before it asks the TaskSource for the next task,
// so a worker never holds more tasks than it can score (a prefetched task
// would time out in a buffer and be scored twice elsewhere). While scoring
// it reports progress (InProgress) every Heartbeat, well inside the queue's
// ack wait, so a long task is not redelivered to another worker.
//
// # Exactly once, by construction
//
// Acknowledgements cannot make delivery exactly-once: a task may be scored
// twice (redelivery after a crash or a stall, a late ack). The result store
// keeps the first partial of a task and rejects later ones; the worker then
// compares its bytes with the stored ones. Scoring is deterministic, so the
// bytes must be equal: when they are, the duplicate is dropped and the task
// acknowledged; when they are not, the worker reports a determinism failure
// that fails the job loudly.
//
// # Ack, Nak, Term
//
//   - scored and stored (or identical to the stored partial): Ack;
//   - the payload is corrupt (digest mismatch, undecodable, invalid rows),
//     or a retrieve task's retriever file does not fit the worker (an
//     unset variable) or the retriever's answers: report a final failure,
//     then Term — retrying cannot help;
//   - any other error (queue or object store unavailable, cancelled):
//     report the attempt's failure, then Nak with a delay so another worker
//     (or this one, later) retries; on the last allowed delivery the failure
//     is reported as final, so the job fails naming the task and the error
//     instead of waiting for it.
//
// Run returns after every task it took is finished or handed back, and all
// its goroutines have exited.
package worker
