package metric

import (
	"math/big"
	"sync"
	"sync/atomic"
)

// The nDCG discount divides the gain at 0-based rank i by log2(i+2), as
// trec_eval does. math.Log2 is assembly on some architectures and pure Go on
// others, so its last bit can differ between the machines of one cluster;
// the table is computed instead with math/big, which is integer arithmetic
// and gives the same bits everywhere.

// log2Table holds log2(i+2) for i < len(table). It only grows, by
// doubling from minLog2 entries, when a ranking needs more: computing
// entries costs about 20 µs each, too much to spend on a thousand of them
// at every start of the program.
var (
	log2Table  atomic.Pointer[[]float64]
	log2GrowMu sync.Mutex
)

const minLog2 = 128

func init() { log2Table.Store(new([]float64)) }

// log2Of returns a table with log2(i+2) for every i < n (and possibly more).
// It is safe for concurrent use; the returned slice is read-only.
func log2Of(n int) []float64 {
	t := *log2Table.Load()
	if len(t) >= n {
		return t
	}
	log2GrowMu.Lock()
	defer log2GrowMu.Unlock()
	t = *log2Table.Load()
	if len(t) >= n {
		return t
	}
	size := max(len(t), minLog2)
	for size < n {
		size *= 2
	}
	grown := make([]float64, size)
	copy(grown, t)
	for i := len(t); i < size; i++ {
		grown[i] = exactLog2(int64(i) + 2)
	}
	log2Table.Store(&grown)
	return grown
}

// log2Prec is the working precision of exactLog2, in bits: 64 bits beyond
// float64's 53, so the final rounding is correct but for values within
// 2^-117 of a rounding boundary.
const log2Prec = 128

var (
	ln2Once sync.Once
	ln2Big  *big.Float
)

func ln2() *big.Float {
	ln2Once.Do(func() {
		// ln 2 = 2·atanh(1/3).
		p := uint(log2Prec + 16)
		third := new(big.Float).SetPrec(p).Quo(big.NewFloat(1).SetPrec(p), big.NewFloat(3).SetPrec(p))
		ln2Big = twoAtanh(third)
	})
	return ln2Big
}

// exactLog2 returns log2(n) for n ≥ 1, rounded to the nearest float64.
func exactLog2(n int64) float64 {
	if n&(n-1) == 0 { // powers of two are exact
		e := 0
		for n > 1 {
			n >>= 1
			e++
		}
		return float64(e)
	}
	p := uint(log2Prec + 16)
	// n = m·2^e with m in [1,2): ln n = ln m + e·ln 2, ln m = 2·atanh((m-1)/(m+1)).
	m := new(big.Float).SetPrec(p)
	e := new(big.Float).SetPrec(p).SetInt64(n).MantExp(m) - 1 // MantExp gives m in [0.5,1)
	m.SetMantExp(m, 1)
	one := new(big.Float).SetPrec(p).SetInt64(1)
	z := new(big.Float).SetPrec(p).Quo(
		new(big.Float).SetPrec(p).Sub(m, one),
		new(big.Float).SetPrec(p).Add(m, one))
	r := twoAtanh(z)
	r.Quo(r, ln2())
	r.Add(r, new(big.Float).SetPrec(p).SetInt64(int64(e)))
	f, _ := r.Float64()
	return f
}

// twoAtanh returns 2·atanh(z) = 2·(z + z^3/3 + z^5/5 + …) for 0 ≤ z ≤ 1/3,
// where every term gains more than three bits.
func twoAtanh(z *big.Float) *big.Float {
	p := z.Prec()
	z2 := new(big.Float).SetPrec(p).Mul(z, z)
	sum := new(big.Float).SetPrec(p).Set(z)
	power := new(big.Float).SetPrec(p).Set(z)
	term := new(big.Float).SetPrec(p)
	div := new(big.Float).SetPrec(p)
	for k := int64(3); k < 1000; k += 2 {
		power.Mul(power, z2)
		term.Quo(power, div.SetInt64(k))
		if term.Sign() == 0 || term.MantExp(nil)-sum.MantExp(nil) < -int(p) {
			break
		}
		sum.Add(sum, term)
	}
	return sum.Mul(sum, new(big.Float).SetPrec(p).SetInt64(2))
}
