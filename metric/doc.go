// Package metric is the scoring kernel: retrieval measures computed over
// shard batches (Arrow records in the schema.ShardBatch layout), with no I/O.
//
// # Measures
//
// Names follow ir_measures (R@5, P@5, RR, RR@10, nDCG@10, nDCG(gain=exp)@10,
// Success@5, AP, AP@10, Rprec, Bpref, Judged@10, NumQ, NumRel, NumRet,
// NumRelRet); Parse also accepts the aliases RAG teams write (recall@5, mrr,
// ndcg@10, hit@5, map, retrieval_recall_at_5 …) and trec_eval's names
// (recall_5, P.5, recip_rank, ndcg_cut_10, success_5, map_cut_10, bpref …).
// Every measure that trec_eval also computes has trec_eval's definition; the conformance tests in
// internal/conformance prove it on trec_eval's own test data (Judged@k
// against trec_eval's unj_k: Judged@k = 1 - unj_k for rankings of at least
// k documents).
//
// # Incomplete judgments
//
// Bpref (Buckley and Voorhees, SIGIR 2004; trec_eval m_bpref.c) looks at
// judged documents only: for each relevant document retrieved it counts
// the judged non-relevant documents (grade in [0, RelLevel)) ranked above
// it. Config.JudgedOnly is trec_eval's -J: the unjudged documents (no
// grade, or a negative one) leave every ranking before it is scored and the
// ranks close up (Sakai's condensed lists); the depth cut of ingest has
// already been applied, as trec_eval applies -M first.
//
// # Kernel
//
// A shard batch holds one row per query. Doc ids are interned per query at
// ingest: the query's judged documents get ids 0..G-1 in order of decreasing
// grade, every other retrieved document an id ≥ G. A hit is therefore one
// integer compare (id < R for relevant, id < G for judged), and a hit happens
// only when the doc-id strings were equal at ingest. The kernel builds three
// bit masks per query in one branch-free pass over the ranking (relevant,
// judged, positive gain), then derives every measure from the masks with
// popcounts and trailing-zero counts. It allocates nothing per query.
//
// # Exactness
//
// Per-query values are computed with explicitly rounded float64 operations
// (no fused multiply-add can change a bit on any architecture) and a
// discount table built with math/big, and summed into exact accumulators
// (package internal/exact). A Partial therefore has one canonical value for a
// given set of queries, whatever the split into batches, shards or workers
// and whatever the order of merging: the distributed evaluation and the
// single-process one give the same bits.
//
// # Paired statistics
//
// A Pairing's bootstrap and randomization sums are integers (per-query
// differences in fixed point), added 8 queries at a time through subset-sum
// tables in int64 rows and flushed to int128 before they could overflow
// (replicate.go): the same integers as adding every term on its own, the
// reference a test holds them to. The sums of the bootstrap weights add
// eight replicates' weights in the byte lanes of a word, spilled into
// int64 every 23 queries (weightSums). Built with GOEXPERIMENT=simd on amd64
// with AVX2, the row loops use simd/archsimd; the default build's scalar
// loops are the reference of a test that both give the same sums.
package metric
