package metric

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow/go/v16/arrow"

	"github.com/evalgate/evalgate/internal/exact"

	"github.com/evalgate/evalgate/schema"
)

// PerQueryRows holds per-query values: row i has position Seq[i] in the
// job's input order, id QueryID[i] and values Values[i*m:(i+1)*m] for m
// measures.
type PerQueryRows struct {
	Seq     []int64
	QueryID []string
	Values  []float64
}

// ShardResult is what scoring one task yields: the exact partial sums and,
// when asked for, every query's values.
type ShardResult struct {
	Partial  *Partial
	PerQuery *PerQueryRows
}

// ScoreRecords scores shard-batch records (already validated, as
// shard.Decode returns them) with a fresh kernel.
func ScoreRecords(cfg Config, recs []arrow.Record, perQuery bool) (*ShardResult, error) {
	s, err := NewScorer(cfg)
	if err != nil {
		return nil, err
	}
	return s.Score(recs, perQuery)
}

// Scorer scores tasks one after another, reusing its kernel and partial
// (a partial of many groups and measures is large; allocating one per task
// costs more than scoring a small task). Not safe for concurrent use.
type Scorer struct {
	k *Kernel
	p *Partial
}

// NewScorer returns a Scorer for cfg.
func NewScorer(cfg Config) (*Scorer, error) {
	k, err := NewKernel(cfg)
	if err != nil {
		return nil, err
	}
	return &Scorer{k: k, p: NewPartialFor(cfg)}, nil
}

// Score scores the records. The result's Partial is the scorer's own: it
// is valid until the next Score.
func (s *Scorer) Score(recs []arrow.Record, perQuery bool) (*ShardResult, error) {
	s.p.Reset()
	k := s.k
	res := &ShardResult{Partial: s.p}
	var pq *PerQueryRows
	if perQuery {
		pq = &PerQueryRows{}
		res.PerQuery = pq
	}
	for _, rec := range recs {
		v, err := schema.ViewShardBatch(rec)
		if err != nil {
			return nil, err
		}
		var collect func(int, []float64)
		if pq != nil {
			collect = func(row int, vals []float64) {
				pq.Seq = append(pq.Seq, v.Seq[row])
				pq.QueryID = append(pq.QueryID, strings.Clone(v.QueryID.Value(row)))
				pq.Values = append(pq.Values, vals...)
			}
		}
		if err := k.Score(v, res.Partial, collect); err != nil {
			return nil, err
		}
	}
	return res, nil
}

const resultMagic = "EGR1"

// MergeShardResult adds the partial of an encoded ShardResult into total
// without allocating one, and returns its per-query rows (nil when absent).
func MergeShardResult(total *Partial, b []byte, scratch *exact.Sum) (*PerQueryRows, error) {
	if !strings.HasPrefix(string(b), resultMagic) {
		return nil, errors.New("decode shard result: bad magic")
	}
	rd := reader{b: b[len(resultMagic):]}
	n, err := rd.uvarint()
	if err != nil || n > uint64(len(rd.b)) {
		return nil, errors.New("decode shard result: truncated partial")
	}
	if err := total.MergeBinary(rd.b[:n], scratch); err != nil {
		return nil, err
	}
	rest := rd.b[n:]
	if len(rest) == 1 && rest[0] == 0 {
		return nil, nil
	}
	// Per-query rows: decode the whole result the slow way (rare path).
	var full ShardResult
	if err := full.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return full.PerQuery, nil
}

// MarshalBinary encodes the result canonically (the partial's canonical
// bytes, then the per-query rows in order), so equal results give equal
// bytes: the determinism check of redelivered tasks compares them.
func (r *ShardResult) MarshalBinary() ([]byte, error) {
	p, err := r.Partial.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b := append([]byte(resultMagic), binary.AppendUvarint(nil, uint64(len(p)))...)
	b = append(b, p...)
	if r.PerQuery == nil {
		return append(b, 0), nil
	}
	b = append(b, 1)
	pq := r.PerQuery
	b = binary.AppendUvarint(b, uint64(len(pq.Seq)))
	for i, s := range pq.Seq {
		b = binary.AppendVarint(b, s)
		b = appendString(b, pq.QueryID[i])
	}
	for _, v := range pq.Values {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b, nil
}

// UnmarshalBinary decodes MarshalBinary's output.
func (r *ShardResult) UnmarshalBinary(b []byte) error {
	if !strings.HasPrefix(string(b), resultMagic) {
		return errors.New("decode shard result: bad magic")
	}
	rd := reader{b: b[len(resultMagic):]}
	n, err := rd.uvarint()
	if err != nil || n > uint64(len(rd.b)) {
		return errors.New("decode shard result: truncated partial")
	}
	var p Partial
	if err := p.UnmarshalBinary(rd.b[:n]); err != nil {
		return err
	}
	rd.b = rd.b[n:]
	out := ShardResult{Partial: &p}
	if len(rd.b) == 0 {
		return errors.New("decode shard result: truncated")
	}
	flag := rd.b[0]
	rd.b = rd.b[1:]
	if flag == 1 {
		rows, err := rd.uvarint()
		if err != nil || rows > uint64(len(rd.b)) {
			return errors.New("decode shard result: bad row count")
		}
		pq := &PerQueryRows{Seq: make([]int64, rows), QueryID: make([]string, rows)}
		for i := range pq.Seq {
			s, k := binary.Varint(rd.b)
			if k <= 0 {
				return errShortPartial
			}
			rd.b = rd.b[k:]
			pq.Seq[i] = s
			if pq.QueryID[i], err = rd.string(); err != nil {
				return err
			}
		}
		nv := int(rows) * len(p.measures)
		if len(rd.b) != 8*nv {
			return fmt.Errorf("decode shard result: %d bytes of values, want %d", len(rd.b), 8*nv)
		}
		pq.Values = make([]float64, nv)
		for i := range pq.Values {
			pq.Values[i] = math.Float64frombits(binary.LittleEndian.Uint64(rd.b[8*i:]))
		}
		rd.b = nil
		out.PerQuery = pq
	} else if flag != 0 {
		return fmt.Errorf("decode shard result: bad flag %d", flag)
	}
	if len(rd.b) != 0 {
		return fmt.Errorf("decode shard result: %d trailing bytes", len(rd.b))
	}
	*r = out
	return nil
}
