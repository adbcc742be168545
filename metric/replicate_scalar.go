//go:build !goexperiment.simd || !amd64

package metric

// addReplicateRows is addReplicateRowsScalar (see replicate_simd.go for
// the GOEXPERIMENT=simd build).
func addReplicateRows(acc, sub []vec4, w []uint8, vecs int) {
	addReplicateRowsScalar(acc, sub, w, vecs)
}

// addPermutationRows is addPermutationRowsScalar.
func addPermutationRows(acc, sub []vec4, t []uint8, vecs int) {
	addPermutationRowsScalar(acc, sub, t, vecs)
}

// simdRows reports whether the row loops are vectorised.
const simdRows = false
