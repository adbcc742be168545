package ingest

import (
	"context"

	"github.com/evalgate/evalgate/internal/pages"

	"github.com/zeebo/xxh3"
)

// queryShards is the number of maps a queryIndex splits the query ids
// into, so that they can be filled on every core. It is fixed: query
// indexes never depend on the core count.
const queryShards = 64

// queryIndex maps query ids to their index in the gold set: an
// open-addressing table per shard (the shard chosen by the id's hash),
// whose slots hold part of the hash and a reference, never the id itself.
// The caller compares ids through the reference (a query's id), so the index
// holds no pointers: the garbage collector neither scans it nor tracks
// writes to it, and filling it touches one slot per id rather than a map's
// buckets and keys.
type queryIndex struct {
	shards [queryShards]idTable
}

// idTable is one shard of a queryIndex: linear probing over a power of
// two slots, at most half full.
type idTable struct {
	slots []idSlot
	n     int
}

// idSlot is a used slot or an empty one (the zero value). It keeps half
// the hash, so that a slot takes 8 bytes.
type idSlot struct {
	tag uint32 // tagOf the id's hash, never 0
	ref int32  // a query index; during intern, -(span+1) for a new query
}

// tagOf is the part of a hash a slot keeps: its high half (the shard used
// the low bits) with the top bit set, so that no tag is 0.
func tagOf(h uint64) uint32 { return uint32(h>>32) | 1<<31 }

func newQueryIndex() *queryIndex { return &queryIndex{} }

func shardOf(h uint64) int { return int(h % queryShards) }

// slotOf is the first slot to probe for a tag: the tag's low bits (the
// shard was chosen by the hash's).
func (t *idTable) slotOf(tag uint32) int { return int(tag) & (len(t.slots) - 1) }

// find returns the reference of the slot with h's tag whose reference
// match accepts.
func (t *idTable) find(h uint64, match func(ref int32) bool) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	tag := tagOf(h)
	for i := t.slotOf(tag); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.tag == 0 {
			return 0, false
		}
		if s.tag == tag && match(s.ref) {
			return s.ref, true
		}
	}
}

// reserve makes room for n more entries.
func (t *idTable) reserve(n int) {
	size := max(len(t.slots), 16)
	for size < 2*(t.n+n) {
		size *= 2
	}
	if size == len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]idSlot, size)
	// Probing reads a slot before writing it: write each page first.
	pages.Prefault(t.slots)
	for _, s := range old {
		if s.tag != 0 {
			t.place(s)
		}
	}
}

// insert adds a new entry (find did not find it) and returns its slot,
// where it stays until the table grows.
func (t *idTable) insert(h uint64, ref int32) int {
	t.reserve(1)
	t.n++
	return t.place(idSlot{tag: tagOf(h), ref: ref})
}

func (t *idTable) place(s idSlot) int {
	mask := len(t.slots) - 1
	i := t.slotOf(s.tag)
	for t.slots[i].tag != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	return i
}

// lookup returns the index of the query whose id is id, idOf giving each
// query's id.
func (x *queryIndex) lookup(id string, idOf func(q int32) string) (int32, bool) {
	h := xxh3.HashString(id)
	return x.shards[shardOf(h)].find(h, func(q int32) bool { return idOf(q) == id })
}

// query returns the index of id, adding the query if it is new.
func (l *goldLoader) query(id string) int32 {
	x := l.g.byID
	h := xxh3.HashString(id)
	t := &x.shards[shardOf(h)]
	if i, ok := t.find(h, func(q int32) bool { return l.g.QueryID(q) == id }); ok {
		return i
	}
	i := l.g.addQuery(id)
	t.insert(h, i)
	return i
}

// spanID returns the query id of a long-form span not yet interned.
func (l *goldLoader) spanID(s *span) string { return l.batches[s.batch].qids.Value(int(s.lo)) }

// intern gives the long-form spans read since the last call their query
// index, on every core: new queries get indexes in order of first
// appearance, as query would give them one span after another. It then
// drops the batches' query ids. LoadGold calls it after every long-form
// batch, so that the ids of a batch are not kept beyond it.
func (l *goldLoader) intern(ctx context.Context) error {
	spans := l.spans[l.interned:]
	l.interned = len(l.spans)
	if len(spans) == 0 {
		return nil
	}
	start, order, hashes, err := spansByShard(ctx, spans, l.spanID)
	if err != nil {
		return err
	}
	// Each shard resolves its known ids and marks each new one with its
	// first span, -(span+1), in its table (noting the slot) and in every
	// span of it. The table has room for all: no slot moves.
	x := l.g.byID
	slot := make([]int32, len(spans)) // a new query's slot + 1, by first span (0: not a new query's)
	err = parallel(ctx, queryShards, func(s int) {
		t := &x.shards[s]
		t.reserve(int(start[s+1] - start[s])) // most queries have one span
		for _, i := range order[start[s]:start[s+1]] {
			sp := &spans[i]
			// The ids are compared only when the tags are equal: a new
			// query is found new without reading its id.
			q, ok := t.find(hashes[i], func(ref int32) bool {
				id := l.spanID(sp)
				if ref < 0 {
					return l.spanID(&spans[-ref-1]) == id
				}
				return l.g.QueryID(ref) == id
			})
			if !ok {
				q = -(i + 1)
				slot[i] = int32(t.insert(hashes[i], q)) + 1
			}
			sp.query = q
		}
	})
	if err != nil {
		return err
	}
	// New queries get their indexes in order of first appearance; then
	// each shard, on every core, puts them in the slots it marked (a
	// write to a random slot a query, which one goroutine walking all the
	// shards would pay a cache miss for).
	l.reserveQueries(spans)
	g := l.g
	for i := range spans {
		sp := &spans[i]
		switch q := sp.query; {
		case q == -int32(i+1):
			sp.query = g.addQuery(l.spanID(sp))
		case q < 0:
			sp.query = spans[-q-1].query
		}
	}
	err = parallel(ctx, queryShards, func(s int) {
		t := &x.shards[s]
		for _, i := range order[start[s]:start[s+1]] {
			if k := slot[i]; k > 0 {
				t.slots[k-1].ref = spans[i].query
			}
		}
	})
	if err != nil {
		return err
	}
	l.releaseIDs()
	return nil
}

// reserveQueries makes room in the Gold for the new queries among spans
// (those that intern marked with their own span).
func (l *goldLoader) reserveQueries(spans []span) {
	nq, nb := 0, 0
	for i := range spans {
		if spans[i].query == -int32(i+1) {
			nq++
			nb += len(l.spanID(&spans[i]))
		}
	}
	g := l.g
	g.ids = grow(g.ids, nb)
	g.idOff = grow(g.idOff, nq)
	g.queries = grow(g.queries, nq)
}

// spansByShard returns the spans' indexes grouped by the shard of their
// id, in file order within a shard (shard s has order[start[s]:start[s+1]]),
// and the hashes of their ids.
func spansByShard(ctx context.Context, spans []span, idOf func(*span) string) (start, order []int32, hashes []uint64, err error) {
	hashes = make([]uint64, len(spans))
	const chunk = 1 << 15
	err = parallel(ctx, (len(spans)+chunk-1)/chunk, func(c int) {
		for i := c * chunk; i < min((c+1)*chunk, len(spans)); i++ {
			hashes[i] = xxh3.HashString(idOf(&spans[i]))
		}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	start = make([]int32, queryShards+1)
	for _, h := range hashes {
		start[shardOf(h)+1]++
	}
	for s := 1; s <= queryShards; s++ {
		start[s] += start[s-1]
	}
	next := make([]int32, queryShards)
	copy(next, start)
	order = make([]int32, len(spans))
	for i, h := range hashes {
		s := shardOf(h)
		order[next[s]] = int32(i)
		next[s]++
	}
	return start, order, hashes, nil
}
