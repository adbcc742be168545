package schema

import (
	"encoding/binary"
	"math/bits"
	"strconv"
)

// Field splitting and number parsing for the TREC hot path. Both have a
// fast path for the common case and fall back to the general code, and both
// are tested (and fuzzed) against the general code for identical results.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// sepMask returns a word whose high bit is set in every byte of x that is a
// space or a tab (and possibly in bytes after the first such byte, which
// the caller does not look at).
func sepMask(x uint64) uint64 {
	sp := x ^ (0x20 * lsb)
	tb := x ^ (0x09 * lsb)
	return ((sp-lsb)&^sp | (tb-lsb)&^tb) & msb
}

// nextSep returns the index of the first space or tab in l at or after i,
// or len(l). It tests eight bytes per step.
func nextSep(l []byte, i int) int {
	for ; i+8 <= len(l); i += 8 {
		if m := sepMask(binary.LittleEndian.Uint64(l[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(l); i++ {
		if l[i] == ' ' || l[i] == '\t' {
			return i
		}
	}
	return len(l)
}

// sepBits returns, for a line of fewer than 64 bytes, a mask with bit i set
// when byte i is a space or a tab. Each 8-byte word is tested exactly (no
// borrow from one byte into the next) and its eight flags are packed into
// eight bits with a multiply.
func sepBits(l []byte) uint64 {
	const low7 = 0x7f * lsb
	// Read whole words straight from the line when its backing array
	// extends far enough (lines are cut from a larger block), else from a
	// padded copy. Bits beyond len(l) are masked off by the caller.
	src := l[:cap(l)]
	if len(src) < (len(l)+7)&^7 {
		var word [64]byte
		copy(word[:], l)
		src = word[:]
	}
	var mask uint64
	for k := 0; k < len(l); k += 8 {
		x := binary.LittleEndian.Uint64(src[k:])
		sp := x ^ (0x20 * lsb)
		tb := x ^ (0x09 * lsb)
		// A byte of y is zero exactly when (y&low7)+low7 has no high bit
		// and y has none either.
		zsp := ^((sp&low7 + low7) | sp | low7)
		ztb := ^((tb&low7 + low7) | tb | low7)
		flags := (zsp | ztb) >> 7 // one bit per byte, at bit 0 of the byte
		mask |= (flags * 0x0102040810204080 >> 56) << uint(k)
	}
	return mask
}

// splitFieldsFast splits like splitFields. Lines shorter than 64 bytes (all
// TREC lines in practice) are split from a bit mask of separators: field
// starts and ends are the edges of the runs of non-separator bits.
func splitFieldsFast(l []byte, out []field) ([]field, int) {
	if len(l) >= 64 {
		return splitFieldsWords(l, out)
	}
	data := ^sepBits(l) & (1<<uint(len(l)) - 1)
	starts := data &^ (data << 1)
	ends := ^data & (data << 1) // bit i: a field ends before byte i
	n := bits.OnesCount64(starts)
	out = out[:0]
	for starts != 0 && len(out) < cap(out) {
		s := bits.TrailingZeros64(starts)
		e := bits.TrailingZeros64(ends)
		out = append(out, field{b: l[s:e], col: s + 1})
		starts &= starts - 1
		ends &= ends - 1
	}
	return out, n
}

// qrelsFields returns the query id, doc id and grade (and its column) of a
// qrels line, the first, third and fourth of its fields, and the number
// of fields, as splitFieldsFast would, without building the fields: when
// n is not 4 the others are zero. Lines shorter than 64 bytes are split
// from the edges of the separator mask directly.
func qrelsFields(l []byte, scratch []field) (qid, doc, grade []byte, gradeCol, n int) {
	if len(l) >= 64 {
		fs, n := splitFieldsWords(l, scratch)
		if n != 4 {
			return nil, nil, nil, 0, n
		}
		return fs[0].b, fs[2].b, fs[3].b, fs[3].col, n
	}
	data := ^sepBits(l) & (1<<uint(len(l)) - 1)
	starts := data &^ (data << 1)
	if n := bits.OnesCount64(starts); n != 4 {
		return nil, nil, nil, 0, n
	}
	ends := ^data & (data << 1) // bit i: a field ends before byte i
	var s, e [4]int
	for i := range s {
		s[i], e[i] = bits.TrailingZeros64(starts), bits.TrailingZeros64(ends)
		starts &= starts - 1
		ends &= ends - 1
	}
	return l[s[0]:e[0]], l[s[2]:e[2]], l[s[3]:e[3]], s[3] + 1, 4
}

// splitFieldsWords is splitFields with a word-at-a-time search for the end
// of each field.
func splitFieldsWords(l []byte, out []field) ([]field, int) {
	out = out[:0]
	n := 0
	i := 0
	for i < len(l) {
		for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
			i++
		}
		if i == len(l) {
			break
		}
		end := nextSep(l, i)
		if len(out) < cap(out) {
			out = append(out, field{b: l[i:end], col: i + 1})
		}
		n++
		i = end
	}
	return out, n
}

// pow10 holds the powers of ten that are exact in float64.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseScoreFast parses plain decimals ("-12.3456", "7", "+0.5") of at most
// 15 significant digits exactly: the digits form an integer m < 2^53 and
// the value is m / 10^d with both operands exact, so the one rounding of
// the division gives the correctly rounded result, the same bits as
// strconv.ParseFloat (Clinger's fast path). Anything else goes to
// parseScore.
func parseScoreFast(b []byte) (float64, error) {
	i := 0
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i = 1
	}
	var m uint64
	digits, frac := 0, -1
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return parseScore(b)
		}
	}
	if digits == 0 || digits > 15 || frac > 22 {
		return parseScore(b)
	}
	v := float64(m)
	if frac > 0 {
		v /= pow10[frac]
	}
	if neg {
		v = -v
	}
	return v, nil
}

// parseInt32Fast parses a decimal int32 without allocating; it falls back to
// strconv for anything unusual.
func parseInt32Fast(b []byte) (int32, error) {
	if len(b) == 0 || len(b) > 9 {
		return parseInt32(b)
	}
	i := 0
	neg := false
	if b[0] == '-' || b[0] == '+' {
		if len(b) == 1 {
			return parseInt32(b)
		}
		neg = b[0] == '-'
		i = 1
	}
	var v int32
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
		v = v*10 + int32(c-'0')
	}
	if neg {
		v = -v
	}
	return v, nil
}
