// Package exact sums float64 values without rounding error.
//
// A Sum is a fixed-point superaccumulator in the spirit of R. M. Neal,
// "Fast exact summation using small and large superaccumulators" (2015): the
// binary expansion of every finite float64 fits in 2098 bits, so the Sum keeps
// that whole range as 32-bit digits held in int64 words and adds a value by
// adding its 53-bit mantissa to two or three digits. Carries are propagated
// lazily, often enough that no word can overflow.
//
// # Contract
//
//   - Add, AddScaled and Merge are exact: the Sum always represents the true
//     mathematical sum of everything added, so the result does not depend on
//     the order of additions or on how the values were split into Sums that
//     were later merged. This is what makes a distributed evaluation give the
//     same bits as a single-process one.
//   - Float64 and Mean round once, to nearest-even, from the exact value.
//   - NaN and ±Inf are rejected by Add (they have no exact value); callers
//     never produce them.
//   - MarshalBinary produces a canonical encoding: two Sums with the same
//     value encode to the same bytes, whatever their history.
//
// A Sum is not safe for concurrent use; give each goroutine its own and Merge.
package exact
