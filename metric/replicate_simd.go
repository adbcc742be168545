//go:build goexperiment.simd && amd64

package metric

import (
	"encoding/binary"
	"simd/archsimd"
)

// The row loops in AVX2 (GOEXPERIMENT=simd): a vec4 is one Int64x4.
// Without AVX2 they fall back to the scalar loops.

var avx2 = archsimd.X86.AVX2()

// simdRows reports whether the row loops are vectorised.
var simdRows = avx2

// addReplicateRows is addReplicateRowsScalar in AVX2.
func addReplicateRows(acc, sub []vec4, w []uint8, vecs int) {
	if !avx2 {
		addReplicateRowsScalar(acc, sub, w, vecs)
		return
	}
	if vecs == 4 {
		addReplicateRows4SIMD(acc, sub, w)
		return
	}
	for r := 0; r*blockQueries < len(w); r++ {
		x := binary.LittleEndian.Uint64(w[r*blockQueries:])
		s0 := sub[int(gather8(x&lowBits))*vecs:][:vecs]
		s1 := sub[int(gather8(x>>1&lowBits))*vecs:][:vecs]
		a := acc[r*vecs:][:vecs]
		for m := range a {
			v := archsimd.LoadInt64x4(&a[m]).Add(archsimd.LoadInt64x4(&s0[m]))
			v.Add(archsimd.LoadInt64x4(&s1[m]).ShiftAllLeft(1)).Store(&a[m])
		}
	}
	archsimd.ClearAVXUpperBits()
}

// addPermutationRows is addPermutationRowsScalar in AVX2.
func addPermutationRows(acc, sub []vec4, t []uint8, vecs int) {
	if !avx2 {
		addPermutationRowsScalar(acc, sub, t, vecs)
		return
	}
	if vecs == 4 {
		addPermutationRows4SIMD(acc, sub, t)
		return
	}
	for r, s := range t {
		row := sub[int(s)*vecs:][:vecs]
		a := acc[r*vecs:][:vecs]
		for m := range a {
			archsimd.LoadInt64x4(&a[m]).Add(archsimd.LoadInt64x4(&row[m])).Store(&a[m])
		}
	}
	archsimd.ClearAVXUpperBits()
}

// addReplicateRows4SIMD is addReplicateRows4 in AVX2.
func addReplicateRows4SIMD(acc, sub []vec4, w []uint8) {
	for r := 0; r*blockQueries < len(w); r++ {
		x := binary.LittleEndian.Uint64(w[r*blockQueries:])
		s0 := (*[4]vec4)(sub[int(gather8(x&lowBits))*4:])
		s1 := (*[4]vec4)(sub[int(gather8(x>>1&lowBits))*4:])
		a := (*[4]vec4)(acc[r*4:])
		archsimd.LoadInt64x4(&a[0]).Add(archsimd.LoadInt64x4(&s0[0])).Add(archsimd.LoadInt64x4(&s1[0]).ShiftAllLeft(1)).Store(&a[0])
		archsimd.LoadInt64x4(&a[1]).Add(archsimd.LoadInt64x4(&s0[1])).Add(archsimd.LoadInt64x4(&s1[1]).ShiftAllLeft(1)).Store(&a[1])
		archsimd.LoadInt64x4(&a[2]).Add(archsimd.LoadInt64x4(&s0[2])).Add(archsimd.LoadInt64x4(&s1[2]).ShiftAllLeft(1)).Store(&a[2])
		archsimd.LoadInt64x4(&a[3]).Add(archsimd.LoadInt64x4(&s0[3])).Add(archsimd.LoadInt64x4(&s1[3]).ShiftAllLeft(1)).Store(&a[3])
	}
	archsimd.ClearAVXUpperBits()
}

// addPermutationRows4SIMD is addPermutationRows4 in AVX2.
func addPermutationRows4SIMD(acc, sub []vec4, t []uint8) {
	for r, s := range t {
		row := (*[4]vec4)(sub[int(s)*4:])
		a := (*[4]vec4)(acc[r*4:])
		archsimd.LoadInt64x4(&a[0]).Add(archsimd.LoadInt64x4(&row[0])).Store(&a[0])
		archsimd.LoadInt64x4(&a[1]).Add(archsimd.LoadInt64x4(&row[1])).Store(&a[1])
		archsimd.LoadInt64x4(&a[2]).Add(archsimd.LoadInt64x4(&row[2])).Store(&a[2])
		archsimd.LoadInt64x4(&a[3]).Add(archsimd.LoadInt64x4(&row[3])).Store(&a[3])
	}
	archsimd.ClearAVXUpperBits()
}
