package metric

import (
	"encoding/binary"
	"math/bits"
)

// The replicate loop. Each query adds w·d to every bootstrap replicate's
// sum (w its weight in the replicate, d its difference run − baseline in
// fixed point) and ±d to every permutation's: 2·(replicates +
// permutations) terms per paired measure and query, the bulk of a paired
// evaluation. A replicateBlock adds them 8 queries at a time and in int64,
// with the same integer results as adding them one by one in int128
// (PairedStats.addTerms, the reference):
//
//   - The 8 queries' differences give a table of their 256 subset sums,
//     sub[s] = Σ_{j in s} d_j. A replicate's weights, low two bits each
//     (the weights are 0..11, mostly 0..3), select two subsets: the sum
//     is sub[bit 0 set] + 2·sub[bit 1 set] — two table rows for 8
//     queries. Weights ≥ 4 (2% of them) add (w − w mod 4)·d one by one.
//   - A permutation's signs select the subset with sign +1: the sum is
//     2·sub[+1] − Σ d, and the Σ d is subtracted when the block is flushed.
//   - The table rows are vectors over the paired measures (vecs vectors of
//     4 int64s, padded with zeros): the row loops (addReplicateRows,
//     addPermutationRows) add rows without carries or branches — the
//     loops the SIMD build vectorises.
//   - The int64 sums are flushed into the int128 sums of PairedStats
//     before they can overflow: every query adds at most 11·max|d| to any
//     of them, and the block flushes when the bound reaches 2^59. Queries
//     whose differences are all zero add nothing and skip the block; a
//     query with |d| ≥ 2^56 (values far outside [0,1], which no measure
//     produces) takes the reference path.
//
// Integer addition is associative, so the sums are the same bits as the
// reference's whatever the grouping.

// vec4 is a row's vector of 4 measures' sums.
type vec4 = [4]int64

// addVecs adds src to dst, element by element.
func addVecs(dst, src []vec4) {
	src = src[:len(dst)]
	for m := range dst {
		for l := range dst[m] {
			dst[m][l] += src[m][l]
		}
	}
}

// blockQueries is the number of queries summed through one subset table.
const blockQueries = 8

const (
	flushBound = 1 << 59 // 11·flushBound < 2^63
	maxBlockD  = 1 << 56
	lowBits    = 0x0101010101010101
	highBits   = 0xfcfcfcfcfcfcfcfc // a weight ≥ 4 in any of 8 bytes
)

type highWeight struct {
	r     int32
	j     uint8
	extra uint8 // w − w mod 4
}

// replicateBlock accumulates the queries of one PairedStats (one group of
// the Pairing) for one Kernel.
type replicateBlock struct {
	measures    int // paired measures
	vecs        int // vectors of 4 measures in a row
	reps, perms int
	n           int      // pending queries
	d           []vec4   // blockQueries × vecs: the pending queries' differences
	w           []uint8  // reps × blockQueries: w[r·8+j] is query j's weight in replicate r
	signs       []uint64 // blockQueries × words
	high        []highWeight
	t           []uint8 // per permutation: bit j set if query j's sign is +1
	sub         []vec4  // 256 × vecs: subset sums of the pending queries
	accS, accP  []vec4  // reps × vecs, perms × vecs
	dsum        []vec4  // vecs: Σ d over the queries in accP
	bound       uint64  // Σ max|d| over the queries in the int64 sums
	weights     weightSums
}

func newReplicateBlock(p *Pairing) *replicateBlock {
	words := (p.Permutations + 63) / 64
	vecs := (len(p.Measures) + 3) / 4
	return &replicateBlock{measures: len(p.Measures), vecs: vecs, reps: p.Replicates, perms: p.Permutations,
		d: make([]vec4, blockQueries*vecs), w: make([]uint8, p.Replicates*blockQueries),
		signs: make([]uint64, blockQueries*words), t: make([]uint8, words*64), sub: make([]vec4, 256*vecs),
		accS: make([]vec4, p.Replicates*vecs), accP: make([]vec4, p.Permutations*vecs), dsum: make([]vec4, vecs),
		weights: weightSums{packed: make([]uint64, p.Replicates/8)}}
}

// add adds one query's differences d (one per paired measure), drawn
// weights and signs to the block, flushing into s when the int64 sums
// could overflow. Its weights go to s's sums of weights (PairedStats.W)
// whatever its differences; the differences themselves are s.addDiffs'.
func (b *replicateBlock) add(s *PairedStats, d []int64, weights []uint8, signs []uint64) {
	b.weights.add(s.W, weights)
	var maxAbs uint64
	for _, x := range d {
		a := uint64(x)
		if x < 0 {
			a = -a
		}
		maxAbs = max(maxAbs, a)
	}
	if maxAbs == 0 {
		return
	}
	if maxAbs >= maxBlockD {
		s.addTerms(d, weights, signs)
		return
	}
	if b.bound+maxAbs > flushBound {
		b.flush(s)
	}
	b.bound += maxAbs
	j := b.n
	row := b.d[j*b.vecs:][:b.vecs]
	for i, x := range d {
		row[i/4][i%4] = x
	}
	w := b.w
	for r, x := range weights {
		w[r*blockQueries+j] = x
	}
	b.addHigh(weights, j)
	words := len(b.signs) / blockQueries
	copy(b.signs[j*words:(j+1)*words], signs)
	b.n++
	if b.n == blockQueries {
		b.sumBlock()
	}
}

// addHigh lists query j's weights ≥ 4, looking at 8 weights at a time.
func (b *replicateBlock) addHigh(weights []uint8, j int) {
	for r0 := 0; r0 < len(weights); r0 += 8 {
		chunk := weights[r0:min(r0+8, len(weights))]
		if len(chunk) == 8 && binary.LittleEndian.Uint64(chunk)&highBits == 0 {
			continue
		}
		for i, x := range chunk {
			if x >= 4 {
				b.high = append(b.high, highWeight{r: int32(r0 + i), j: uint8(j), extra: x &^ 3})
			}
		}
	}
}

// sumBlock adds the pending queries to the int64 sums.
func (b *replicateBlock) sumBlock() {
	if b.n == 0 {
		return
	}
	vs := b.vecs
	clear(b.d[b.n*vs:]) // absent queries: d = 0, whatever their weights
	b.subsetSums()
	addReplicateRows(b.accS, b.sub, b.w, vs)
	b.transposeSigns()
	addPermutationRows(b.accP, b.sub, b.t[:b.perms], vs)
	for _, h := range b.high {
		acc := b.accS[int(h.r)*vs:][:vs]
		d := b.d[int(h.j)*vs:][:vs]
		x := int64(h.extra)
		for m := range acc {
			for l := range acc[m] {
				acc[m][l] += x * d[m][l]
			}
		}
	}
	addVecs(b.dsum, b.sub[255*vs:][:vs])
	b.high = b.high[:0]
	b.n = 0 // stale weights and signs stay: they meet d = 0 in a partial block
}

// subsetSums fills sub[s] = Σ_{j in s} d_j.
func (b *replicateBlock) subsetSums() {
	vs := b.vecs
	clear(b.sub[:vs])
	for s := 1; s < 256; s++ {
		j := bits.TrailingZeros8(uint8(s))
		dst := b.sub[s*vs:][:vs]
		copy(dst, b.sub[(s&(s-1))*vs:][:vs])
		addVecs(dst, b.d[j*vs:][:vs])
	}
}

// transposeSigns fills t: bit j of t[i] is bit i of query j's signs.
func (b *replicateBlock) transposeSigns() {
	words := len(b.signs) / blockQueries
	for i := range words {
		for c := range 8 {
			var y uint64
			for j := range blockQueries {
				y |= (b.signs[j*words+i] >> (8 * c) & 0xff) << (8 * j)
			}
			binary.LittleEndian.PutUint64(b.t[64*i+8*c:], transpose8(y))
		}
	}
}

// transpose8 transposes the 8×8 bit matrix whose row j is byte j.
func transpose8(x uint64) uint64 {
	t := (x ^ x>>7) & 0x00aa00aa00aa00aa
	x ^= t ^ t<<7
	t = (x ^ x>>14) & 0x0000cccc0000cccc
	x ^= t ^ t<<14
	t = (x ^ x>>28) & 0x00000000f0f0f0f0
	return x ^ t ^ t<<28
}

// gather8 packs bit 8j of x into bit j (x holds no other bits).
func gather8(x uint64) uint64 { return x * 0x0102040810204080 >> 56 }

// flush adds the int64 sums to s's int128 sums and clears them.
func (b *replicateBlock) flush(s *PairedStats) {
	b.weights.flush(s.W)
	b.sumBlock()
	if b.bound == 0 {
		return
	}
	vs := b.vecs
	for mi := 0; mi < b.measures; mi++ {
		v, l := mi/4, mi%4
		row := s.S[mi]
		for r := range row {
			row[r].add64(b.accS[r*vs+v][l])
		}
		trow := s.T[mi]
		neg := -b.dsum[v][l]
		for r := range trow {
			p := b.accP[r*vs+v][l] // |p|, |dsum| ≤ 2^59: 2p − dsum fits
			trow[r].add64(2*p + neg)
		}
	}
	clear(b.accS)
	clear(b.accP)
	clear(b.dsum)
	b.bound = 0
}

// maxPackedQueries is how many queries' weights (at most 11 each, see
// poissonCount) a byte of weightSums can add without overflowing:
// 23·11 = 253.
const maxPackedQueries = 255 / 11

// A weight is at most len(poissonCDF): a lane's sum must fit its byte
// (this does not compile otherwise).
const _ = uint8(maxPackedQueries * len(poissonCDF))

// weightSums adds queries' bootstrap weights eight replicates at a time,
// in the bytes of a uint64 (a replicate's weights in one byte lane), and
// spills the lanes into the int64 sums of weights every maxPackedQueries
// queries and when flushed: the same sums as adding the weights one by
// one (addCounts, in the tests), with an eighth of the additions.
type weightSums struct {
	packed []uint64 // lane i of packed[k]: replicate 8k+i
	n      int      // queries in packed
}

// add adds one query's weights, the replicates past the last full word
// straight into w.
func (ws *weightSums) add(w []int64, weights []uint8) {
	full := len(ws.packed) * 8
	for k := range ws.packed {
		ws.packed[k] += binary.LittleEndian.Uint64(weights[8*k:])
	}
	for i, x := range weights[full:] {
		w[full+i] += int64(x)
	}
	ws.n++
	if ws.n == maxPackedQueries {
		ws.flush(w)
	}
}

// flush adds the packed sums to w and clears them.
func (ws *weightSums) flush(w []int64) {
	if ws.n == 0 {
		return
	}
	for k, x := range ws.packed {
		lanes := w[8*k:][:8]
		for i := range lanes {
			lanes[i] += int64(x >> (8 * i) & 0xff)
		}
	}
	clear(ws.packed)
	ws.n = 0
}
