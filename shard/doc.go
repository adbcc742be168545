// Package shard owns the unit of distributed work: a shard of queries.
//
// Queries are partitioned into S shards by a stable hash of the query id
// (xxh3-64, mapped to [0,S) with Lemire's multiply-shift), so a query lands
// in the same shard whatever the input order, the worker count or the
// machine. A shard travels as one or more parts; each part is an Arrow IPC
// stream of record batches in the schema.ShardBatch layout, its buffers
// compressed with LZ4 frames (Encode says why not zstd). Even with an
// in-process server the compression pays: on the 1M x 100 benchmark,
// uncompressed parts made `evalgate run` 30-60% slower (larger messages to
// copy, more of them through the object store).
//
// Rows accumulates shard-batch rows as plain Go slices and wraps them as an
// Arrow record without copying; package ingest fills it, package metric
// scores the records, and Encode/Decode move them between processes.
package shard
