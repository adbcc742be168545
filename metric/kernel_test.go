package metric

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refValue computes a measure the slow, obvious way from the grades of the
// ranked documents (nil grade: unjudged), following trec_eval's definitions.
func refValue(m Measure, judged []int32, ranked []*int32, level int32) float64 {
	numRel := 0
	for _, g := range judged {
		if g >= level {
			numRel++
		}
	}
	isRel := func(p int) bool { return ranked[p] != nil && *ranked[p] >= level }
	relIn := func(k int) int {
		c := 0
		for p := 0; p < k && p < len(ranked); p++ {
			if isRel(p) {
				c++
			}
		}
		return c
	}
	switch m.Kind {
	case KindRecall:
		if numRel == 0 {
			return 0
		}
		return float64(relIn(m.K)) / float64(numRel)
	case KindPrecision:
		return float64(relIn(m.K)) / float64(m.K)
	case KindSuccess:
		if relIn(m.K) > 0 {
			return 1
		}
		return 0
	case KindJudged: // a negative grade marks a document unjudged (trec_eval unj)
		c := 0
		for p := 0; p < m.K && p < len(ranked); p++ {
			if ranked[p] != nil && *ranked[p] >= 0 {
				c++
			}
		}
		return float64(c) / float64(m.K)
	case KindRR:
		for p := range ranked {
			if m.K > 0 && p >= m.K {
				break
			}
			if isRel(p) {
				return 1 / float64(p+1)
			}
		}
		return 0
	case KindAP:
		if numRel == 0 {
			return 0
		}
		sum, found := 0.0, 0
		for p := range ranked {
			if m.K > 0 && p >= m.K {
				break
			}
			if isRel(p) {
				found++
				sum += float64(found) / float64(p+1)
			}
		}
		return sum / float64(numRel)
	case KindRprec:
		if numRel == 0 {
			return 0
		}
		return float64(relIn(numRel)) / float64(numRel)
	case KindNDCG:
		gain := func(g int32) float64 {
			if m.Gain == GainExp {
				return math.Pow(2, float64(g)) - 1
			}
			return float64(g)
		}
		dcg := 0.0
		for p := range ranked {
			if m.K > 0 && p >= m.K {
				break
			}
			if ranked[p] != nil && *ranked[p] > 0 {
				dcg += gain(*ranked[p]) / math.Log2(float64(p+2))
			}
		}
		ideal := slices.Clone(judged)
		slices.Sort(ideal)
		slices.Reverse(ideal)
		idcg := 0.0
		for i, g := range ideal {
			if (m.K > 0 && i >= m.K) || g <= 0 {
				break
			}
			idcg += gain(g) / math.Log2(float64(i+2))
		}
		if idcg == 0 {
			return 0
		}
		return dcg / idcg
	case KindNumQ:
		return 1
	case KindNumRel:
		return float64(numRel)
	case KindNumRet:
		return float64(len(ranked))
	case KindNumRelRet:
		return float64(relIn(len(ranked)))
	}
	panic("unknown kind")
}

// randomQuery returns grades (non-increasing), a ranking of interned ids, and
// the per-position grade pointers for the reference.
func randomQuery(r *rand.Rand) ([]int32, []uint32, []*int32) {
	nJudged := r.IntN(12)
	grades := make([]int32, nJudged)
	for i := range grades {
		grades[i] = int32(r.IntN(6) - 1) // -1..4
	}
	slices.Sort(grades)
	slices.Reverse(grades)
	depth := r.IntN(150)
	ids := r.Perm(nJudged + depth)[:depth] // distinct ids; some judged, some not
	run := make([]uint32, depth)
	ranked := make([]*int32, depth)
	for p, id := range ids {
		run[p] = uint32(id)
		if id < nJudged {
			ranked[p] = &grades[id]
		}
	}
	return grades, run, ranked
}

func allKinds() []Measure {
	var ms []Measure
	for _, k := range []int{1, 3, 5, 10, 64, 65, 100, 200} {
		ms = append(ms, Measure{Kind: KindRecall, K: k}, Measure{Kind: KindPrecision, K: k},
			Measure{Kind: KindSuccess, K: k}, Measure{Kind: KindJudged, K: k}, Measure{Kind: KindRR, K: k},
			Measure{Kind: KindAP, K: k}, Measure{Kind: KindNDCG, K: k}, Measure{Kind: KindNDCG, K: k, Gain: GainExp})
	}
	return append(ms, Measure{Kind: KindRR}, Measure{Kind: KindAP}, Measure{Kind: KindNDCG},
		Measure{Kind: KindRprec}, Measure{Kind: KindNumQ}, Measure{Kind: KindNumRel},
		Measure{Kind: KindNumRet}, Measure{Kind: KindNumRelRet})
}

func TestKernelMatchesReference(t *testing.T) {
	ms := allKinds()
	for _, level := range []int32{1, 2, 0} {
		k, err := NewKernel(Config{Measures: ms, RelLevel: level})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(level)+1, 99))
		for q := 0; q < 3000; q++ {
			grades, run, ranked := randomQuery(r)
			got := k.ScoreQuery(grades, run)
			for i, m := range ms {
				want := refValue(m, grades, ranked, level)
				if math.Abs(got[i]-want) > 1e-12 {
					t.Fatalf("level %d query %d %s: kernel %v, reference %v (grades %v run %v)", level, q, m, got[i], want, grades, run)
				}
			}
		}
	}
}

func TestKernelHandExamples(t *testing.T) {
	// Two relevant docs (grades 2 and 1), one judged non-relevant (0).
	// Ranking: unjudged, rel(1), nonrel(0), rel(2).
	grades := []int32{2, 1, 0}
	run := []uint32{7, 1, 2, 0}
	k, _ := NewKernel(Config{Measures: []Measure{
		{Kind: KindRR}, {Kind: KindPrecision, K: 2}, {Kind: KindRecall, K: 2}, {Kind: KindAP},
		{Kind: KindSuccess, K: 1}, {Kind: KindJudged, K: 4}, {Kind: KindRprec},
	}, RelLevel: 1})
	got := k.ScoreQuery(grades, run)
	want := []float64{0.5, 0.5, 0.5, (1.0/2 + 2.0/4) / 2, 0, 0.75, 0.5}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("measure %d = %v, want %v", i, got[i], want[i])
		}
	}
}
