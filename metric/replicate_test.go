package metric

import (
	"slices"
	"testing"
)

// The block sums are the reference's (PairedStats.addTerms, one term at a
// time in int128), bit for bit: for typical differences, for differences
// large enough to flush the int64 sums every few queries or to take the
// reference path, with zero queries, odd replicate and permutation counts
// and a partial last block.
func TestReplicateBlockMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name        string
		reps, perms int
		measures    int
		scale       uint
	}{
		{"typical", 1000, 1000, 14, 52},
		{"odd counts", 37, 65, 5, 52},
		{"no permutations", 64, 0, 3, 50},
		{"no replicates", 0, 130, 2, 52},
		{"frequent flushes", 200, 200, 6, 55},
		{"reference path", 50, 70, 4, 58},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Pairing{Replicates: c.reps, Permutations: c.perms, Seed: 3}
			for i := range c.measures {
				p.Measures = append(p.Measures, i)
			}
			got, want := newPairedStats(p), newPairedStats(p)
			b := newReplicateBlock(p)
			rng := splitmix64(uint64(c.reps*7 + c.perms))
			weights := make([]uint8, c.reps)
			signs := make([]uint64, (c.perms+63)/64)
			d := make([]int64, c.measures)
			for q := range 203 {
				p.draws(string(rune('a'+q%26))+string(rune('0'+q/26)), weights, signs)
				for i := range d {
					switch rng.next() % 4 {
					case 0:
						d[i] = 0
					default:
						x, y := rng.next(), rng.next()
						d[i] = int64(x>>(64-c.scale)) - int64(y>>(64-c.scale))
					}
				}
				if q%17 == 0 {
					clear(d)
				}
				got.addDiffs(d)
				want.addCounts(d, weights)
				b.add(got, d, weights, signs)
				want.addTerms(d, weights, signs)
				if q%50 == 49 {
					b.flush(got)
				}
			}
			b.flush(got)
			if string(got.append(nil)) != string(want.append(nil)) {
				t.Fatal("block sums differ from the reference's")
			}
		})
	}
}

// The row loops of this build (SIMD or not) give the scalar loops' sums.
func TestRowLoopsMatchScalar(t *testing.T) {
	rng := splitmix64(11)
	for _, vecs := range []int{1, 2, 4} {
		const reps = 333
		rand := func(n int, shift uint) []vec4 {
			v := make([]vec4, n)
			for i := range v {
				for l := range v[i] {
					x, y := rng.next(), rng.next()
					v[i][l] = int64(x>>shift) - int64(y>>shift)
				}
			}
			return v
		}
		sub, init := rand(256*vecs, 8), rand(reps*vecs, 4)
		w := make([]uint8, reps*blockQueries)
		for i := range w {
			w[i] = uint8(rng.next() % 12)
		}
		tt := make([]uint8, reps)
		for i := range tt {
			tt[i] = uint8(rng.next())
		}
		got, want := slices.Clone(init), slices.Clone(init)
		addReplicateRows(got, sub, w, vecs)
		addReplicateRowsScalar(want, sub, w, vecs)
		if !slices.Equal(got, want) {
			t.Fatalf("%d vectors: replicate rows differ (simd %v)", vecs, simdRows)
		}
		got, want = slices.Clone(init), slices.Clone(init)
		addPermutationRows(got, sub, tt, vecs)
		addPermutationRowsScalar(want, sub, tt, vecs)
		if !slices.Equal(got, want) {
			t.Fatalf("%d vectors: permutation rows differ (simd %v)", vecs, simdRows)
		}
	}
	t.Logf("row loops vectorised: %v", simdRows)
}

func TestTranspose8AndGather8(t *testing.T) {
	rng := splitmix64(5)
	for range 1000 {
		x := rng.next()
		y := transpose8(x)
		for j := range 8 {
			for k := range 8 {
				if x>>(8*j+k)&1 != y>>(8*k+j)&1 {
					t.Fatalf("transpose8(%#x) = %#x: bit (%d,%d)", x, y, j, k)
				}
			}
		}
		g := gather8(x & lowBits)
		for j := range 8 {
			if g>>j&1 != x>>(8*j)&1 || g >= 256 {
				t.Fatalf("gather8(%#x) = %#x", x&lowBits, g)
			}
		}
	}
}

// poisson (by table) is poissonCount at the ends of every bucket, at and
// next to every threshold, and on random draws.
func TestPoissonTable(t *testing.T) {
	check := func(u uint64) {
		if poisson(u) != poissonCount(u) {
			t.Fatalf("poisson(%d) = %d, want %d", u, poisson(u), poissonCount(u))
		}
	}
	for i := range uint64(1 << 12) {
		check(i << 20)
		check(i<<20 + 1<<20 - 1)
	}
	for _, th := range poissonCDF {
		check(th - 1)
		check(th)
		check(th + 1)
	}
	rng := splitmix64(1)
	for range 1 << 16 {
		check(rng.next() & 0xffffffff)
	}
	straddling := 0
	for _, w := range poissonBuckets {
		straddling += int(b2u(w == poissonStraddles))
	}
	if straddling > len(poissonCDF) {
		t.Fatalf("%d straddling buckets", straddling)
	}
}

// weightSums gives the sums of adding the weights one by one, with every
// weight at its largest (11, the most a byte lane may add up before it is
// spilled) or mixed, for replicate counts with and without a partial word,
// flushed early, at the spill or never before the end.
func TestWeightSumsMatchOneByOne(t *testing.T) {
	rng := splitmix64(5)
	for _, reps := range []int{0, 5, 8, 64, 1000, 1003} {
		for _, queries := range []int{1, maxPackedQueries - 1, maxPackedQueries, maxPackedQueries + 1, 100} {
			for _, largest := range []bool{true, false} {
				got, want := make([]int64, reps), make([]int64, reps)
				ws := weightSums{packed: make([]uint64, reps/8)}
				weights := make([]uint8, reps)
				for q := range queries {
					for i := range weights {
						weights[i] = 11
						if !largest {
							weights[i] = uint8(rng.next() % 12)
						}
						want[i] += int64(weights[i])
					}
					ws.add(got, weights)
					if q == 30 {
						ws.flush(got)
					}
				}
				ws.flush(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%d replicates, %d queries, largest %v: sums differ", reps, queries, largest)
				}
			}
		}
	}
}

// addCounts adds a query's bootstrap weights and its differences d to the
// sums of weights and of differences, one by one: the reference of
// addDiffs and of the weight sums of replicateBlock.add.
func (s *PairedStats) addCounts(d []int64, weights []uint8) {
	for i, w := range weights {
		s.W[i] += int64(w)
	}
	s.addDiffs(d)
}
