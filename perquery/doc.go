// Package perquery writes per-query measure values — one row per query, in
// input order — as JSONL, TSV, trec_eval-style lines, Arrow IPC or Parquet.
// Files are written atomically: nothing appears at the path unless Commit
// succeeds.
package perquery
