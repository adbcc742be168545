package exact

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// values returns a reproducible mix of magnitudes, signs, subnormals and
// values whose naive float64 sum depends on the order.
func values(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]float64, n)
	for i := range out {
		switch r.IntN(6) {
		case 0:
			out[i] = r.Float64()
		case 1:
			out[i] = -r.Float64() * math.Pow(2, float64(r.IntN(200)-100))
		case 2:
			out[i] = math.Float64frombits(r.Uint64() & (1<<52 - 1)) // subnormal
		case 3:
			out[i] = 1e300 * r.Float64()
		case 4:
			out[i] = 1 / float64(r.IntN(1000)+1)
		default:
			out[i] = float64(r.IntN(100))
		}
	}
	return out
}

func ratSum(vs []float64) *big.Rat {
	total := new(big.Rat)
	for _, v := range vs {
		total.Add(total, new(big.Rat).SetFloat64(v))
	}
	return total
}

func TestSumIsExact(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		vs := values(seed, 2000)
		var s Sum
		for _, v := range vs {
			if err := s.Add(v); err != nil {
				t.Fatal(err)
			}
		}
		want := ratSum(vs)
		if got := s.Rat(); got.Cmp(want) != 0 {
			t.Fatalf("seed %d: exact sum %s, want %s", seed, got.FloatString(30), want.FloatString(30))
		}
		wantF, _ := want.Float64()
		if got := s.Float64(); got != wantF {
			t.Fatalf("seed %d: Float64 = %v, want %v", seed, got, wantF)
		}
	}
}

func TestSumOrderAndSplitIndependent(t *testing.T) {
	vs := values(42, 5000)
	var whole Sum
	for _, v := range vs {
		_ = whole.Add(v)
	}
	want, _ := whole.MarshalBinary()
	r := rand.New(rand.NewPCG(7, 7))
	for _, parts := range []int{1, 7, 64} {
		perm := r.Perm(len(vs))
		sums := make([]Sum, parts)
		for i, j := range perm {
			_ = sums[i%parts].Add(vs[j])
		}
		var merged Sum
		for i := len(sums) - 1; i >= 0; i-- {
			merged.Merge(&sums[i])
		}
		got, _ := merged.MarshalBinary()
		if string(got) != string(want) {
			t.Fatalf("%d parts: encoding differs from the single sum", parts)
		}
		if merged.Mean(int64(len(vs))) != whole.Mean(int64(len(vs))) {
			t.Fatalf("%d parts: mean differs", parts)
		}
	}
}

func TestNaiveSumWouldDiffer(t *testing.T) {
	// Guard that the test data above really exercises non-associativity:
	// the naive float64 sum in two orders differs, the exact one does not.
	vs := []float64{1e16, 1, -1e16, 1}
	naive1 := ((vs[0] + vs[1]) + vs[2]) + vs[3]
	naive2 := ((vs[0] + vs[2]) + vs[1]) + vs[3]
	if naive1 == naive2 {
		t.Fatal("test data does not show non-associativity")
	}
	var a, b Sum
	for _, i := range []int{0, 1, 2, 3} {
		_ = a.Add(vs[i])
	}
	for _, i := range []int{0, 2, 1, 3} {
		_ = b.Add(vs[i])
	}
	if a.Float64() != 2 || b.Float64() != 2 {
		t.Fatalf("exact sums = %v, %v, want 2", a.Float64(), b.Float64())
	}
}

func TestAddScaled(t *testing.T) {
	vs := values(3, 500)
	var s Sum
	want := new(big.Rat)
	for i, v := range vs {
		w := uint32(i % (MaxScale + 1))
		if err := s.AddScaled(v, w); err != nil {
			t.Fatal(err)
		}
		want.Add(want, new(big.Rat).Mul(new(big.Rat).SetFloat64(v), new(big.Rat).SetInt64(int64(w))))
	}
	if s.Rat().Cmp(want) != 0 {
		t.Fatal("scaled sum is not exact")
	}
	if err := s.AddScaled(1, MaxScale+1); err == nil {
		t.Fatal("scale above MaxScale accepted")
	}
}

func TestRejectsNonFinite(t *testing.T) {
	var s Sum
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if err := s.Add(v); err != ErrNotFinite {
			t.Fatalf("Add(%v) = %v, want ErrNotFinite", v, err)
		}
	}
	if !s.IsZero() {
		t.Fatal("rejected values changed the sum")
	}
}

func TestExtremes(t *testing.T) {
	var s Sum
	for i := 0; i < 8; i++ {
		_ = s.Add(math.MaxFloat64)
	}
	if !math.IsInf(s.Float64(), 1) {
		t.Fatalf("8·MaxFloat64 = %v, want +Inf after rounding", s.Float64())
	}
	if got := s.Mean(8); got != math.MaxFloat64 {
		t.Fatalf("mean of 8·MaxFloat64 = %v", got)
	}
	var tiny Sum
	_ = tiny.Add(math.SmallestNonzeroFloat64)
	_ = tiny.Add(-math.SmallestNonzeroFloat64)
	_ = tiny.Add(math.SmallestNonzeroFloat64)
	if tiny.Float64() != math.SmallestNonzeroFloat64 {
		t.Fatal("smallest subnormal lost")
	}
}

func TestNormalizationUnderManyAdds(t *testing.T) {
	var s Sum
	s.pending = normalizeEvery - 3 // force a carry propagation mid-way
	for i := 0; i < 10; i++ {
		_ = s.AddScaled(math.MaxFloat64/1024, MaxScale)
	}
	want := new(big.Rat).Mul(new(big.Rat).SetFloat64(math.MaxFloat64/1024), big.NewRat(10*MaxScale, 1))
	if s.Rat().Cmp(want) != 0 {
		t.Fatal("sum wrong across a normalization")
	}
}

func TestEncodingRoundTrip(t *testing.T) {
	var s Sum
	for _, v := range values(9, 300) {
		_ = s.Add(v)
	}
	b, _ := s.MarshalBinary()
	var d Sum
	if err := d.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if d.Rat().Cmp(s.Rat()) != 0 {
		t.Fatal("round trip changed the value")
	}
	var zero Sum
	zb, _ := zero.MarshalBinary()
	if err := d.UnmarshalBinary(zb); err != nil || !d.IsZero() {
		t.Fatalf("zero round trip: %v", err)
	}
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 0}, {1, 0, 200}, {1, 0, 1}, {1, 0, 1, 0x80}} {
		if err := d.UnmarshalBinary(bad); err == nil {
			t.Fatalf("decoded garbage %v", bad)
		}
	}
}

func FuzzDecode(f *testing.F) {
	var s Sum
	_ = s.Add(0.25)
	b, _ := s.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Sum
		if err := s.UnmarshalBinary(data); err != nil {
			return
		}
		again, _ := s.MarshalBinary()
		var s2 Sum
		if err := s2.UnmarshalBinary(again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if s.Rat().Cmp(s2.Rat()) != 0 {
			t.Fatal("value changed across re-encoding")
		}
	})
}

func BenchmarkAdd(b *testing.B) {
	vs := values(1, 4096)
	var s Sum
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.Add(vs[i&4095])
	}
}

func TestResetAndMergeBinary(t *testing.T) {
	vs := values(5, 3000)
	var whole, acc, scratch Sum
	for _, v := range vs {
		_ = whole.Add(v)
	}
	// Encode chunks, merge their encodings into acc; reuse one Sum with
	// Reset for the chunks.
	var chunk Sum
	for i := 0; i < len(vs); i += 100 {
		chunk.Reset()
		for _, v := range vs[i:min(i+100, len(vs))] {
			_ = chunk.Add(v)
		}
		b := chunk.AppendBinary(nil)
		n, err := acc.MergeBinary(b, &scratch)
		if err != nil || n != len(b) {
			t.Fatalf("merge binary: %v (%d of %d bytes)", err, n, len(b))
		}
	}
	if acc.Rat().Cmp(whole.Rat()) != 0 {
		t.Fatal("merged encodings differ from the whole")
	}
	a, _ := acc.MarshalBinary()
	w, _ := whole.MarshalBinary()
	if string(a) != string(w) {
		t.Fatal("canonical encodings differ")
	}
	chunk.Reset()
	if !chunk.IsZero() || chunk.lo != 0 || chunk.hi != 0 {
		t.Fatal("Reset left digits")
	}
	for _, d := range chunk.digits {
		if d != 0 {
			t.Fatal("Reset left a non-zero digit")
		}
	}
}

func TestNegativeCarriesReachTheTop(t *testing.T) {
	var s Sum
	_ = s.Add(1)
	_ = s.Add(-3)
	if s.Float64() != -2 {
		t.Fatalf("1-3 = %v", s.Float64())
	}
	var o Sum
	_ = o.Add(2.5)
	s.Merge(&o)
	if s.Float64() != 0.5 {
		t.Fatalf("-2+2.5 = %v", s.Float64())
	}
	b, _ := s.MarshalBinary()
	var d Sum
	if err := d.UnmarshalBinary(b); err != nil || d.Float64() != 0.5 {
		t.Fatalf("round trip: %v %v", d.Float64(), err)
	}
}
