package metric

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/evalgate/evalgate/internal/exact"
	"github.com/evalgate/evalgate/schema"
)

// Config is what a kernel needs to score: the measures and the relevance
// level. It is part of a job's identity: two evaluations agree only if their
// Configs do.
type Config struct {
	Measures []Measure
	// RelLevel is the smallest grade that counts as relevant (trec_eval -l).
	// nDCG ignores it, as trec_eval does: every grade > 0 is a gain.
	RelLevel int32
	// Paired scores a baseline ranking of each query too (batches in the
	// schema.PairedShardBatch layout): every measure, overall and per tag.
	Paired bool
	// Pairing adds the paired statistics (bootstrap interval, p-value,
	// most regressed queries); it implies Paired.
	Pairing *Pairing
	// CurveDepth > 0 accumulates recall@k for k = 1..CurveDepth.
	CurveDepth int
	// JudgedOnly drops the unjudged documents (no grade, or a negative
	// one) from every ranking before scoring it, the ranks closing up:
	// trec_eval -J, Sakai's condensed lists. The depth cut (trec_eval -M)
	// is ingest's and comes first, as in trec_eval.
	JudgedOnly bool
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if len(c.Measures) == 0 {
		return errors.New("metric config: no measures")
	}
	for _, m := range c.Measures {
		if m.Kind == KindInvalid || m.Kind >= kindEnd {
			return fmt.Errorf("metric config: invalid measure %v", m)
		}
		if m.K < 0 || m.K > MaxCutoff {
			return fmt.Errorf("metric config: %v: cutoff %d out of range", m, m.K)
		}
	}
	if c.CurveDepth < 0 || c.CurveDepth > MaxCutoff {
		return fmt.Errorf("metric config: curve depth %d out of range", c.CurveDepth)
	}
	if c.Pairing != nil {
		if err := c.Pairing.Validate(c.Measures); err != nil {
			return fmt.Errorf("metric config: %w", err)
		}
	}
	return nil
}

// Kernel scores shard batches. It keeps scratch space between calls, so a
// Kernel is not safe for concurrent use: give each goroutine its own.
type Kernel struct {
	cfg      Config
	vals     []float64
	baseVals []float64
	weights  []uint8  // bootstrap weights of the current query
	signs    []uint64 // randomization signs of the current query
	diffs    []int64  // the current query's paired differences, fixed point
	// blocks[i] accumulates the replicate terms of the Partial's
	// stats[i] during a Score call (created when first needed).
	blocks []*replicateBlock

	// scratch bit masks over rank positions, grown as needed
	rel, judged, gain []uint64
	// condensed is the scratch ranking of JudgedOnly
	condensed []uint32

	// per-batch cache of tag groups
	groups []*GroupSums
	// pairedGroups maps the Pairing's tag groups to their index in it.
	pairedGroups map[string]int
}

// NewKernel returns a kernel for cfg.
func NewKernel(cfg Config) (*Kernel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := &Kernel{cfg: cfg, vals: make([]float64, len(cfg.Measures)), baseVals: make([]float64, len(cfg.Measures))}
	if p := cfg.Pairing; p != nil {
		k.weights = make([]uint8, p.Replicates)
		k.signs = make([]uint64, (p.Permutations+63)/64)
		k.diffs = make([]int64, len(p.Measures))
		k.pairedGroups = make(map[string]int, len(p.Groups))
		for i, g := range p.Groups {
			k.pairedGroups[g] = i
		}
	}
	return k, nil
}

// Config returns the kernel's configuration.
func (k *Kernel) Config() Config { return k.cfg }

// Score scores every row of the batch and adds the values to p (overall and
// each of the row's groups). p must be laid out for the kernel's Config
// (NewPartialFor). If perQuery is not nil it is called once per row, in row
// order, with the row's values in measure order; the slice is reused and
// valid only during the call. The view must satisfy
// schema.ShardView.Validate (batches built by package shard always do), and
// carry baseline rankings exactly when the Config is paired.
func (k *Kernel) Score(v *schema.ShardView, p *Partial, perQuery func(row int, vals []float64)) error {
	if (v.Base != nil) != p.paired || p.paired != (k.cfg.Paired || k.cfg.Pairing != nil) {
		return errors.New("score batch: baseline rankings and the paired configuration disagree")
	}
	overall := p.Group(Overall)
	for r := 0; r < v.Rows; r++ {
		grades := v.Grades[v.GradeOff[r]:v.GradeOff[r+1]]
		run := v.Run[v.RunOff[r]:v.RunOff[r+1]]
		first := k.scoreInto(grades, run, k.vals, p.curve)
		baseFirst := -1
		if p.paired {
			base := v.Base[v.BaseOff[r]:v.BaseOff[r+1]]
			baseFirst = k.scoreInto(grades, base, k.baseVals, p.baseCurve)
		}

		k.groups = append(k.groups[:0], overall)
		for i := v.GroupOff[r]; i < v.GroupOff[r+1]; i++ {
			k.groups = append(k.groups, p.Group(v.GroupVal.Value(int(i))))
		}
		for _, g := range k.groups {
			g.Queries++
			for m, x := range k.vals {
				if x != 0 {
					_ = g.Sums[m].Add(x) // values are finite by construction
				}
			}
			if g.Base != nil {
				for m, x := range k.baseVals {
					if x != 0 {
						_ = g.Base[m].Add(x)
					}
				}
			}
		}
		if p.stats != nil {
			k.addPaired(p, v, r, first, baseFirst)
		}
		if perQuery != nil {
			perQuery(r, k.vals)
		}
	}
	k.flushPaired(p)
	return nil
}

// addPaired adds row r's pair to the paired statistics: the overall
// group's and those of its tag groups in the Pairing.
func (k *Kernel) addPaired(p *Partial, v *schema.ShardView, r, first, baseFirst int) {
	pr := p.pairing
	if len(k.blocks) != len(p.stats) || len(k.diffs) != len(pr.Measures) || len(k.weights) != pr.Replicates ||
		len(k.signs) != (pr.Permutations+63)/64 {
		k.weights = make([]uint8, pr.Replicates)
		k.signs = make([]uint64, (pr.Permutations+63)/64)
		k.diffs = make([]int64, len(pr.Measures))
		k.blocks = make([]*replicateBlock, len(p.stats))
	}
	qid := v.QueryID.Value(r)
	pr.draws(qid, k.weights, k.signs)
	pr.diffs(k.diffs, k.vals, k.baseVals)
	k.addStats(p, 0)
	p.stats[0].addRegressed(pr, qid, v.Seq[r], k.vals, k.baseVals, int32(first+1), int32(baseFirst+1))
	for i := v.GroupOff[r]; i < v.GroupOff[r+1]; i++ {
		if gi, ok := k.pairedGroups[v.GroupVal.Value(int(i))]; ok {
			k.addStats(p, 1+gi)
		}
	}
}

// addStats adds the current query to p.stats[i].
func (k *Kernel) addStats(p *Partial, i int) {
	s := p.stats[i]
	s.addDiffs(k.diffs)
	if k.blocks[i] == nil {
		k.blocks[i] = newReplicateBlock(p.pairing)
	}
	k.blocks[i].add(s, k.diffs, k.weights, k.signs)
}

// flushPaired adds the pending replicate terms to p's statistics.
func (k *Kernel) flushPaired(p *Partial) {
	for i, b := range k.blocks {
		if b != nil && i < len(p.stats) {
			b.flush(p.stats[i])
		}
	}
}

// ScoreQuery computes the values of one query, for tests and tools; grades
// and run are as in a shard batch row. The returned slice is reused.
func (k *Kernel) ScoreQuery(grades []int32, run []uint32) []float64 {
	k.scoreInto(grades, run, k.vals, nil)
	return k.vals
}

// b2u converts a comparison to 0 or 1 without a branch (SETcc).
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// countBelow returns the number of set bits of mask at positions < k.
func countBelow(mask []uint64, k int) int {
	full := k >> 6
	if full >= len(mask) {
		full = len(mask)
		k = full << 6
	}
	c := 0
	for _, w := range mask[:full] {
		c += bits.OnesCount64(w)
	}
	if rem := k & 63; rem != 0 {
		c += bits.OnesCount64(mask[full] & (1<<uint(rem) - 1))
	}
	return c
}

// gainOf returns the nDCG gain of a grade > 0.
func gainOf(g int32, mode Gain) float64 {
	if mode == GainExp {
		if g < 63 {
			return float64(uint64(1)<<uint(g) - 1)
		}
		return math.Ldexp(1, int(g)) - 1
	}
	return float64(g)
}

// scoreInto computes one ranking's values into dst, adds its recall
// curve contributions to curve (when not empty) and returns the 0-based
// rank of the first relevant document, -1 if none.
func (k *Kernel) scoreInto(grades []int32, run []uint32, dst []float64, curve []exact.Sum) int {
	level := k.cfg.RelLevel
	nRel, nPos, nJudged := 0, 0, 0
	for _, g := range grades { // non-increasing: the counts are prefixes
		nRel += int(b2u(g >= level))
		nPos += int(b2u(g > 0))
		nJudged += int(b2u(g >= 0)) // a negative grade marks a document as unjudged, as in trec_eval
	}
	if k.cfg.JudgedOnly {
		run = k.condense(run, uint32(nJudged))
	}

	// One branch-free pass over the ranking builds the three masks.
	n := len(run)
	words := (n + 63) >> 6
	if cap(k.rel) < words {
		k.rel = make([]uint64, words)
		k.judged = make([]uint64, words)
		k.gain = make([]uint64, words)
	}
	rel, judged, gain := k.rel[:words], k.judged[:words], k.gain[:words]
	uRel, uJudged, uPos := uint32(nRel), uint32(nJudged), uint32(nPos)
	for w := 0; w < words; w++ {
		lo := w << 6
		chunk := run[lo:min(lo+64, n)]
		var mr, mj, mp uint64
		for i, id := range chunk {
			mr |= b2u(id < uRel) << uint(i)
			mj |= b2u(id < uJudged) << uint(i)
			mp |= b2u(id < uPos) << uint(i)
		}
		rel[w], judged[w], gain[w] = mr, mj, mp
	}

	first := -1 // rank position of the first relevant document
	for w, m := range rel {
		if m != 0 {
			first = w<<6 + bits.TrailingZeros64(m)
			break
		}
	}
	if len(curve) > 0 && nRel > 0 {
		share := 1 / float64(nRel)
	found:
		for w, m := range rel {
			for m != 0 {
				p := w<<6 + bits.TrailingZeros64(m)
				if p >= len(curve) {
					break found
				}
				_ = curve[p].Add(share)
				m &= m - 1
			}
		}
	}

	for i, m := range k.cfg.Measures {
		var x float64
		switch m.Kind {
		case KindRecall:
			if nRel > 0 {
				x = float64(countBelow(rel, m.K)) / float64(nRel)
			}
		case KindPrecision:
			x = float64(countBelow(rel, m.K)) / float64(m.K)
		case KindSuccess:
			x = float64(b2u(first >= 0 && first < m.K))
		case KindJudged:
			x = float64(countBelow(judged, m.K)) / float64(m.K)
		case KindRR:
			if first >= 0 && (m.K == 0 || first < m.K) {
				x = 1 / float64(first+1)
			}
		case KindAP:
			if nRel > 0 {
				x = averagePrecision(rel, m.K, n) / float64(nRel)
			}
		case KindRprec:
			if nRel > 0 {
				x = float64(countBelow(rel, nRel)) / float64(nRel)
			}
		case KindNDCG:
			x = ndcg(grades[:nPos], run, gain, m.K, m.Gain)
		case KindBpref:
			// The judged non-relevant documents are the judged ones below
			// the level: grades in [0, level).
			x = bpref(rel, judged, nRel, max(nJudged-nRel, 0))
		case KindNumQ:
			x = 1
		case KindNumRel:
			x = float64(nRel)
		case KindNumRet:
			x = float64(n)
		case KindNumRelRet:
			x = float64(countBelow(rel, n))
		}
		dst[i] = x
	}
	return first
}

// condense returns run without its unjudged documents (ids ≥ nJudged), in
// order, in the kernel's scratch space.
func (k *Kernel) condense(run []uint32, nJudged uint32) []uint32 {
	out := k.condensed[:0]
	for _, id := range run {
		if id < nJudged {
			out = append(out, id)
		}
	}
	k.condensed = out
	return out
}

// bpref returns trec_eval's bpref: over the nRel relevant documents, the
// mean of 1 - min(n, nRel) / min(nNonrel, nRel) for each one retrieved, n
// being the judged non-relevant documents ranked above it (1 when n is 0),
// nNonrel the query's judged non-relevant documents. Unjudged documents
// do not count; relevant ones not retrieved add 0. The terms are summed in
// rank order, as trec_eval sums them.
func bpref(rel, judged []uint64, nRel, nNonrel int) float64 {
	if nRel == 0 {
		return 0
	}
	denom := float64(min(nNonrel, nRel))
	sum := 0.0
	above := 0 // judged non-relevant documents in the words before w
	for w, r := range rel {
		nonrel := judged[w] &^ r
		for m := r; m != 0; m &= m - 1 {
			bit := uint(bits.TrailingZeros64(m))
			if n := above + bits.OnesCount64(nonrel&(1<<bit-1)); n > 0 {
				sum += 1 - float64(min(n, nRel))/denom
			} else {
				sum++
			}
		}
		above += bits.OnesCount64(nonrel)
	}
	return sum / float64(nRel)
}

// averagePrecision returns the sum, over relevant documents at positions
// p < cutoff (all when cutoff is 0), of precision at p+1, summed in rank order
// as trec_eval does.
func averagePrecision(rel []uint64, cutoff, n int) float64 {
	if cutoff == 0 || cutoff > n {
		cutoff = n
	}
	sum := 0.0
	found := 0
	for w, m := range rel {
		for m != 0 {
			p := w<<6 + bits.TrailingZeros64(m)
			if p >= cutoff {
				return sum
			}
			found++
			sum += float64(found) / float64(p+1)
			m &= m - 1
		}
	}
	return sum
}

// ndcg returns DCG@cutoff / ideal DCG@cutoff (cutoff 0: whole ranking), with
// the discount 1/log2(rank+1) and gains from grades > 0 only, as trec_eval's
// ndcg_cut. pos holds the grades > 0 of the judged documents (a prefix of
// the non-increasing grades), gain the mask of positions holding one.
func ndcg(pos []int32, run []uint32, gain []uint64, cutoff int, mode Gain) float64 {
	if len(pos) == 0 {
		return 0
	}
	n := len(run)
	dcgEnd := n
	if cutoff > 0 && cutoff < n {
		dcgEnd = cutoff
	}
	idealEnd := len(pos)
	if cutoff > 0 && cutoff < idealEnd {
		idealEnd = cutoff
	}
	lg := log2Of(max(dcgEnd, idealEnd))
	dcg := 0.0
scan:
	for w, m := range gain {
		for m != 0 {
			p := w<<6 + bits.TrailingZeros64(m)
			if p >= dcgEnd {
				break scan
			}
			dcg += gainOf(pos[run[p]], mode) / lg[p]
			m &= m - 1
		}
	}
	if dcg == 0 {
		return 0
	}
	ideal := 0.0
	for i, g := range pos[:idealEnd] {
		ideal += gainOf(g, mode) / lg[i]
	}
	return dcg / ideal
}
