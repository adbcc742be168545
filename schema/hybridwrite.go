package schema

import "encoding/binary"

// hybridOut appends values of bit width bw in Parquet's RLE / bit-packed
// hybrid encoding (definition levels, dictionary indices) to b. A run is
// a varint header, count<<1 for an RLE run followed by the value in
// (bw+7)/8 little-endian bytes, or groups<<1|1 for a bit-packed run
// followed by groups of 8 values packed LSB first in bw bytes each. Every
// bit-packed run but the last holds a multiple of 8 values; the last is
// padded with zeros (the page header says how many values there are).
//
// Values come in runs (put): a run long enough to be an RLE run once the
// bit-packed values before it are filled up to a multiple of 8 becomes
// one, shorter runs are bit-packed. Query id indices (one run a query)
// and levels without nulls (one run a page) cost a few bytes; rank
// indices (a new value every row) are bit-packed.
type hybridOut struct {
	b   []byte
	bw  uint
	lit []uint32 // values of the bit-packed run being collected
	v   uint32   // the value of the pending run
	n   int      // its length, 0 when there is none
}

// maxLiteral is the most values collected for one bit-packed run before
// its whole groups are written.
const maxLiteral = 63 * 8

func (h *hybridOut) reset(b []byte, bw uint) {
	h.b, h.bw, h.lit, h.n = b, bw, h.lit[:0], 0
}

// put appends k copies of v.
func (h *hybridOut) put(v uint32, k int) {
	if h.n > 0 && v == h.v {
		h.n += k
		return
	}
	h.settle()
	h.v, h.n = v, k
}

// putEach appends vs one after the other (the dictionary indices of
// rows): the values before the first run of 8 equal ones are collected
// for bit-packing at once, the run goes through put.
func (h *hybridOut) putEach(vs []uint32) {
	for len(vs) > 0 {
		if h.n > 0 { // extend the pending run
			k := 0
			for k < len(vs) && vs[k] == h.v {
				k++
			}
			h.n += k
			if vs = vs[k:]; len(vs) == 0 {
				return
			}
			h.settle()
		}
		r := firstRun8(vs)
		h.lit = append(h.lit, vs[:r]...)
		if len(h.lit) >= maxLiteral {
			h.packWhole()
		}
		if vs = vs[r:]; len(vs) > 0 {
			k := 1
			for k < len(vs) && vs[k] == vs[0] {
				k++
			}
			h.put(vs[0], k)
			vs = vs[k:]
		}
	}
}

// firstRun8 returns the index of the first run of 8 equal values of vs,
// or len(vs).
func firstRun8(vs []uint32) int {
	run := 1
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1] {
			run = 1
		} else if run++; run == 8 {
			return i - 7
		}
	}
	return len(vs)
}

// settle writes out or collects the pending run.
func (h *hybridOut) settle() {
	if h.n == 0 {
		return
	}
	fill := (8 - len(h.lit)%8) % 8
	if h.n-fill >= 8 {
		for range fill {
			h.lit = append(h.lit, h.v)
		}
		h.bitPack(h.lit)
		h.lit = h.lit[:0]
		h.rle(h.v, h.n-fill)
	} else {
		for range h.n {
			h.lit = append(h.lit, h.v)
		}
		if len(h.lit) >= maxLiteral {
			h.packWhole()
		}
	}
	h.n = 0
}

// packWhole writes the whole groups of 8 of the collected values as
// bit-packed runs of up to maxLiteral values (a run header of one byte).
func (h *hybridOut) packWhole() {
	whole := len(h.lit) &^ 7
	for i := 0; i < whole; i += maxLiteral {
		h.bitPack(h.lit[i:min(i+maxLiteral, whole)])
	}
	h.lit = h.lit[:copy(h.lit, h.lit[whole:])]
}

// finish writes what is pending and returns the encoded bytes.
func (h *hybridOut) finish() []byte {
	if len(h.lit) == 0 && h.n > 0 {
		h.rle(h.v, h.n)
		h.n = 0
	}
	h.settle()
	if len(h.lit) > 0 {
		for len(h.lit)%8 != 0 {
			h.lit = append(h.lit, 0)
		}
		h.bitPack(h.lit)
		h.lit = h.lit[:0]
	}
	return h.b
}

func (h *hybridOut) rle(v uint32, k int) {
	h.b = binary.AppendUvarint(h.b, uint64(k)<<1)
	for i := uint(0); i < h.bw; i += 8 {
		h.b = append(h.b, byte(v>>i))
	}
}

// bitPack writes vs, a multiple of 8 values, as one bit-packed run.
func (h *hybridOut) bitPack(vs []uint32) {
	if len(vs) == 0 {
		return
	}
	h.b = binary.AppendUvarint(h.b, uint64(len(vs)/8)<<1|1)
	if h.bw <= 8 { // a group in a word
		for g := 0; g < len(vs); g += 8 {
			var acc uint64
			for k, v := range vs[g : g+8] {
				acc |= uint64(v) << (uint(k) * h.bw)
			}
			h.b = binary.LittleEndian.AppendUint64(h.b, acc)
			h.b = h.b[:len(h.b)-8+int(h.bw)]
		}
		return
	}
	var acc uint64
	var bits uint
	for _, v := range vs {
		acc |= uint64(v) << bits
		bits += h.bw
		for bits >= 8 {
			h.b = append(h.b, byte(acc))
			acc >>= 8
			bits -= 8
		}
	}
}
