package ingest

import "github.com/zeebo/xxh3"

// internTable maps the doc ids of one query to dense integer ids. It is an
// open-addressing table that stores the strings and compares them exactly:
// the 64-bit hash only picks the slot, it never decides identity. Slots of
// earlier queries are recognised by their generation, so reset is O(1).
type internTable struct {
	slots []slot
	mask  uint64
	gen   uint32
}

type slot struct {
	gen  uint32
	id   uint32
	hash uint64
	key  string
}

// reset prepares the table for a query with up to n distinct ids.
func (t *internTable) reset(n int) {
	size := 64
	for size < 2*n {
		size *= 2
	}
	if len(t.slots) < size {
		t.slots = make([]slot, size)
		t.gen = 0
	}
	t.mask = uint64(len(t.slots) - 1)
	t.gen++
	if t.gen == 0 { // wrapped: old generations could collide
		clear(t.slots)
		t.gen = 1
	}
}

// lookupOrInsert returns the id of key, inserting it with id next when it
// is new; found reports whether it was there.
func (t *internTable) lookupOrInsert(key string, next uint32) (id uint32, found bool) {
	return t.lookupOrInsertHash(key, xxh3.HashString(key), next)
}

// lookupOrInsertHash is lookupOrInsert for a key whose xxh3 hash h the
// caller has.
func (t *internTable) lookupOrInsertHash(key string, h uint64, next uint32) (id uint32, found bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = slot{gen: t.gen, id: next, hash: h, key: key}
			return next, false
		}
		if s.hash == h && s.key == key {
			return s.id, true
		}
	}
}
