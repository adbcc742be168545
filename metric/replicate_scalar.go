//go:build !goexperiment.simd

package metric

// addReplicateRows adds, for each replicate r, sub[bit 0 of the weights] +
// 2·sub[bit 1 of the weights] to acc[r] (rows of stride int64s).
func addReplicateRows(acc, sub []int64, w []uint8, stride int) {
	addReplicateRowsScalar(acc, sub, w, stride)
}

// addPermutationRows adds sub[t[r]] to acc[r] for each permutation r.
func addPermutationRows(acc, sub []int64, t []uint8, stride int) {
	addPermutationRowsScalar(acc, sub, t, stride)
}

// simdRows reports whether the row loops are vectorised.
const simdRows = false
