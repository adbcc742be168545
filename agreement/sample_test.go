package agreement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// judgedPool makes pairs with the given number per grade, spread over
// queries.
func judgedPool(sizes map[int]int) []Judged {
	var out []Judged
	for g, n := range sizes {
		for i := range n {
			out = append(out, Judged{QueryID: fmt.Sprintf("q%03d", i%37), DocID: fmt.Sprintf("g%d-d%05d", g, i), Grade: g})
		}
	}
	return out
}

func perGrade(pairs []Judged) map[int]int {
	m := make(map[int]int)
	for _, p := range pairs {
		m[p.Grade]++
	}
	return m
}

// TestAllocate checks the shares of each grade against the largest
// remainder method worked by hand.
func TestAllocate(t *testing.T) {
	cases := []struct {
		name  string
		sizes map[int]int
		n     int
		want  map[int]int
	}{
		// Quotas 70, 20, 9, 1: exact.
		{"exact", map[int]int{0: 700, 1: 200, 2: 90, 3: 10}, 100, map[int]int{0: 70, 1: 20, 2: 9, 3: 1}},
		// Quotas 2.5, 1.5, 1.0: floors 2, 1, 1; the one left goes to the
		// larger remainder, .5 and .5 tied: the lower grade.
		{"remainders", map[int]int{0: 5, 1: 3, 2: 2}, 5, map[int]int{0: 3, 1: 1, 2: 1}},
		// Quotas 6.9, 2.1, 0.6, 0.4: floors 6, 2, 0, 0, raised to 6, 2,
		// 1, 1 = 10: exact, though not by the floors.
		{"raised", map[int]int{0: 690, 1: 210, 2: 60, 3: 40}, 10, map[int]int{0: 6, 1: 2, 2: 1, 3: 1}},
		// Quotas 9.9, .05, .03, .02: floors 9, 0, 0, 0, raised to 9, 1, 1,
		// 1 = 12: two taken back from grade 0, the only one above 1.
		{"taken back", map[int]int{0: 990, 1: 5, 2: 3, 3: 2}, 10, map[int]int{0: 7, 1: 1, 2: 1, 3: 1}},
		// Fewer pairs than grades: one each for the largest grades.
		{"too few", map[int]int{0: 990, 1: 5, 2: 3, 3: 5}, 3, map[int]int{0: 1, 1: 1, 3: 1}},
		{"none", map[int]int{0: 990, 1: 5}, 0, map[int]int{}},
	}
	for _, c := range cases {
		if got := allocate(c.sizes, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAllocateProperties checks on random sizes that the shares add up to
// n, fit their strata, give every grade one when n allows, and stay
// within one of the proportional quota unless raised to one.
func TestAllocateProperties(t *testing.T) {
	seed := uint64(11)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	for range 2000 {
		sizes := make(map[int]int)
		total := 0
		for g := range 1 + r.IntN(6) {
			if r.IntN(4) > 0 {
				sizes[g] = 1 + r.IntN(1+r.IntN(500))
				total += sizes[g]
			}
		}
		if total < 2 {
			continue
		}
		n := r.IntN(total)
		got := allocate(sizes, n)
		sum := 0
		for g, k := range got {
			sum += k
			if k < 1 || k > sizes[g] {
				t.Fatalf("%v, n %d: grade %d gets %d", sizes, n, g, k)
			}
			quota := float64(n) * float64(sizes[g]) / float64(total)
			if k > 1 && (float64(k) > quota+1 || float64(k) < quota-float64(len(sizes))) {
				t.Fatalf("%v, n %d: grade %d gets %d, quota %.2f", sizes, n, g, k, quota)
			}
		}
		if sum != n || (n >= len(sizes) && len(got) != len(sizes)) {
			t.Fatalf("%v, n %d: %v", sizes, n, got)
		}
	}
}

// TestSampleDeterministic checks that the sample depends on the pairs, n
// and the seed only: not on the order of the input.
func TestSampleDeterministic(t *testing.T) {
	pool := judgedPool(map[int]int{0: 400, 1: 150, 2: 40, 3: 10})
	want, err := Sample(pool, 60, 42)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(want, comparePairs) || len(want) != 60 {
		t.Fatalf("%d pairs, sorted %v", len(want), slices.IsSortedFunc(want, comparePairs))
	}
	if g := perGrade(want); !reflect.DeepEqual(g, map[int]int{0: 40, 1: 15, 2: 4, 3: 1}) {
		t.Errorf("per grade %v, want 40 15 4 1", g)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		shuffled := slices.Clone(pool)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := Sample(shuffled, 60, 42)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled input: a different sample (%v)", err)
		}
	}
	other, _ := Sample(pool, 60, 43)
	if reflect.DeepEqual(other, want) {
		t.Errorf("seeds 42 and 43 give the same sample")
	}
}

// TestSampleNested checks that within a grade the pairs taken are the
// first of one order: a larger share contains a smaller one. Here the
// shares are 14, 5, 1 of 20 and 56, 19, 5 of 80.
func TestSampleNested(t *testing.T) {
	pool := judgedPool(map[int]int{0: 300, 1: 100, 2: 30})
	small, _ := Sample(pool, 20, 9)
	large, _ := Sample(pool, 80, 9)
	for _, p := range small {
		if _, found := slices.BinarySearchFunc(large, p, comparePairs); !found {
			t.Fatalf("%v in the sample of 20, not in that of 80", p)
		}
	}
}

// TestSampleUniform checks that, over many seeds, every pair of a grade is
// taken about as often as the others: 3 of 10 pairs, 3000 seeds, 900
// expected each (standard deviation about 25).
func TestSampleUniform(t *testing.T) {
	pool := judgedPool(map[int]int{0: 10, 1: 10})
	count := make(map[string]int)
	for seed := range uint64(3000) {
		s, err := Sample(pool, 6, seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range s {
			count[p.DocID]++
		}
	}
	for _, p := range pool {
		if c := count[p.DocID]; c < 800 || c > 1000 {
			t.Errorf("%s taken %d times, want about 900", p.DocID, c)
		}
	}
}

// TestSampleEdges checks n of 0, n at least the pool, and the refusals.
func TestSampleEdges(t *testing.T) {
	pool := judgedPool(map[int]int{0: 3, 2: 2})
	if s, err := Sample(pool, 0, 1); err != nil || len(s) != 0 {
		t.Errorf("n 0: %v, %v", s, err)
	}
	all := slices.Clone(pool)
	slices.SortFunc(all, comparePairs)
	for _, n := range []int{5, 9} {
		if s, err := Sample(pool, n, 1); err != nil || !reflect.DeepEqual(s, all) {
			t.Errorf("n %d: %v, %v; want all, sorted", n, s, err)
		}
	}
	if s, err := Sample(nil, 3, 1); err != nil || len(s) != 0 {
		t.Errorf("no pairs: %v, %v", s, err)
	}
	if _, err := Sample(pool, -1, 1); err == nil {
		t.Error("n -1: no error")
	}
	dup := append(slices.Clone(pool), Judged{QueryID: pool[0].QueryID, DocID: pool[0].DocID, Grade: 1})
	if _, err := Sample(dup, 2, 1); err == nil {
		t.Error("a pair given twice: no error")
	}
}
