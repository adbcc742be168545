package ingest

import (
	"context"
	"runtime"

	"github.com/zeebo/xxh3"

	"github.com/evalgate/evalgate/internal/arena"
)

// queryShards is the number of maps a queryIndex splits the query ids
// into, so that they can be filled on every core. It is fixed: query
// indexes never depend on the core count.
const queryShards = 64

// queryIndex maps query ids to their index in the gold set, in maps chosen
// by the ids' hash.
type queryIndex struct {
	shards  [queryShards]map[string]int32
	strs    arena.Bytes // the ids added one by one, as the maps' keys
	idBytes int         // bytes of ids stored
}

func newQueryIndex() *queryIndex {
	x := &queryIndex{}
	for i := range x.shards {
		x.shards[i] = map[string]int32{}
	}
	return x
}

func shardOf(h uint64) int { return int(h % queryShards) }

func (x *queryIndex) lookup(id string) (int32, bool) {
	i, ok := x.shards[shardOf(xxh3.HashString(id))][id]
	return i, ok
}

// query returns the index of id, adding the query if it is new.
func (l *goldLoader) query(id string) int32 {
	x := l.g.byID
	s := shardOf(xxh3.HashString(id))
	if i, ok := x.shards[s][id]; ok {
		return i
	}
	i := int32(l.queries.Len())
	id = x.strs.String(id)
	x.idBytes += len(id)
	x.shards[s][id] = i
	l.queries.Append(goldQuery{id: id})
	return i
}

// intern gives the spans read since the last call (their id a view into
// a batch) their query index, on every core: new queries get indexes in
// order of first appearance, as query would give them one span after
// another. It drops the spans' ids.
func (l *goldLoader) intern(ctx context.Context) error {
	spans := l.spans[l.interned:]
	l.interned = len(l.spans)
	if len(spans) == 0 {
		return nil
	}
	start, order, err := spansByShard(ctx, spans)
	if err != nil {
		return err
	}
	// Each shard resolves its known ids and marks each new one with its
	// first span, -(span+1), in the map and in every span of it.
	x := l.g.byID
	strs := make([]arena.Bytes, runtime.GOMAXPROCS(0)) // one per goroutine
	err = parallelW(ctx, queryShards, len(strs), func(w, s int) {
		if len(x.shards[s]) == 0 {
			// Sized for the spans: most queries have one.
			x.shards[s] = make(map[string]int32, start[s+1]-start[s])
		}
		m := x.shards[s]
		for _, i := range order[start[s]:start[s+1]] {
			sp := &spans[i]
			q, ok := m[sp.id]
			if !ok {
				q = -(i + 1)
				sp.id = strs[w].String(sp.id)
				m[sp.id] = q
			} else {
				sp.id = ""
			}
			sp.query = q
		}
	})
	if err != nil {
		return err
	}
	for w := range strs {
		x.idBytes += strs[w].Size()
	}
	// New queries get their indexes in order of first appearance.
	for i := range spans {
		sp := &spans[i]
		switch q := sp.query; {
		case q == -int32(i+1):
			sp.query = int32(l.queries.Len())
			l.queries.Append(goldQuery{id: sp.id})
			sp.id = ""
		case q < 0:
			sp.query = spans[-q-1].query
		}
	}
	l.releaseIDs()
	return parallel(ctx, queryShards, func(s int) {
		m := x.shards[s]
		for id, q := range m {
			if q < 0 {
				m[id] = spans[-q-1].query
			}
		}
	})
}

// spansByShard returns the spans' indexes grouped by the shard of their
// id, in file order within a shard: shard s has order[start[s]:start[s+1]].
func spansByShard(ctx context.Context, spans []span) (start, order []int32, err error) {
	hashes := make([]uint64, len(spans))
	const chunk = 1 << 15
	err = parallel(ctx, (len(spans)+chunk-1)/chunk, func(c int) {
		for i := c * chunk; i < min((c+1)*chunk, len(spans)); i++ {
			hashes[i] = xxh3.HashString(spans[i].id)
		}
	})
	if err != nil {
		return nil, nil, err
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
	return start, order, nil
}
