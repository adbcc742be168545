package pages

import "unsafe"

// size is the smallest page size of the platforms evalgate runs on; a
// larger page is touched more than once, which costs nothing.
const size = 4096

// Prefault writes the zero value to one element of every page s spans,
// so that each page's first access is a write. s must hold zero values
// only, as make returns it: Prefault does not change its contents.
func Prefault[T any](s []T) {
	var zero T
	width := int(unsafe.Sizeof(zero))
	if width == 0 || len(s) == 0 {
		return
	}
	step := max(size/width, 1)
	for i := 0; i < len(s); i += step {
		s[i] = zero
	}
	s[len(s)-1] = zero
}
