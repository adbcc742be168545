package ingest

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// Ranker interns one query's ranking at a time against the query's judged
// documents, as Join does for every query of a run: the judged documents
// get ids 0..G-1 in the gold set's order (grade descending, then doc id)
// and every other document an id ≥ G, comparing doc-id strings exactly; a
// repeated doc id is dropped (its best-ranked occurrence is kept); with a
// depth, the ranking is cut after that many distinct documents. A live
// retrieval builds its queries' rows with it, so they carry the ids a file
// of the same rankings would give. A Ranker is not safe for concurrent use;
// its zero value is ready.
type Ranker struct {
	table  internTable
	ranked []uint64 // judged ids already placed in the ranking
	ids    []uint32
	hashes []byte
	dupes  []int32
	kept   []int32
}

// Ranking is one query's interned ranking. Its slices are the Ranker's:
// valid until the next Rank.
type Ranking struct {
	// IDs is the ranking as the kernel reads it.
	IDs []uint32
	// Duplicates are the indexes in docs of the repeated doc ids dropped.
	Duplicates []int32
	// Kept are the indexes in docs of the ranked documents, in ranking
	// order (IDs[i] is the id of docs[Kept[i]]).
	Kept []int32
	// Truncated counts the distinct documents cut by the depth.
	Truncated int64
	// Digest is the query's term of Result.RunDigest: the xxh3-128 hash of
	// its id and its ranked doc ids.
	Digest [2]uint64
}

// Rank interns docs, the query's ranked doc ids (best first), against
// judged, its judged doc ids in the gold set's order; depth 0 keeps every
// document.
func (r *Ranker) Rank(queryID string, judged, docs []string, depth int) Ranking {
	nJudged := len(judged)
	r.table.reset(judged, docs)
	for i, d := range judged {
		r.table.lookupOrInsert(int32(i), xxh3.HashString(d), uint32(i))
	}
	r.ids, r.dupes, r.kept = r.ids[:0], r.dupes[:0], r.kept[:0]
	r.hashes = binary.LittleEndian.AppendUint64(r.hashes[:0], xxh3.HashString(queryID))
	next := uint32(nJudged)
	truncated := int64(0)
	for i, d := range docs {
		// A repeat of a judged doc is one already placed; a repeat of
		// another doc is found with an id ≥ nJudged (ids are handed out in
		// ranking order).
		h := xxh3.HashString(d) // picks the slot and is the digest's term
		id, found := r.table.lookupOrInsert(int32(nJudged+i), h, next)
		if !found {
			next++
		} else if id >= uint32(nJudged) || r.isRanked(id) {
			r.dupes = append(r.dupes, int32(i))
			continue
		}
		r.markRanked(id, nJudged)
		if depth > 0 && len(r.ids) >= depth {
			truncated++
			continue
		}
		r.ids = append(r.ids, id)
		r.kept = append(r.kept, int32(i))
		r.hashes = binary.LittleEndian.AppendUint64(r.hashes, h)
	}
	clear(r.ranked)
	h := xxh3.Hash128(r.hashes)
	return Ranking{IDs: r.ids, Duplicates: r.dupes, Kept: r.kept, Truncated: truncated, Digest: [2]uint64{h.Lo, h.Hi}}
}

func (r *Ranker) isRanked(id uint32) bool {
	w := int(id / 64)
	return w < len(r.ranked) && r.ranked[w]&(1<<(id%64)) != 0
}

func (r *Ranker) markRanked(id uint32, nJudged int) {
	if int(id) >= nJudged {
		return
	}
	w := int(id / 64)
	for len(r.ranked) <= w {
		r.ranked = append(r.ranked, 0)
	}
	r.ranked[w] |= 1 << (id % 64)
}

// AddDigest adds one query's Ranking.Digest to a run digest (as
// Result.RunDigest sums them).
func AddDigest(sum, d [2]uint64) [2]uint64 { return add128(sum, d) }

// Unjudged counts the documents of a query's interned ranking that have no
// judgment: not in the gold set, or there with a negative grade (grades
// are the query's, in the gold set's order: non-increasing). They are the
// documents scoring with judged documents only (trec_eval -J) drops.
func Unjudged(grades []int32, ids []uint32) int64 {
	nJudged := uint32(0)
	for _, g := range grades {
		if g < 0 {
			break
		}
		nJudged++
	}
	n := int64(0)
	for _, id := range ids {
		if id >= nJudged {
			n++
		}
	}
	return n
}
