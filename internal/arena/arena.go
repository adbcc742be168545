package arena

import "unsafe"

// Slice is an append-only sequence of T in chunks of 1<<shift values.
// The zero value is ready to use.
type Slice[T any] struct {
	chunks [][]T
	n      int
}

const shift = 16

// Append adds v.
func (s *Slice[T]) Append(v T) {
	if s.n>>shift == len(s.chunks) {
		s.chunks = append(s.chunks, make([]T, 0, 1<<shift))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, v)
	s.n++
}

// At returns element i.
func (s *Slice[T]) At(i int) T { return s.chunks[i>>shift][i&(1<<shift-1)] }

// Len returns the number of elements.
func (s *Slice[T]) Len() int { return s.n }

// Bytes stores byte strings in chunks and returns views of them.
// The zero value is ready to use.
type Bytes struct {
	cur  []byte
	size int
}

const chunkBytes = 4 << 20

// String copies b into the arena and returns a string that shares the
// arena's memory; it stays valid as long as the Bytes is reachable.
func (a *Bytes) String(b string) string {
	if len(b) == 0 {
		return ""
	}
	if cap(a.cur)-len(a.cur) < len(b) {
		a.cur = make([]byte, 0, max(chunkBytes, len(b)))
	}
	start := len(a.cur)
	a.cur = append(a.cur, b...)
	a.size += len(b)
	s := a.cur[start:len(a.cur):len(a.cur)]
	return unsafe.String(unsafe.SliceData(s), len(s))
}

// Size returns the number of bytes stored.
func (a *Bytes) Size() int { return a.size }

// Set replaces element i.
func (s *Slice[T]) Set(i int, v T) { s.chunks[i>>shift][i&(1<<shift-1)] = v }
