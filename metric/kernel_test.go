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
	case KindBpref: // trec_eval m_bpref.c, term by term
		numNonrel := 0
		for _, g := range judged {
			if g >= 0 && g < level {
				numNonrel++
			}
		}
		if numNonrel > numRel {
			numNonrel = numRel
		}
		sum, nonrel := 0.0, 0
		for p := range ranked {
			switch {
			case ranked[p] == nil || *ranked[p] < 0:
			case *ranked[p] < level:
				nonrel++
			case nonrel == 0:
				sum += 1
			default:
				sum += 1 - float64(min(nonrel, numRel))/float64(numNonrel)
			}
		}
		if numRel == 0 {
			return 0
		}
		return sum / float64(numRel)
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
		Measure{Kind: KindNumRet}, Measure{Kind: KindNumRelRet}, Measure{Kind: KindBpref})
}

// condensed returns the ranking without its unjudged documents, and the
// interned ids likewise: trec_eval -J done the obvious way.
func condensed(run []uint32, ranked []*int32) ([]uint32, []*int32) {
	var ids []uint32
	var grades []*int32
	for p, g := range ranked {
		if g != nil && *g >= 0 {
			ids = append(ids, run[p])
			grades = append(grades, g)
		}
	}
	return ids, grades
}

func TestKernelJudgedOnlyMatchesCondensedReference(t *testing.T) {
	ms := allKinds()
	for _, level := range []int32{1, 2, 0} {
		k, err := NewKernel(Config{Measures: ms, RelLevel: level, JudgedOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := NewKernel(Config{Measures: ms, RelLevel: level})
		r := rand.New(rand.NewPCG(uint64(level)+7, 5))
		for q := 0; q < 3000; q++ {
			grades, run, ranked := randomQuery(r)
			got := slices.Clone(k.ScoreQuery(grades, run))
			ids, cranked := condensed(run, ranked)
			onCondensed := plain.ScoreQuery(grades, ids)
			for i, m := range ms {
				want := refValue(m, grades, cranked, level)
				if math.Abs(got[i]-want) > 1e-12 {
					t.Fatalf("level %d query %d %s: kernel -J %v, reference on the condensed list %v (grades %v run %v)", level, q, m, got[i], want, grades, run)
				}
				if got[i] != onCondensed[i] {
					t.Fatalf("level %d query %d %s: -J %v, the condensed list scored plainly %v", level, q, m, got[i], onCondensed[i])
				}
			}
		}
	}
}

func TestBprefEdgeCases(t *testing.T) {
	tests := []struct {
		name   string
		grades []int32 // non-increasing; -1: in the gold set, unjudged
		run    []uint32
		want   float64
	}{
		// R = 0: no relevant document, bpref 0 (trec_eval leaves the sum
		// undivided, and it is 0).
		{"no relevant", []int32{0, 0}, []uint32{0, 1, 5}, 0},
		// N = 0: every retrieved relevant document counts 1.
		{"no judged non-relevant", []int32{1, 1, 1}, []uint32{9, 0, 8, 2}, 2.0 / 3},
		// No relevant document retrieved.
		{"none retrieved", []int32{1, 0}, []uint32{1, 7}, 0},
		// Nothing retrieved.
		{"empty ranking", []int32{1, 0}, nil, 0},
		// rel, nonrel, rel, nonrel, nonrel, rel; R = 3, N = 3:
		// (1 + (1 - 1/3) + (1 - 3/3)) / 3.
		{"interleaved", []int32{1, 1, 1, 0, 0, 0}, []uint32{0, 3, 1, 4, 5, 2}, (1 + (1 - 1.0/3) + 0) / 3},
		// N > R: the count above is capped at R, the divisor is R.
		// nonrel, nonrel, nonrel, rel; R = 1, N = 3: 1 - min(3,1)/min(3,1).
		{"more non-relevant than relevant", []int32{1, 0, 0, 0}, []uint32{1, 2, 3, 0}, 0},
		// N < R: the divisor is N. nonrel, rel, rel; R = 2, N = 1.
		{"fewer non-relevant than relevant", []int32{1, 1, 0}, []uint32{2, 0, 1}, 0},
		// Unjudged documents, in the gold set (grade -1, id 2) or not
		// (id 9), are skipped: rel, unjudged, unjudged, nonrel, rel.
		// R = 2, N = 1: (1 + (1 - 1/1)) / 2.
		{"unjudged ignored", []int32{1, 1, 0, -1}, []uint32{0, 3, 9, 2, 1}, 0.5},
	}
	for _, tt := range tests {
		k, err := NewKernel(Config{Measures: []Measure{{Kind: KindBpref}}, RelLevel: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := k.ScoreQuery(tt.grades, tt.run)[0]; got != tt.want {
			t.Errorf("%s: bpref = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestBprefIgnoresJudgedOnly(t *testing.T) {
	// bpref looks at judged documents only, so condensing the ranking
	// cannot change it.
	ms := []Measure{{Kind: KindBpref}}
	k, _ := NewKernel(Config{Measures: ms, RelLevel: 1})
	kj, _ := NewKernel(Config{Measures: ms, RelLevel: 1, JudgedOnly: true})
	r := rand.New(rand.NewPCG(3, 4))
	for q := 0; q < 2000; q++ {
		grades, run, _ := randomQuery(r)
		if a, b := k.ScoreQuery(grades, run)[0], kj.ScoreQuery(grades, run)[0]; a != b {
			t.Fatalf("query %d: bpref %v, with -J %v", q, a, b)
		}
	}
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
