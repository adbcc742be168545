package metric

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/shard"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the paired statistics")

// goldenPairedBatches returns n paired queries in batches of batch rows:
// rankings of 20 documents, a baseline that differs from the run on most
// queries but not all, and two tag groups. A splitmix64 stream makes
// them: the same bytes on every machine and Go version.
func goldenPairedBatches(t testing.TB, n, batch int) []*schema.ShardView {
	rng := splitmix64(2026)
	var out []*schema.ShardView
	var rows shard.Rows
	flush := func() {
		v, err := schema.ViewShardBatch(rows.Record())
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Validate(); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
		rows = shard.Rows{}
	}
	const depth = 20
	for q := range n {
		nRel := 1 + int(rng.next()%6)
		grades := make([]int32, nRel)
		for i := range grades {
			grades[i] = int32(3 - i*3/nRel) // non-increasing, 1..3
		}
		ranking := func(keep uint64) []uint32 {
			r := make([]uint32, depth)
			for i := range r {
				r[i] = uint32(100 + i)
			}
			for i := range nRel {
				if rng.next()%10 < keep {
					r[rng.next()%depth] = uint32(i)
				}
			}
			return dedup(r)
		}
		run := ranking(7)
		base := run
		if rng.next()%5 != 0 { // one query in five: the same ranking
			base = ranking(7)
		}
		groups := []string{fmt.Sprintf("category=c%d", rng.next()%3)}
		if rng.next()%2 == 0 {
			groups = append(groups, "hard=yes")
		}
		rows.AppendPair(int64(q), fmt.Sprintf("q%05d", q), groups, grades, run, base)
		if rows.Len() == batch {
			flush()
		}
	}
	if rows.Len() > 0 {
		flush()
	}
	return out
}

// goldenPairing compares every default measure, over the overall group
// and two tag groups; an odd replicate count and a permutation count that
// is not a multiple of 64 cover the ends of the draws.
func goldenPairing() *Pairing {
	p := &Pairing{Replicates: 1001, Permutations: 1000, Seed: 9, TopK: 7, Groups: []string{"category=c1", "hard=yes"}}
	for i := range DefaultMeasures() {
		p.Measures = append(p.Measures, i)
	}
	return p
}

// goldenPaired is what the golden file pins: a hash of every paired sum
// (the encoded Partial: per replicate and per permutation, per measure and
// group) and the reduced comparisons.
type goldenPaired struct {
	PartialXXH3 string
	Overall     []goldenComparison
	Groups      map[string][]goldenComparison
	Top         []string
}

type goldenComparison struct {
	Measure                  string
	CILow, CIHigh, PValue    string // %x of the float64: exact bits
	CILowDec, CIHighDec      float64
	PValueDec                float64
	Replicates, Permutations int
}

func goldenComparisons(cs []Comparison) []goldenComparison {
	out := make([]goldenComparison, len(cs))
	for i, c := range cs {
		out[i] = goldenComparison{Measure: c.Measure.String(),
			CILow: fmt.Sprintf("%x", c.CILow), CIHigh: fmt.Sprintf("%x", c.CIHigh), PValue: fmt.Sprintf("%x", c.PValue),
			CILowDec: c.CILow, CIHighDec: c.CIHigh, PValueDec: c.PValue, Replicates: c.Replicates, Permutations: c.Permutations}
	}
	return out
}

func scoreGolden(t *testing.T, batches []*schema.ShardView) *Partial {
	t.Helper()
	cfg := Config{Measures: DefaultMeasures(), RelLevel: 1, Pairing: goldenPairing()}
	k, err := NewKernel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartialFor(cfg)
	for _, v := range batches {
		if err := k.Score(v, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func goldenOf(t *testing.T, p *Partial) goldenPaired {
	t.Helper()
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	g := goldenPaired{PartialXXH3: fmt.Sprintf("%032x", xxh3.Hash128(b).Bytes()), Overall: goldenComparisons(p.Comparisons()),
		Groups: map[string][]goldenComparison{}}
	for _, name := range goldenPairing().Groups {
		g.Groups[name] = goldenComparisons(p.GroupComparisons(name))
	}
	for _, q := range p.TopRegressed() {
		g.Top = append(g.Top, fmt.Sprintf("%s %x %x %d %d", q.QueryID, q.Value, q.Base, q.FirstRel, q.BaseFirstRel))
	}
	return g
}

// The paired statistics are the same bits as those of the version that
// wrote testdata/paired-golden.json (the scalar int128 loop of evalgate
// before the replicate loop was vectorised), in one batch or many:
// every per-replicate and per-permutation sum (hashed), and every
// interval bound and p-value (compared as bits).
func TestPairedGolden(t *testing.T) {
	path := filepath.Join("testdata", "paired-golden.json")
	for _, batch := range []int{3000, 257} {
		got := goldenOf(t, scoreGolden(t, goldenPairedBatches(t, 3000, batch)))
		js, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, '\n')
		if *updateGolden && batch == 3000 {
			if err := os.WriteFile(path, js, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(js) != string(want) {
			t.Fatalf("batches of %d: paired statistics differ from %s:\n%s", batch, path, js)
		}
	}
}
