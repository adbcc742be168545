package metric

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/evalgate/evalgate/internal/exact"
)

// Overall is the name of the group every query belongs to.
const Overall = ""

// GroupSums holds the exact per-measure sums of one group of queries.
type GroupSums struct {
	Queries int64
	Sums    []exact.Sum // one per measure, in the Partial's measure order
	// Base holds the baseline run's sums, in a paired evaluation (nil
	// otherwise).
	Base []exact.Sum
}

// Partial holds the exact sums of every measure for the overall group and
// each tag group over some set of queries, and, in a paired evaluation,
// the baseline run's sums and the paired statistics. Partials of disjoint
// query sets merge exactly; the merged value does not depend on the merge
// order. A Partial is not safe for concurrent use.
type Partial struct {
	measures []Measure
	groups   map[string]*GroupSums
	paired   bool
	// curve[p] sums, over queries, the share of the query's relevant
	// documents found at rank p+1: its prefix sums are recall@k for every
	// k up to len(curve).
	curve, baseCurve []exact.Sum
	pairing          *Pairing
	stats            []*PairedStats // overall, then each of pairing.Groups; nil without a Pairing
}

// NewPartial returns an empty Partial for the measures (no baseline, no
// curve).
func NewPartial(measures []Measure) *Partial {
	return &Partial{measures: slices.Clone(measures), groups: map[string]*GroupSums{}}
}

// NewPartialFor returns an empty Partial laid out for cfg: with baseline
// sums when cfg.Paired, a recall curve of cfg.CurveDepth ranks, and the
// paired statistics of cfg.Pairing.
func NewPartialFor(cfg Config) *Partial {
	p := NewPartial(cfg.Measures)
	p.paired = cfg.Paired || cfg.Pairing != nil
	if cfg.CurveDepth > 0 {
		p.curve = make([]exact.Sum, cfg.CurveDepth)
		if p.paired {
			p.baseCurve = make([]exact.Sum, cfg.CurveDepth)
		}
	}
	if cfg.Pairing != nil {
		pr := *cfg.Pairing
		pr.Measures = slices.Clone(pr.Measures)
		pr.Groups = slices.Clone(pr.Groups)
		p.pairing = &pr
		p.stats = newStatsSet(&pr)
	}
	return p
}

// topK is the number of most regressed queries kept by stats[i]: only the
// overall group keeps them.
func (p *Partial) topK(i int) int {
	if i > 0 {
		return 0
	}
	return p.pairing.TopK
}

// Measures returns the measures, in order. The slice must not be modified.
func (p *Partial) Measures() []Measure { return p.measures }

// Paired reports whether the partial holds a baseline run's sums.
func (p *Partial) Paired() bool { return p.paired }

// Group returns the sums of the named group, creating it if needed. name is
// copied.
func (p *Partial) Group(name string) *GroupSums {
	if g, ok := p.groups[name]; ok {
		return g
	}
	g := &GroupSums{Sums: make([]exact.Sum, len(p.measures))}
	if p.paired {
		g.Base = make([]exact.Sum, len(p.measures))
	}
	p.groups[strings.Clone(name)] = g
	return g
}

// GroupNames returns the group names in sorted order (Overall first).
func (p *Partial) GroupNames() []string {
	names := make([]string, 0, len(p.groups))
	for n := range p.groups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the named group, or nil.
func (p *Partial) Lookup(name string) *GroupSums { return p.groups[name] }

func (p *Partial) sameLayout(o *Partial) error {
	if !slices.Equal(p.measures, o.measures) {
		return fmt.Errorf("merge partials: measures %v and %v differ", Names(p.measures), Names(o.measures))
	}
	if p.paired != o.paired || len(p.curve) != len(o.curve) || (p.pairing == nil) != (o.pairing == nil) ||
		p.pairing != nil && !p.pairing.equal(o.pairing) {
		return errors.New("merge partials: one is paired with a baseline or has a recall curve or statistics the other lacks")
	}
	return nil
}

// Merge adds o into p. Both must have the same layout.
func (p *Partial) Merge(o *Partial) error {
	if err := p.sameLayout(o); err != nil {
		return err
	}
	for name, og := range o.groups {
		g := p.Group(name)
		g.Queries += og.Queries
		for i := range g.Sums {
			g.Sums[i].Merge(&og.Sums[i])
		}
		for i := range g.Base {
			g.Base[i].Merge(&og.Base[i])
		}
	}
	for i := range p.curve {
		p.curve[i].Merge(&o.curve[i])
	}
	for i := range p.baseCurve {
		p.baseCurve[i].Merge(&o.baseCurve[i])
	}
	for i, st := range p.stats {
		st.merge(o.stats[i], p.topK(i))
	}
	return nil
}

// Reset empties the partial for reuse: groups stay allocated with zero
// sums and no queries (and are left out of the encoding until used again).
func (p *Partial) Reset() {
	for _, g := range p.groups {
		g.Queries = 0
		for i := range g.Sums {
			g.Sums[i].Reset()
		}
		for i := range g.Base {
			g.Base[i].Reset()
		}
	}
	for i := range p.curve {
		p.curve[i].Reset()
	}
	for i := range p.baseCurve {
		p.baseCurve[i].Reset()
	}
	for _, st := range p.stats {
		st.reset()
	}
}

// partialMagic starts the binary encoding of a Partial.
const partialMagic = "EGP3"

// MarshalBinary encodes the partial canonically: equal partials (same
// layout, same exact sums) encode to the same bytes, whatever the order
// of the additions and merges that produced them. The determinism check of
// the distributed path compares these bytes.
//
// Layout: magic, measures, layout flags (paired, curve depth, pairing),
// the groups in name order (name, queries, sums, baseline sums), the
// curves, the paired statistics.
func (p *Partial) MarshalBinary() ([]byte, error) {
	b := []byte(partialMagic)
	b = binary.AppendUvarint(b, uint64(len(p.measures)))
	for _, m := range p.measures {
		b = appendString(b, m.String())
	}
	b = appendBool(b, p.paired)
	b = binary.AppendUvarint(b, uint64(len(p.curve)))
	b = appendBool(b, p.pairing != nil)
	if p.pairing != nil {
		b = p.pairing.append(b)
	}
	names := p.GroupNames()
	used := names[:0]
	for _, n := range names {
		if p.groups[n].Queries > 0 {
			used = append(used, n)
		}
	}
	names = used
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		g := p.groups[n]
		b = appendString(b, n)
		b = binary.AppendUvarint(b, uint64(g.Queries))
		for i := range g.Sums {
			b = g.Sums[i].AppendBinary(b)
		}
		for i := range g.Base {
			b = g.Base[i].AppendBinary(b)
		}
	}
	for i := range p.curve {
		b = p.curve[i].AppendBinary(b)
	}
	for i := range p.baseCurve {
		b = p.baseCurve[i].AppendBinary(b)
	}
	for _, st := range p.stats {
		b = st.append(b)
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

var errShortPartial = errors.New("decode partial: truncated")

// header is the decoded layout at the front of an encoded partial.
type header struct {
	measures []string
	paired   bool
	curve    int
	pairing  *Pairing
}

func readHeader(r *reader) (*header, error) {
	if !strings.HasPrefix(string(r.b), partialMagic) {
		return nil, errors.New("decode partial: bad magic")
	}
	r.b = r.b[len(partialMagic):]
	nm, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if nm > 4096 {
		return nil, fmt.Errorf("decode partial: %d measures", nm)
	}
	h := &header{measures: make([]string, nm)}
	for i := range h.measures {
		if h.measures[i], err = r.string(); err != nil {
			return nil, err
		}
	}
	if h.paired, err = r.bool(); err != nil {
		return nil, err
	}
	c, err := r.uvarint()
	if err != nil || c > MaxCutoff {
		return nil, errors.New("decode partial: bad curve depth")
	}
	h.curve = int(c)
	hasPairing, err := r.bool()
	if err != nil {
		return nil, err
	}
	if hasPairing {
		if h.pairing, err = readPairing(r, len(h.measures)); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// UnmarshalBinary decodes what MarshalBinary produced, replacing p.
func (p *Partial) UnmarshalBinary(b []byte) error {
	r := reader{b: b}
	h, err := readHeader(&r)
	if err != nil {
		return err
	}
	measures := make([]Measure, len(h.measures))
	for i, s := range h.measures {
		if measures[i], err = Parse(s); err != nil {
			return fmt.Errorf("decode partial: %w", err)
		}
	}
	out := NewPartialFor(Config{Measures: measures, Paired: h.paired, CurveDepth: h.curve, Pairing: h.pairing})
	if err := out.mergeBody(&r, new(exact.Sum)); err != nil {
		return err
	}
	*p = *out
	return nil
}

// MergeBinary adds the partial encoded in b (MarshalBinary's output) into
// p without materializing it; scratch may be nil. The layouts must match.
func (p *Partial) MergeBinary(b []byte, scratch *exact.Sum) error {
	if scratch == nil {
		scratch = new(exact.Sum)
	}
	r := reader{b: b}
	h, err := readHeader(&r)
	if err != nil {
		return err
	}
	if len(h.measures) != len(p.measures) {
		return fmt.Errorf("merge partial: %d measures, want %d", len(h.measures), len(p.measures))
	}
	for i, m := range p.measures {
		if h.measures[i] != m.String() {
			return fmt.Errorf("merge partial: measure %q where %q was expected", h.measures[i], m.String())
		}
	}
	if h.paired != p.paired || h.curve != len(p.curve) || (h.pairing == nil) != (p.pairing == nil) ||
		p.pairing != nil && !p.pairing.equal(h.pairing) {
		return errors.New("merge partial: layouts differ (baseline, recall curve or statistics)")
	}
	return p.mergeBody(&r, scratch)
}

// mergeBody adds the groups, curves and statistics that follow the header.
func (p *Partial) mergeBody(r *reader, scratch *exact.Sum) error {
	ng, err := r.uvarint()
	if err != nil {
		return err
	}
	prev := ""
	for i := uint64(0); i < ng; i++ {
		name, err := r.string()
		if err != nil {
			return err
		}
		if i > 0 && name <= prev {
			return fmt.Errorf("decode partial: group %q out of order", name)
		}
		prev = name
		q, err := r.uvarint()
		if err != nil {
			return err
		}
		g := p.Group(name)
		g.Queries += int64(q)
		for _, sums := range [][]exact.Sum{g.Sums, g.Base} {
			for j := range sums {
				if err := r.mergeSum(&sums[j], scratch); err != nil {
					return fmt.Errorf("decode partial: group %q: %w", name, err)
				}
			}
		}
	}
	for _, sums := range [][]exact.Sum{p.curve, p.baseCurve} {
		for j := range sums {
			if err := r.mergeSum(&sums[j], scratch); err != nil {
				return fmt.Errorf("decode partial: recall curve: %w", err)
			}
		}
	}
	for i, st := range p.stats {
		if err := st.mergeEncoded(r, p.topK(i)); err != nil {
			return err
		}
	}
	if len(r.b) != 0 {
		return fmt.Errorf("decode partial: %d trailing bytes", len(r.b))
	}
	return nil
}

type reader struct{ b []byte }

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, errShortPartial
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) varint() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, errShortPartial
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) bool() (bool, error) {
	if len(r.b) == 0 {
		return false, errShortPartial
	}
	v := r.b[0]
	r.b = r.b[1:]
	if v > 1 {
		return false, fmt.Errorf("decode partial: bad flag %d", v)
	}
	return v == 1, nil
}

func (r *reader) string() (string, error) {
	n, err := r.uvarint()
	if err != nil {
		return "", err
	}
	if n > uint64(len(r.b)) {
		return "", errShortPartial
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s, nil
}

func (r *reader) mergeSum(into, scratch *exact.Sum) error {
	n, err := into.MergeBinary(r.b, scratch)
	if err != nil {
		return err
	}
	r.b = r.b[n:]
	return nil
}
