package ingest

import (
	"context"
	"errors"

	"github.com/evalgate/evalgate/internal/arena"
	"github.com/evalgate/evalgate/schema"
)

// Baseline holds a baseline run's ranking of every gold query, interned
// against the gold set like the run it is compared with (judged documents
// keep their ids, others get ids ≥ the number of judgments), so the kernel
// scores both rankings of a query side by side. Only the integer ids are
// kept — about 4 bytes per retrieved document.
type Baseline struct {
	rankings [][]uint32 // by gold query index
	ids      arena.Uint32s
	// Result holds the counts and digest of the baseline's join.
	Result *Result
}

// Ranking returns the baseline ranking of gold query i (empty if the
// baseline did not retrieve anything for it).
func (b *Baseline) Ranking(i int32) []uint32 { return b.rankings[i] }

// LoadBaseline joins a baseline run with the gold set and keeps its
// rankings. A run whose queries are interleaved is read again through spill
// files (Joiner.JoinSpilled).
func (j *Joiner) LoadBaseline(ctx context.Context, open func() (schema.Reader, error)) (*Baseline, error) {
	b := &Baseline{rankings: make([][]uint32, j.gold.NumQueries())}
	h := Handlers{Commit: func(u *Unit) error {
		rec := u.Rows.Record()
		defer rec.Release()
		v, err := schema.ViewShardBatch(rec)
		if err != nil {
			return err
		}
		for i, gi := range u.Gold {
			b.rankings[gi] = b.ids.Append(v.Run[v.RunOff[i]:v.RunOff[i+1]])
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
			clear(b.rankings)
			continue
		}
		if err != nil {
			return nil, err
		}
		b.Result = res
		return b, nil
	}
	return nil, errors.New("unreachable")
}
