package metric

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/shard"
)

// The ranx benchmark setup: 1,000,000 queries × 100 ranked results, 1–9
// relevant documents graded 1–5, about 70% of them retrieved.
const (
	benchQueries = 1_000_000
	benchDepth   = 100
	benchBatch   = 65536
)

var (
	benchOnce    sync.Once
	benchBatches []*schema.ShardView
)

func benchData(b *testing.B) []*schema.ShardView {
	benchOnce.Do(func() {
		r := rand.New(rand.NewPCG(1, 2))
		var rows shard.Rows
		grades := make([]int32, 0, 9)
		run := make([]uint32, benchDepth)
		for q := 0; q < benchQueries; q++ {
			nRel := 1 + r.IntN(9)
			grades = grades[:0]
			for i := 0; i < nRel; i++ {
				grades = append(grades, int32(1+r.IntN(5)))
			}
			slices.Sort(grades)
			slices.Reverse(grades)
			for i := range run {
				run[i] = uint32(nRel + i)
			}
			for i := 0; i < nRel; i++ {
				if r.Float64() < 0.7 {
					run[r.IntN(benchDepth)] = uint32(i)
				}
			}
			rows.Append(int64(q), "q", nil, grades, dedup(run))
			if rows.Len() == benchBatch || q == benchQueries-1 {
				rec := rows.Record()
				v, err := schema.ViewShardBatch(rec)
				if err != nil {
					panic(err)
				}
				if err := v.Validate(); err != nil {
					panic(err)
				}
				benchBatches = append(benchBatches, v)
				rows = shard.Rows{} // the record keeps the old slices
			}
		}
	})
	return benchBatches
}

// dedup replaces repeated judged ids (two relevant docs placed at the same
// rank pick distinct slots) so the ranking has no id twice.
func dedup(run []uint32) []uint32 {
	var seen [16]bool
	next := uint32(1 << 20)
	for i, id := range run {
		if id < 16 {
			if seen[id] {
				run[i] = next
				next++
				continue
			}
			seen[id] = true
		}
	}
	return run
}

// BenchmarkKernel scores 1M queries × 100 results with the default measure
// set in one pass, on one goroutine. The results/s metric is ranked
// results scored per second.
func BenchmarkKernel(b *testing.B) {
	batches := benchData(b)
	k, err := NewKernel(Config{Measures: DefaultMeasures(), RelLevel: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := NewPartial(DefaultMeasures())
		for _, v := range batches {
			k.Score(v, p, nil)
		}
	}
	b.ReportMetric(float64(benchQueries*benchDepth)*float64(b.N)/b.Elapsed().Seconds(), "results/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchQueries, "ns/query")
}

// BenchmarkKernelIncomplete prices the measures for incomplete judgments
// on the same data at relevance level 2 (grade 1 documents are then judged
// non-relevant): the default set alone, with Bpref added, and with the
// rankings condensed (JudgedOnly). Run the variants in one invocation and
// compare their ns/query.
func BenchmarkKernelIncomplete(b *testing.B) {
	batches := benchData(b)
	withBpref := append(DefaultMeasures(), Measure{Kind: KindBpref})
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{Measures: DefaultMeasures(), RelLevel: 2}},
		{"default+Bpref", Config{Measures: withBpref, RelLevel: 2}},
		{"default+Bpref/judged-only", Config{Measures: withBpref, RelLevel: 2, JudgedOnly: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			k, err := NewKernel(c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := NewPartial(c.cfg.Measures)
				for _, v := range batches {
					k.Score(v, p, nil)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchQueries, "ns/query")
		})
	}
}

var (
	benchPairedOnce    sync.Once
	benchPairedBatches []*schema.ShardView
)

// benchPairedData is benchData's first 100,000 queries with a baseline
// ranking each: the run's ranking with its relevant documents moved.
func benchPairedData(b *testing.B) []*schema.ShardView {
	benchPairedOnce.Do(func() {
		r := rand.New(rand.NewPCG(3, 4))
		var rows shard.Rows
		for _, v := range benchData(b)[:2] {
			for i := 0; i < v.Rows && rows.Len() < 100_000; i++ {
				grades := v.Grades[v.GradeOff[i]:v.GradeOff[i+1]]
				run := v.Run[v.RunOff[i]:v.RunOff[i+1]]
				base := make([]uint32, len(run))
				for j := range base {
					base[j] = uint32(len(grades) + j)
				}
				for g := range grades {
					if r.Float64() < 0.7 {
						base[r.IntN(len(base))] = uint32(g)
					}
				}
				rows.AppendPair(int64(rows.Len()), fmt.Sprintf("q%d", rows.Len()), nil, grades, run, dedup(base))
			}
		}
		v, err := schema.ViewShardBatch(rows.Record())
		if err != nil {
			panic(err)
		}
		benchPairedBatches = []*schema.ShardView{v}
	})
	return benchPairedBatches
}

// BenchmarkKernelPaired scores 100,000 paired queries with the statistics
// of `score --baseline-run` (every default measure, 1000 bootstrap
// replicates, 1000 permutations), on one goroutine; ns/query is the cost
// of a query's pair, to compare with BenchmarkKernel's.
func BenchmarkKernelPaired(b *testing.B) {
	batches := benchPairedData(b)
	pr := &Pairing{Replicates: 1000, Permutations: 1000, Seed: 1, TopK: 10}
	for i := range DefaultMeasures() {
		pr.Measures = append(pr.Measures, i)
	}
	cfg := Config{Measures: DefaultMeasures(), RelLevel: 1, Pairing: pr}
	k, err := NewKernel(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := NewPartialFor(cfg)
		for _, v := range batches {
			if err := k.Score(v, p, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batches[0].Rows), "ns/query")
}

// BenchmarkReplicateRows times the row loops of one block of 8 queries
// (14 paired measures, 1000 replicates and 1000 permutations): "scalar"
// the scalar loops, "build" this build's (vectorised with
// GOEXPERIMENT=simd on AVX2). ns/query is per query of the block.
func BenchmarkReplicateRows(b *testing.B) {
	const vecs, reps = 4, 1000
	rng := splitmix64(1)
	sub := make([]vec4, 256*vecs)
	for i := range sub {
		for l := range sub[i] {
			sub[i][l] = int64(rng.next() >> 12)
		}
	}
	w := make([]uint8, reps*blockQueries)
	for i := range w {
		w[i] = poisson(rng.next() & 0xffffffff)
	}
	t := make([]uint8, reps)
	for i := range t {
		t[i] = uint8(rng.next())
	}
	acc, accP := make([]vec4, reps*vecs), make([]vec4, reps*vecs)
	for _, v := range []struct {
		name      string
		rep       func(acc, sub []vec4, w []uint8, vecs int)
		perm      func(acc, sub []vec4, t []uint8, vecs int)
		vectorise bool
	}{
		{"scalar", addReplicateRowsScalar, addPermutationRowsScalar, false},
		{"build", addReplicateRows, addPermutationRows, simdRows},
	} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				v.rep(acc, sub, w, vecs)
				v.perm(accP, sub, t, vecs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/blockQueries, "ns/query")
		})
	}
}

// BenchmarkDraws draws one query's bootstrap weights and permutation
// signs (1000 replicates, 1000 permutations), as every paired query does.
func BenchmarkDraws(b *testing.B) {
	p := &Pairing{Replicates: 1000, Permutations: 1000, Seed: 1}
	weights := make([]uint8, p.Replicates)
	signs := make([]uint64, (p.Permutations+63)/64)
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprintf("q%07d", i)
	}
	for i := 0; b.Loop(); i++ {
		p.draws(ids[i%len(ids)], weights, signs)
	}
}
