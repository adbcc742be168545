package metric

import (
	"math/big"
	"testing"
)

// poissonCDF must be floor(2^32 · P(X ≤ k)) for X ~ Poisson(1), computed
// exactly: every machine draws the same bootstrap weights only if the
// table is integers, and those integers must be the right ones.
func TestPoissonCDFIsExact(t *testing.T) {
	// e^-1 = Σ (-1)^n / n!; the alternating tail after n = 60 is below
	// 1/61!, far smaller than any distance to an integer boundary here.
	invE := new(big.Rat)
	fact := big.NewInt(1)
	for n := int64(0); n <= 60; n++ {
		if n > 0 {
			fact.Mul(fact, big.NewInt(n))
		}
		term := new(big.Rat).SetFrac(big.NewInt(1), fact)
		if n%2 == 1 {
			term.Neg(term)
		}
		invE.Add(invE, term)
	}
	sum := new(big.Rat) // Σ_{j ≤ k} 1/j!
	fact.SetInt64(1)
	scale := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 32))
	for k := range poissonCDF {
		if k > 0 {
			fact.Mul(fact, big.NewInt(int64(k)))
		}
		sum.Add(sum, new(big.Rat).SetFrac(big.NewInt(1), fact))
		cdf := new(big.Rat).Mul(invE, sum)
		cdf.Mul(cdf, scale)
		want := new(big.Int).Quo(cdf.Num(), cdf.Denom()) // floor: positive
		if !want.IsUint64() || want.Uint64() != poissonCDF[k] {
			t.Errorf("poissonCDF[%d] = %d, want %s", k, poissonCDF[k], want)
		}
	}
}

// The weights follow Poisson(1): mean and variance 1 over many draws.
func TestPoissonWeights(t *testing.T) {
	var s splitmix64 = 42
	const n = 1 << 20
	var sum, sq float64
	for range n {
		w := float64(poisson(s.next() & 0xffffffff))
		sum += w
		sq += w * w
	}
	mean := sum / n
	if v := sq/n - mean*mean; mean < 0.99 || mean > 1.01 || v < 0.98 || v > 1.02 {
		t.Fatalf("mean %v, variance %v: want 1 and 1", mean, v)
	}
}
