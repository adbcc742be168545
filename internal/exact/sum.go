package exact

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
)

const (
	// digitBits is the width of one digit of the fixed-point number.
	digitBits = 32
	digitMask = 1<<digitBits - 1
	// lsbExp is the exponent of the least significant bit: the smallest
	// subnormal float64 is 2^-1074.
	lsbExp = -1074
	// numDigits covers bit positions 0..2097 (the largest finite float64 has
	// its top mantissa bit at position 2097) plus three digits of headroom for
	// the carries of up to 2^96 additions.
	numDigits = 2098/digitBits + 4
	// normalizeEvery bounds the additions between carry propagations. Each
	// addition puts at most 2^32 into a word (the scaled mantissa is split
	// into 32-bit digits), so 2^29 additions on top of a normalized word stay
	// below 2^62.
	normalizeEvery = 1 << 29
	// MaxScale is the largest multiplier AddScaled accepts.
	MaxScale = 255
)

// ErrNotFinite is returned by Add for NaN and infinite values.
var ErrNotFinite = errors.New("exact: value is not finite")

// Sum is an exact accumulator of float64 values. The zero value is an empty
// sum, ready to use.
type Sum struct {
	digits  [numDigits]int64
	pending int32 // additions since the last carry propagation
	// lo and hi bound the digits that may be non-zero: [lo, hi). Values
	// of one magnitude touch a handful of the 69 digits, so carrying,
	// encoding, merging and resetting look at those only.
	lo, hi int16
}

// Add adds v exactly. It returns ErrNotFinite for NaN or ±Inf and leaves the
// sum unchanged.
func (s *Sum) Add(v float64) error {
	return s.AddScaled(v, 1)
}

// AddScaled adds v·w exactly, for 0 ≤ w ≤ MaxScale (a bootstrap weight, a
// multiplicity). It returns ErrNotFinite for NaN or ±Inf.
func (s *Sum) AddScaled(v float64, w uint32) error {
	if w > MaxScale {
		return fmt.Errorf("exact: scale %d out of range [0,%d]", w, MaxScale)
	}
	bits := math.Float64bits(v)
	exp := int((bits >> 52) & 0x7ff)
	if exp == 0x7ff {
		return ErrNotFinite
	}
	if w == 0 || bits<<1 == 0 {
		return nil // zero (of either sign) or zero weight
	}
	mant := bits & (1<<52 - 1)
	pos := 0 // bit position of the mantissa's least significant bit
	if exp != 0 {
		mant |= 1 << 52
		pos = exp - 1
	}
	// mant·w < 2^61, so it still fits a uint64 after scaling.
	mant *= uint64(w)
	idx, sh := pos/digitBits, uint(pos%digitBits)
	// Split mant·2^sh (up to 93 bits) into three 32-bit digits without
	// overflowing: lo from the shifted value, the rest from the unshifted one.
	d0 := int64((mant << sh) & digitMask)
	rest := mant >> (digitBits - sh) // (mant·2^sh) >> 32, valid for sh < 32
	d1 := int64(rest & digitMask)
	d2 := int64(rest >> digitBits)
	if bits>>63 != 0 {
		d0, d1, d2 = -d0, -d1, -d2
	}
	s.digits[idx] += d0
	s.digits[idx+1] += d1
	s.digits[idx+2] += d2
	if s.hi == 0 { // empty: the zero value has lo = hi = 0
		s.lo, s.hi = int16(idx), int16(idx+3)
	} else {
		s.lo = min(s.lo, int16(idx))
		s.hi = max(s.hi, int16(idx+3))
	}
	s.pending++
	if s.pending >= normalizeEvery {
		s.normalize()
	}
	return nil
}

// normalize propagates carries so that every digit but the top one lies in
// [0, 2^32). The top digit carries the sign. Only the touched range is
// visited, extended as far as a carry reaches.
func (s *Sum) normalize() {
	if s.hi == 0 {
		s.pending = 0
		return
	}
	var carry int64
	i := int(s.lo)
	for ; i < numDigits-1; i++ {
		v := s.digits[i] + carry
		carry = v >> digitBits // arithmetic shift: floor division
		s.digits[i] = v & digitMask
		if carry == 0 && i >= int(s.hi)-1 {
			break
		}
	}
	if i == numDigits-1 {
		s.digits[numDigits-1] += carry
		s.hi = numDigits
	} else {
		s.hi = max(s.hi, int16(i+1))
	}
	// Trim digits that became zero.
	for s.hi > s.lo && s.digits[s.hi-1] == 0 {
		s.hi--
	}
	for s.lo < s.hi && s.digits[s.lo] == 0 {
		s.lo++
	}
	if s.lo == s.hi {
		s.lo, s.hi = 0, 0
	}
	s.pending = 0
}

// Reset makes the sum zero, clearing only the digits it used.
func (s *Sum) Reset() {
	if s.hi != 0 {
		clear(s.digits[s.lo:s.hi])
	}
	s.lo, s.hi, s.pending = 0, 0, 0
}

// Merge adds the value of o into s exactly. o is not modified.
func (s *Sum) Merge(o *Sum) {
	if o.hi == 0 {
		return
	}
	c := *o
	c.normalize()
	s.mergeNormalized(&c)
}

// mergeNormalized adds a normalized o.
func (s *Sum) mergeNormalized(o *Sum) {
	if o.hi == 0 {
		return
	}
	s.normalize()
	for i := o.lo; i < o.hi; i++ {
		s.digits[i] += o.digits[i]
	}
	if s.hi == 0 {
		s.lo, s.hi = o.lo, o.hi
	} else {
		s.lo, s.hi = min(s.lo, o.lo), max(s.hi, o.hi)
	}
	s.normalize()
}

// IsZero reports whether the sum is exactly zero.
func (s *Sum) IsZero() bool {
	c := *s
	c.normalize()
	return c.hi == 0
}

// bigInt returns the sum as an integer multiple of 2^lsbExp.
func (s *Sum) bigInt() *big.Int {
	c := *s
	c.normalize()
	x := new(big.Int)
	top := c.digits[numDigits-1]
	x.SetInt64(top)
	var d big.Int
	for i := numDigits - 2; i >= 0; i-- {
		x.Lsh(x, digitBits)
		x.Add(x, d.SetInt64(c.digits[i]))
	}
	return x
}

// Rat returns the exact value of the sum.
func (s *Sum) Rat() *big.Rat {
	num := s.bigInt()
	den := new(big.Int).Lsh(big.NewInt(1), -lsbExp)
	return new(big.Rat).SetFrac(num, den)
}

// Float64 returns the sum rounded once to the nearest float64 (ties to even).
// A sum beyond the float64 range returns ±Inf.
func (s *Sum) Float64() float64 {
	f, _ := s.Rat().Float64()
	return f
}

// Mean returns sum/n rounded once to the nearest float64. It returns 0 when n
// is 0.
func (s *Sum) Mean(n int64) float64 {
	if n == 0 {
		return 0
	}
	r := s.Rat()
	r.Quo(r, new(big.Rat).SetInt64(n))
	f, _ := r.Float64()
	return f
}

// encodingVersion prefixes the binary encoding.
const encodingVersion = 1

// MarshalBinary encodes the value of the sum canonically: a version byte,
// the index of the lowest non-zero digit, the count of digits and the digits
// as zig-zag varints. Equal values give equal bytes. (It propagates the
// sum's pending carries, which does not change its value.)
func (s *Sum) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(nil), nil
}

// AppendBinary appends the canonical encoding of the sum to b.
func (s *Sum) AppendBinary(b []byte) []byte {
	s.normalize() // normalizing keeps the value: it is not a change
	lo, hi := int(s.lo), int(s.hi)
	b = append(b, encodingVersion)
	b = binary.AppendUvarint(b, uint64(lo))
	b = binary.AppendUvarint(b, uint64(hi-lo))
	for _, d := range s.digits[lo:hi] {
		b = binary.AppendVarint(b, d)
	}
	return b
}

// MergeBinary adds the sum encoded at the front of b (as AppendBinary
// wrote it) and returns the bytes read. scratch is overwritten; passing
// one avoids an allocation per call.
func (s *Sum) MergeBinary(b []byte, scratch *Sum) (int, error) {
	n, err := scratch.Decode(b)
	if err != nil {
		return 0, err
	}
	s.mergeNormalized(scratch)
	return n, nil
}

// UnmarshalBinary decodes what MarshalBinary produced, replacing the sum.
func (s *Sum) UnmarshalBinary(b []byte) error {
	n, err := s.Decode(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("decode exact sum: %d trailing bytes", len(b)-n)
	}
	return nil
}

// Decode decodes one sum from the front of b, replacing s, and returns the
// number of bytes read.
func (s *Sum) Decode(b []byte) (int, error) {
	s.Reset()
	if len(b) == 0 {
		return 0, errors.New("decode exact sum: empty input")
	}
	if b[0] != encodingVersion {
		return 0, fmt.Errorf("decode exact sum: unknown encoding version %d", b[0])
	}
	off := 1
	lo, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, errors.New("decode exact sum: bad digit offset")
	}
	off += n
	cnt, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, errors.New("decode exact sum: bad digit count")
	}
	off += n
	if lo > numDigits || cnt > numDigits-lo {
		return 0, fmt.Errorf("decode exact sum: digits [%d,+%d) out of range", lo, cnt)
	}
	for i := 0; i < int(cnt); i++ {
		d, n := binary.Varint(b[off:])
		if n <= 0 {
			return 0, errors.New("decode exact sum: truncated digits")
		}
		off += n
		idx := int(lo) + i
		if idx < numDigits-1 && (d < 0 || d > digitMask) {
			return 0, fmt.Errorf("decode exact sum: digit %d = %d is not normalized", idx, d)
		}
		s.digits[idx] = d
	}
	if cnt > 0 {
		s.lo, s.hi = int16(lo), int16(lo+cnt)
		s.normalize() // trims zero digits at the ends
	}
	return off, nil
}
