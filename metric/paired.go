package metric

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/url"
	"slices"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/evalgate/evalgate/internal/exact"
)

// Pairing configures the paired comparison of a run with a baseline run
// over the same queries: a Poisson bootstrap of the mean difference (a
// confidence interval) and a paired sign-flip randomization test (a
// p-value), for the measures at the given indexes.
//
// Both are computed in one pass and merge across shards: every query
// draws its bootstrap weights and its signs from a generator seeded by a
// hash of its id (and Seed), so a query contributes the same terms
// wherever it is scored, and the per-replicate sums are integers (values
// in fixed point), whose addition is associative. The interval and the
// p-value are therefore the same bits for any number of workers or shards.
// (Poisson bootstrap: Hanley & MacGibbon 2006; Chamandy et al., "Estimating
// uncertainty for massive data streams", 2012.)
//
// The statistics cover every query (the overall group) and, for each tag
// group in Groups ("name=value", as gated on), the queries of that group:
// a query draws its weights and signs once and adds them to every group it
// belongs to, so each group's interval is the bootstrap of that group's
// mean difference.
type Pairing struct {
	Measures     []int // indexes into Config.Measures
	Replicates   int   // bootstrap replicates B
	Permutations int   // randomization test permutations R
	Seed         uint64
	TopK         int      // most regressed queries kept (on Measures[0], overall)
	Groups       []string // tag groups compared besides the overall one
}

// Limits of a Pairing.
const (
	MaxReplicates   = 100000
	MaxTopK         = 1000
	MaxPairedGroups = 256
)

func (p *Pairing) equal(o *Pairing) bool {
	return slices.Equal(p.Measures, o.Measures) && p.Replicates == o.Replicates &&
		p.Permutations == o.Permutations && p.Seed == o.Seed && p.TopK == o.TopK && slices.Equal(p.Groups, o.Groups)
}

// Validate checks the pairing against n measures.
func (p *Pairing) Validate(measures []Measure) error {
	if len(p.Measures) == 0 {
		return errors.New("pairing: no measures")
	}
	for _, i := range p.Measures {
		if i < 0 || i >= len(measures) {
			return fmt.Errorf("pairing: measure index %d out of range", i)
		}
		if measures[i].Summed() {
			return fmt.Errorf("pairing: %s is a count, not a mean", measures[i])
		}
	}
	if p.Replicates < 0 || p.Replicates > MaxReplicates || p.Permutations < 0 || p.Permutations > MaxReplicates {
		return fmt.Errorf("pairing: %d replicates, %d permutations: want 0..%d", p.Replicates, p.Permutations, MaxReplicates)
	}
	if p.TopK < 0 || p.TopK > MaxTopK {
		return fmt.Errorf("pairing: top-k %d: want 0..%d", p.TopK, MaxTopK)
	}
	if len(p.Groups) > MaxPairedGroups {
		return fmt.Errorf("pairing: %d groups: want at most %d", len(p.Groups), MaxPairedGroups)
	}
	for i, g := range p.Groups {
		if name, value, ok := strings.Cut(g, "="); !ok || name == "" || value == "" {
			return fmt.Errorf("pairing: group %q: want name=value", g)
		}
		if slices.Contains(p.Groups[:i], g) {
			return fmt.Errorf("pairing: group %q twice", g)
		}
	}
	return nil
}

func (p *Pairing) append(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p.Measures)))
	for _, m := range p.Measures {
		b = binary.AppendUvarint(b, uint64(m))
	}
	b = binary.AppendUvarint(b, uint64(p.Replicates))
	b = binary.AppendUvarint(b, uint64(p.Permutations))
	b = binary.AppendUvarint(b, p.Seed)
	b = binary.AppendUvarint(b, uint64(p.TopK))
	b = binary.AppendUvarint(b, uint64(len(p.Groups)))
	for _, g := range p.Groups {
		b = appendString(b, g)
	}
	return b
}

func readPairing(r *reader, nMeasures int) (*Pairing, error) {
	n, err := r.uvarint()
	if err != nil || n > uint64(nMeasures) {
		return nil, errors.New("decode partial: bad pairing")
	}
	p := &Pairing{Measures: make([]int, n)}
	for i := range p.Measures {
		v, err := r.uvarint()
		if err != nil || v >= uint64(nMeasures) {
			return nil, errors.New("decode partial: bad paired measure")
		}
		p.Measures[i] = int(v)
	}
	vals := make([]uint64, 4)
	for i := range vals {
		if vals[i], err = r.uvarint(); err != nil {
			return nil, err
		}
	}
	if vals[0] > MaxReplicates || vals[1] > MaxReplicates || vals[3] > MaxTopK {
		return nil, errors.New("decode partial: pairing out of range")
	}
	p.Replicates, p.Permutations, p.Seed, p.TopK = int(vals[0]), int(vals[1]), vals[2], int(vals[3])
	ng, err := r.uvarint()
	if err != nil || ng > MaxPairedGroups {
		return nil, errors.New("decode partial: bad paired group count")
	}
	for range ng {
		g, err := r.string()
		if err != nil {
			return nil, err
		}
		p.Groups = append(p.Groups, g)
	}
	if err := p.Validate(make([]Measure, nMeasures)); err != nil {
		return nil, fmt.Errorf("decode partial: %w", err)
	}
	return p, nil
}

// int128 is a signed 128-bit integer (two's complement in hi:lo).
type int128 struct {
	hi int64
	lo uint64
}

func (a *int128) add64(x int64) {
	lo, carry := bits.Add64(a.lo, uint64(x), 0)
	a.lo = lo
	a.hi += x>>63 + int64(carry)
}

func (a *int128) add(b int128) {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	a.lo = lo
	a.hi += b.hi + int64(carry)
}

func (a int128) neg() int128 {
	lo, borrow := bits.Sub64(0, a.lo, 0)
	return int128{hi: -a.hi - int64(borrow), lo: lo}
}

func (a int128) abs() int128 {
	if a.hi < 0 {
		return a.neg()
	}
	return a
}

// cmpU compares two non-negative values.
func (a int128) cmp(b int128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

// float returns the value rounded to a float64.
func (a int128) float() float64 {
	if a.hi < 0 {
		return -a.neg().float()
	}
	// hi·2^64 + lo, each part exact below 2^53 or rounded once; the sum
	// is rounded again, deterministically.
	return float64(uint64(a.hi))*0x1p64 + float64(a.lo)
}

// fixedScale is the fixed-point scale of per-query values in the paired
// sums: values in [0,1] become integers up to 2^52.
const fixedScale = 0x1p52

func fixed(v float64) int64 { return int64(math.Round(v * fixedScale)) }

// TopQuery is one of the most regressed queries of a paired evaluation.
type TopQuery struct {
	Seq           int64
	QueryID       string
	Value, Base   float64 // the first paired measure, run and baseline
	FirstRel      int32   // 1-based rank of the first relevant document, 0 if none
	BaseFirstRel  int32
	regressionKey int64 // fixed(Base) - fixed(Value)
}

// PairedStats are the mergeable sums behind the paired comparison.
type PairedStats struct {
	W   []int64    // Σ weights per bootstrap replicate
	D   []int128   // per paired measure: Σ (run − baseline), fixed point
	S   [][]int128 // per paired measure and replicate: Σ w·(run − baseline)
	T   [][]int128 // per paired measure and permutation: Σ sign·(run − baseline)
	Top []TopQuery // most regressed on the first paired measure, best first
}

// newStatsSet returns the statistics of the overall group and of each of
// p.Groups, in that order.
func newStatsSet(p *Pairing) []*PairedStats {
	out := make([]*PairedStats, 1+len(p.Groups))
	for i := range out {
		out[i] = newPairedStats(p)
	}
	return out
}

func newPairedStats(p *Pairing) *PairedStats {
	s := &PairedStats{W: make([]int64, p.Replicates), D: make([]int128, len(p.Measures))}
	s.S = make([][]int128, len(p.Measures))
	s.T = make([][]int128, len(p.Measures))
	for i := range p.Measures {
		s.S[i] = make([]int128, p.Replicates)
		s.T[i] = make([]int128, p.Permutations)
	}
	return s
}

func (s *PairedStats) reset() {
	clear(s.W)
	clear(s.D)
	for i := range s.S {
		clear(s.S[i])
		clear(s.T[i])
	}
	s.Top = s.Top[:0]
}

// lessTop orders the most regressed first, then by input position.
func lessTop(a, b TopQuery) int {
	if c := cmp.Compare(b.regressionKey, a.regressionKey); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

func (s *PairedStats) addTop(q TopQuery, k int) {
	if k == 0 || q.regressionKey <= 0 {
		return // only queries that got worse
	}
	if len(s.Top) == k && lessTop(q, s.Top[k-1]) >= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(s.Top, q, lessTop)
	s.Top = slices.Insert(s.Top, i, q)
	if len(s.Top) > k {
		s.Top = s.Top[:k]
	}
}

func (s *PairedStats) merge(o *PairedStats, k int) {
	for i, w := range o.W {
		s.W[i] += w
	}
	for m := range s.D {
		s.D[m].add(o.D[m])
		for i := range s.S[m] {
			s.S[m][i].add(o.S[m][i])
		}
		for i := range s.T[m] {
			s.T[m][i].add(o.T[m][i])
		}
	}
	for _, q := range o.Top {
		s.addTop(q, k)
	}
}

func appendInt128(b []byte, v int128) []byte {
	b = binary.AppendVarint(b, v.hi)
	return binary.AppendUvarint(b, v.lo)
}

func (r *reader) int128() (int128, error) {
	hi, err := r.varint()
	if err != nil {
		return int128{}, err
	}
	lo, err := r.uvarint()
	return int128{hi: hi, lo: lo}, err
}

func (s *PairedStats) append(b []byte) []byte {
	for _, w := range s.W {
		b = binary.AppendVarint(b, w)
	}
	for m := range s.D {
		b = appendInt128(b, s.D[m])
		for _, v := range s.S[m] {
			b = appendInt128(b, v)
		}
		for _, v := range s.T[m] {
			b = appendInt128(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.Top)))
	for _, q := range s.Top {
		b = binary.AppendVarint(b, q.Seq)
		b = appendString(b, q.QueryID)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(q.Value))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(q.Base))
		b = binary.AppendVarint(b, int64(q.FirstRel))
		b = binary.AppendVarint(b, int64(q.BaseFirstRel))
	}
	return b
}

// mergeEncoded adds statistics encoded by append; topK bounds the most
// regressed queries (0 for a tag group's statistics).
func (s *PairedStats) mergeEncoded(r *reader, topK int) error {
	for i := range s.W {
		w, err := r.varint()
		if err != nil {
			return err
		}
		s.W[i] += w
	}
	for m := range s.D {
		v, err := r.int128()
		if err != nil {
			return err
		}
		s.D[m].add(v)
		for _, row := range [][]int128{s.S[m], s.T[m]} {
			for i := range row {
				v, err := r.int128()
				if err != nil {
					return err
				}
				row[i].add(v)
			}
		}
	}
	n, err := r.uvarint()
	if err != nil || n > uint64(topK) {
		return errors.New("decode partial: bad top-query count")
	}
	for i := uint64(0); i < n; i++ {
		var q TopQuery
		if q.Seq, err = r.varint(); err != nil {
			return err
		}
		if q.QueryID, err = r.string(); err != nil {
			return err
		}
		if len(r.b) < 16 {
			return errShortPartial
		}
		q.Value = math.Float64frombits(binary.LittleEndian.Uint64(r.b))
		q.Base = math.Float64frombits(binary.LittleEndian.Uint64(r.b[8:]))
		r.b = r.b[16:]
		a, err := r.varint()
		if err != nil {
			return err
		}
		c, err := r.varint()
		if err != nil {
			return err
		}
		q.FirstRel, q.BaseFirstRel = int32(a), int32(c)
		q.regressionKey = fixed(q.Base) - fixed(q.Value)
		s.addTop(q, topK)
	}
	return nil
}

// poissonCDF[k] is P(X ≤ k) for X ~ Poisson(1), as a fraction of 2^32,
// rounded down: integers, so every machine draws the same weights. A test
// checks them against math/big.
var poissonCDF = [...]uint64{
	1580030168, 3160060337, 3950075421, 4213413783, 4279248373,
	4292415291, 4294609777, 4294923276, 4294962463, 4294966817, 4294967252,
}

// poissonCount maps 32 uniform bits to a Poisson(1) weight (capped at
// 11): the number of thresholds at or below them.
func poissonCount(u uint64) uint8 {
	w := uint8(0)
	for _, t := range poissonCDF {
		w += uint8(b2u(u >= t))
	}
	return w
}

// poissonBuckets[u>>20] is poissonCount(u) for every u in the bucket of
// 2^20 values, or poissonStraddles if a threshold falls inside it (7 of
// the 4096 buckets): poissonCount is non-decreasing, so it is constant
// on a bucket where its ends agree.
var poissonBuckets = func() (b [1 << 12]uint8) {
	for i := range b {
		lo := uint64(i) << 20
		if w := poissonCount(lo); w == poissonCount(lo+1<<20-1) {
			b[i] = w
		} else {
			b[i] = poissonStraddles
		}
	}
	return b
}()

const poissonStraddles = 0xff

// poisson is poissonCount, by table.
func poisson(u uint64) uint8 {
	if w := poissonBuckets[u>>20]; w != poissonStraddles {
		return w
	}
	return poissonCount(u)
}

// splitmix64 is the SplitMix64 generator (Steele, Lea, Flood 2014).
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// draws fills the query's bootstrap weights and permutation signs.
func (p *Pairing) draws(queryID string, weights []uint8, signs []uint64) {
	seed := splitmix64(xxh3.HashString(queryID) ^ p.Seed)
	for i := 0; i < len(weights); i += 2 {
		u := seed.next()
		weights[i] = poisson(u & 0xffffffff)
		if i+1 < len(weights) {
			weights[i+1] = poisson(u >> 32)
		}
	}
	for i := range signs {
		signs[i] = seed.next()
	}
}

// diffs sets d[i] to the fixed-point difference run − baseline of the
// i-th paired measure.
func (p *Pairing) diffs(d []int64, vals, base []float64) {
	for i, m := range p.Measures {
		d[i] = fixed(vals[m]) - fixed(base[m])
	}
}

// addDiffs adds a query's differences d (from p.diffs) to the sums of
// differences; its weights and its terms of the replicate and
// permutation sums go to a replicateBlock.
func (s *PairedStats) addDiffs(d []int64) {
	for mi, x := range d {
		s.D[mi].add64(x)
	}
}

// addTerms adds one query's terms to the replicate and permutation sums,
// one by one in int128: the reference of replicateBlock.
func (s *PairedStats) addTerms(d []int64, weights []uint8, signs []uint64) {
	for mi, d := range d {
		if d == 0 {
			continue
		}
		row := s.S[mi]
		for i, w := range weights {
			if w != 0 {
				row[i].add64(int64(w) * d)
			}
		}
		trow := s.T[mi]
		for i := range trow {
			sign := int64(signs[i>>6]>>(i&63)&1)*2 - 1
			trow[i].add64(sign * d)
		}
	}
}

// addRegressed keeps the query among the most regressed on p.Measures[0]
// if it is one of them.
func (s *PairedStats) addRegressed(p *Pairing, queryID string, seq int64, vals, base []float64, first, baseFirst int32) {
	if p.TopK > 0 {
		m := p.Measures[0]
		s.addTop(TopQuery{Seq: seq, QueryID: queryID, Value: vals[m], Base: base[m], FirstRel: first, BaseFirstRel: baseFirst,
			regressionKey: fixed(base[m]) - fixed(vals[m])}, p.TopK)
	}
}

// Comparison is the reduced paired statistics of one measure.
type Comparison struct {
	Measure Measure
	// CILow and CIHigh bound the 95% percentile bootstrap interval of the
	// mean difference (run − baseline); NaN without replicates.
	CILow, CIHigh float64
	// PValue is the two-sided p-value of the paired sign-flip
	// randomization test of "no difference"; NaN without permutations.
	PValue       float64
	Replicates   int
	Permutations int
}

// Comparisons reduces the paired statistics of the overall group; nil
// without a Pairing.
func (p *Partial) Comparisons() []Comparison {
	if p.stats == nil {
		return nil
	}
	return p.reduceStats(p.stats[0])
}

// GroupComparisons reduces the paired statistics of a tag group of the
// Pairing ("name=value"); nil if the group is not one of them.
func (p *Partial) GroupComparisons(group string) []Comparison {
	if p.stats == nil {
		return nil
	}
	i := slices.Index(p.pairing.Groups, group)
	if i < 0 {
		return nil
	}
	return p.reduceStats(p.stats[1+i])
}

func (p *Partial) reduceStats(s *PairedStats) []Comparison {
	pr := p.pairing
	out := make([]Comparison, len(pr.Measures))
	deltas := make([]float64, 0, pr.Replicates)
	for mi, m := range pr.Measures {
		c := Comparison{Measure: p.measures[m], CILow: math.NaN(), CIHigh: math.NaN(), PValue: math.NaN(),
			Replicates: pr.Replicates, Permutations: pr.Permutations}
		deltas = deltas[:0]
		for i, w := range s.W {
			if w > 0 {
				deltas = append(deltas, s.S[mi][i].float()/fixedScale/float64(w))
			}
		}
		if len(deltas) > 0 {
			slices.Sort(deltas)
			n := len(deltas)
			lo := int(math.Floor(0.025 * float64(n)))
			hi := int(math.Ceil(0.975*float64(n))) - 1
			c.CILow, c.CIHigh = deltas[min(lo, n-1)], deltas[max(hi, 0)]
		}
		if pr.Permutations > 0 {
			obs := s.D[mi].abs()
			extreme := 0
			for _, t := range s.T[mi] {
				if t.abs().cmp(obs) >= 0 {
					extreme++
				}
			}
			c.PValue = float64(1+extreme) / float64(1+pr.Permutations)
		}
		out[mi] = c
	}
	return out
}

// TopRegressed returns the most regressed queries on the first paired
// measure, worst first.
func (p *Partial) TopRegressed() []TopQuery {
	if p.stats == nil {
		return nil
	}
	return slices.Clone(p.stats[0].Top)
}

// Curve returns recall@k for k = 1..len(curve) over the overall group,
// for the run and (paired) the baseline. n is the number of queries.
func (p *Partial) Curve() (run, base []float64) {
	g := p.Lookup(Overall)
	if g == nil || len(p.curve) == 0 {
		return nil, nil
	}
	cum := func(sums []exact.Sum) []float64 {
		if len(sums) == 0 {
			return nil
		}
		out := make([]float64, len(sums))
		var acc exact.Sum
		for i := range sums {
			acc.Merge(&sums[i])
			out[i] = acc.Mean(g.Queries)
		}
		return out
	}
	return cum(p.curve), cum(p.baseCurve)
}

// PairingKey renders a pairing for task headers and logs.
func (p *Pairing) String() string {
	idx := make([]string, len(p.Measures))
	for i, m := range p.Measures {
		idx[i] = fmt.Sprint(m)
	}
	out := fmt.Sprintf("measures=%s;replicates=%d;permutations=%d;seed=%d;top=%d", strings.Join(idx, ","), p.Replicates, p.Permutations, p.Seed, p.TopK)
	if len(p.Groups) > 0 {
		gs := make([]string, len(p.Groups))
		for i, g := range p.Groups {
			gs[i] = url.QueryEscape(g) // tag values may hold ; , =
		}
		out += ";groups=" + strings.Join(gs, ",")
	}
	return out
}

// ParsePairing parses String's output.
func ParsePairing(s string, measures []Measure) (*Pairing, error) {
	p := &Pairing{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("parse pairing %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "measures":
			for _, f := range strings.Split(v, ",") {
				var i int
				if _, err = fmt.Sscan(f, &i); err != nil {
					break
				}
				p.Measures = append(p.Measures, i)
			}
		case "replicates":
			_, err = fmt.Sscan(v, &p.Replicates)
		case "permutations":
			_, err = fmt.Sscan(v, &p.Permutations)
		case "seed":
			_, err = fmt.Sscan(v, &p.Seed)
		case "top":
			_, err = fmt.Sscan(v, &p.TopK)
		case "groups":
			for _, f := range strings.Split(v, ",") {
				var g string
				if g, err = url.QueryUnescape(f); err != nil {
					break
				}
				p.Groups = append(p.Groups, g)
			}
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("parse pairing %q: %w", s, err)
		}
	}
	if err := p.Validate(measures); err != nil {
		return nil, err
	}
	return p, nil
}
