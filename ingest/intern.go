package ingest

// internTable maps the doc ids of one query to dense integer ids. It is an
// open-addressing table that compares the strings exactly: the 64-bit hash
// only picks the slot, it never decides identity. A slot refers to its key
// by index, into the query's judged doc ids then its ranked ones, so the
// table holds no pointers (the garbage collector neither scans it nor
// tracks writes to it). Slots of earlier queries are recognised by their
// generation, so reset is O(1).
type internTable struct {
	slots  []slot
	mask   uint64
	gen    uint32
	judged []string
	docs   []string
}

type slot struct {
	hash uint64
	gen  uint32
	id   uint32
	ref  int32 // the key: judged[ref], or docs[ref-len(judged)]
}

// reset prepares the table for a query's keys: its judged doc ids, then
// its ranked ones.
func (t *internTable) reset(judged, docs []string) {
	// A quarter full at most: a new doc id (most are) finds its slot
	// free at the first probe. Only the first size slots are used, so
	// one long ranking does not spread every later query over its
	// table.
	n := len(judged) + len(docs)
	size := 64
	for size < 4*n {
		size *= 2
	}
	if len(t.slots) < size {
		t.slots = make([]slot, size)
		t.gen = 0
	}
	t.mask = uint64(size - 1)
	t.judged, t.docs = judged, docs
	t.gen++
	if t.gen == 0 { // wrapped: old generations could collide
		clear(t.slots)
		t.gen = 1
	}
}

// key returns the key a slot refers to.
func (t *internTable) key(ref int32) string {
	if int(ref) < len(t.judged) {
		return t.judged[ref]
	}
	return t.docs[int(ref)-len(t.judged)]
}

// lookupOrInsert returns the id of key ref, whose xxh3 hash is h,
// inserting it with id next when it is new; found reports whether it was
// there.
func (t *internTable) lookupOrInsert(ref int32, h uint64, next uint32) (id uint32, found bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = slot{gen: t.gen, id: next, hash: h, ref: ref}
			return next, false
		}
		if s.hash == h && t.key(s.ref) == t.key(ref) {
			return s.id, true
		}
	}
}
