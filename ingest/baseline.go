package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/evalgate/evalgate/schema"
)

// Baseline holds a baseline run's ranking of every gold query, interned
// against the gold set like the run it is compared with (judged documents
// keep their ids, others get ids ≥ the number of judgments), so the kernel
// scores both rankings of a query side by side.
//
// A ranking is kept in a compact form that gives back the same ids. The
// Ranker hands the unjudged documents of a ranking the ids G, G+1, G+2, …
// in ranking order (G the query's number of judgments), so such a ranking
// is its length and where its judged documents are: a few bytes per judged
// document retrieved rather than 4 per document. A ranking that does not
// have that shape is kept as all its ids.
type Baseline struct {
	gold *Gold
	at   []int64 // by gold query index: offset+1 of its ranking in data, 0 if none
	data []byte
	// Result holds the counts and digest of the baseline's join.
	Result *Result
}

// Ranking appends the baseline ranking of gold query i to dst (nothing if
// the baseline did not retrieve anything for it) and returns it.
func (b *Baseline) Ranking(dst []uint32, i int32) []uint32 {
	at := b.at[i]
	if at == 0 {
		return dst
	}
	return decodeRanking(dst, b.data[at-1:], uint32(len(b.gold.Grades(i))))
}

// set keeps ranking ids of gold query i.
func (b *Baseline) set(i int32, ids []uint32) {
	if len(ids) == 0 {
		return
	}
	b.at[i] = int64(len(b.data)) + 1
	b.data = encodeRanking(b.data, ids, uint32(len(b.gold.Grades(i))))
}

// encodeRanking appends the compact form of ids, a ranking of a query with
// nJudged judgments: uvarint(len·2), the number of judged documents, then
// for each the number of unjudged ones before it (since the last) and its
// id; or, when the unjudged ids are not nJudged, nJudged+1, … in order,
// uvarint(len·2+1) and every id.
func encodeRanking(b []byte, ids []uint32, nJudged uint32) []byte {
	judged, next := 0, nJudged
	for _, id := range ids {
		switch {
		case id < nJudged:
			judged++
		case id == next:
			next++
		default:
			b = binary.AppendUvarint(b, uint64(len(ids))<<1|1)
			for _, id := range ids {
				b = binary.AppendUvarint(b, uint64(id))
			}
			return b
		}
	}
	b = binary.AppendUvarint(b, uint64(len(ids))<<1)
	b = binary.AppendUvarint(b, uint64(judged))
	gap := uint64(0)
	for _, id := range ids {
		if id >= nJudged {
			gap++
			continue
		}
		b = binary.AppendUvarint(b, gap)
		b = binary.AppendUvarint(b, uint64(id))
		gap = 0
	}
	return b
}

// decodeRanking appends the ranking encodeRanking wrote at the start of b
// to dst. The encoding is the Baseline's own, so it is trusted.
func decodeRanking(dst []uint32, b []byte, nJudged uint32) []uint32 {
	h, k := binary.Uvarint(b)
	b = b[k:]
	n := int(h >> 1)
	if h&1 == 1 {
		for range n {
			id, k := binary.Uvarint(b)
			b = b[k:]
			dst = append(dst, uint32(id))
		}
		return dst
	}
	judged, k := binary.Uvarint(b)
	b = b[k:]
	start, next := len(dst), nJudged
	for range judged {
		gap, k := binary.Uvarint(b)
		b = b[k:]
		id, k2 := binary.Uvarint(b)
		b = b[k2:]
		for range gap {
			dst = append(dst, next)
			next++
		}
		dst = append(dst, uint32(id))
	}
	for len(dst)-start < n {
		dst = append(dst, next)
		next++
	}
	return dst
}

// LoadBaseline joins a baseline run with the gold set and keeps its
// rankings. A run whose queries are interleaved is read again through spill
// files (Joiner.JoinSpilled).
func (j *Joiner) LoadBaseline(ctx context.Context, open func() (schema.Reader, error)) (*Baseline, error) {
	b := &Baseline{gold: j.gold, at: make([]int64, j.gold.NumQueries())}
	h := Handlers{Commit: func(u *Unit) error {
		rec := u.Rows.Record()
		defer rec.Release()
		v, err := schema.ViewShardBatch(rec)
		if err != nil {
			return err
		}
		for i, gi := range u.Gold {
			b.set(gi, v.Run[v.RunOff[i]:v.RunOff[i+1]])
		}
		return nil
	}}
	// The baseline is scored over the same queries as the run; which of
	// them to score is the run's decision, so keep every gold query here.
	cfg := j.cfg
	cfg.Route, cfg.Baseline, cfg.OnlyRunQueries, cfg.SkipNoRelevant = nil, nil, false, false
	bj := NewJoiner(j.gold, cfg)
	for _, spilled := range []bool{false, true} {
		r, err := open()
		if err != nil {
			return nil, err
		}
		var res *Result
		if spilled {
			res, err = bj.JoinSpilled(ctx, r, h)
		} else {
			res, err = bj.Join(ctx, r, h)
		}
		r.Close()
		if errors.Is(err, ErrRunNotGrouped) {
			clear(b.at)
			b.data = b.data[:0]
			continue
		}
		if err != nil {
			return nil, err
		}
		b.Result = res
		return b, nil
	}
	return nil, fmt.Errorf("load baseline: %w on a second reading", ErrRunNotGrouped)
}
