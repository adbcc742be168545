package metric

import (
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
