package shard

import (
	"slices"

	"github.com/apache/arrow/go/v16/arrow"

	"github.com/evalgate/evalgate/schema"
)

// Rows accumulates rows in the schema.ShardBatch layout. The zero value is
// ready to use. Rows is not safe for concurrent use.
type Rows struct {
	seq      []int64
	queryID  schema.Strings
	groupOff []int32
	groups   schema.Strings
	gradeOff []int32
	grades   []int32
	runOff   []int32
	run      []uint32
	// paired rows also carry a baseline ranking per query
	paired  bool
	baseOff []int32
	base    []uint32
}

func (r *Rows) init() {
	if r.groupOff == nil {
		// Small: many Rows hold a few queries (one per shard of a unit, or
		// of the coordinator's parts); Grow reserves more.
		r.queryID = schema.NewStrings(4, 64)
		r.groups = schema.NewStrings(4, 64)
		r.groupOff = []int32{0}
		r.gradeOff = []int32{0}
		r.runOff = []int32{0}
	}
}

// Grow reserves room for queries more rows holding runIDs ranked ids and
// grades judged grades in total.
func (r *Rows) Grow(queries, runIDs, grades int) {
	r.init()
	r.seq = slices.Grow(r.seq, queries)
	r.groupOff = slices.Grow(r.groupOff, queries)
	r.gradeOff = slices.Grow(r.gradeOff, queries)
	r.runOff = slices.Grow(r.runOff, queries)
	r.run = slices.Grow(r.run, runIDs)
	r.grades = slices.Grow(r.grades, grades)
	r.queryID.Offsets = slices.Grow(r.queryID.Offsets, queries)
	r.queryID.Data = slices.Grow(r.queryID.Data, 16*queries)
}

// Append adds one query: its position in input order, id, tag groups,
// judged grades (non-increasing; position i is interned doc id i) and the
// ranking as interned ids.
func (r *Rows) Append(seq int64, queryID string, groups []string, grades []int32, run []uint32) {
	r.init()
	r.seq = append(r.seq, seq)
	r.queryID.Append(queryID)
	for _, g := range groups {
		r.groups.Append(g)
	}
	r.groupOff = append(r.groupOff, int32(r.groups.Len()))
	r.grades = append(r.grades, grades...)
	r.gradeOff = append(r.gradeOff, int32(len(r.grades)))
	r.run = append(r.run, run...)
	r.runOff = append(r.runOff, int32(len(r.run)))
	if r.paired {
		r.baseOff = append(r.baseOff, int32(len(r.base)))
	}
}

// AppendPair adds one query with a baseline ranking as well: the rows then
// have the schema.PairedShardBatch layout.
func (r *Rows) AppendPair(seq int64, queryID string, groups []string, grades []int32, run, base []uint32) {
	r.setPaired()
	r.base = append(r.base, base...)
	r.Append(seq, queryID, groups, grades, run)
}

func (r *Rows) setPaired() {
	if r.paired {
		return
	}
	r.paired = true
	r.baseOff = make([]int32, len(r.seq)+1, cap(r.seq)+1) // earlier rows: empty baselines
}

// Paired reports whether the rows carry baseline rankings.
func (r *Rows) Paired() bool { return r.paired }

// AppendRow copies row i of a shard-batch view.
func (r *Rows) AppendRow(v *schema.ShardView, i int) {
	r.init()
	if v.Base != nil {
		r.setPaired() // before this row: it records the earlier rows' empty baselines
	}
	r.seq = append(r.seq, v.Seq[i])
	r.queryID.Append(v.QueryID.Value(i))
	for g := v.GroupOff[i]; g < v.GroupOff[i+1]; g++ {
		r.groups.Append(v.GroupVal.Value(int(g)))
	}
	r.groupOff = append(r.groupOff, int32(r.groups.Len()))
	r.grades = append(r.grades, v.Grades[v.GradeOff[i]:v.GradeOff[i+1]]...)
	r.gradeOff = append(r.gradeOff, int32(len(r.grades)))
	r.run = append(r.run, v.Run[v.RunOff[i]:v.RunOff[i+1]]...)
	r.runOff = append(r.runOff, int32(len(r.run)))
	if v.Base != nil {
		r.base = append(r.base, v.Base[v.BaseOff[i]:v.BaseOff[i+1]]...)
	}
	if r.paired {
		r.baseOff = append(r.baseOff, int32(len(r.base)))
	}
}

// Len returns the number of rows.
func (r *Rows) Len() int { return len(r.seq) }

// Size estimates the encoded size of the rows in bytes, before compression.
func (r *Rows) Size() int {
	return 8*len(r.seq) + len(r.queryID.Data) + 4*r.queryID.Len() + len(r.groups.Data) +
		4*r.groups.Len() + 4*len(r.grades) + 4*len(r.run) + 4*len(r.base) + 16*len(r.seq)
}

// Record wraps the rows as an Arrow record without copying. The Rows must
// not be appended to or reset while the record is in use. The caller must
// Release the record.
func (r *Rows) Record() arrow.Record {
	r.init()
	n := len(r.seq)
	cols := []arrow.Array{
		schema.Int64Array(r.seq),
		r.queryID.Array(),
		schema.ListArray(r.groupOff, r.groups.Array(), nil),
		schema.ListArray(r.gradeOff, schema.Int32Array(r.grades, nil), nil),
		schema.ListArray(r.runOff, schema.Uint32Array(r.run), nil),
	}
	if r.paired {
		cols = append(cols, schema.ListArray(r.baseOff, schema.Uint32Array(r.base), nil))
		return schema.NewRecord(schema.PairedShardBatch(), cols, n)
	}
	return schema.NewRecord(schema.ShardBatch(), cols, n)
}

// Reset empties the rows, keeping their memory. Records made earlier must
// no longer be in use.
func (r *Rows) Reset() {
	r.init()
	r.seq = r.seq[:0]
	r.queryID.Reset()
	r.groupOff = r.groupOff[:1]
	r.groups.Reset()
	r.gradeOff = r.gradeOff[:1]
	r.grades = r.grades[:0]
	r.runOff = r.runOff[:1]
	r.run = r.run[:0]
	r.paired, r.baseOff, r.base = false, nil, r.base[:0]
}

// Concat returns the rows of all parts, in order, in one Rows.
func Concat(parts []*Rows) *Rows {
	var n, runIDs, grades int
	for _, p := range parts {
		n += p.Len()
		runIDs += len(p.run)
		grades += len(p.grades)
	}
	out := &Rows{}
	out.Grow(n, runIDs, grades)
	for _, p := range parts {
		out.AppendRows(p)
	}
	return out
}

// AppendRows appends a copy of every row of p, in order. Size grows by
// p.Size().
func (r *Rows) AppendRows(p *Rows) {
	r.init()
	if p.paired {
		r.setPaired() // before p's rows
	}
	for i := range p.seq {
		r.seq = append(r.seq, p.seq[i])
		r.queryID.Append(p.queryID.Value(i))
		for g := p.groupOff[i]; g < p.groupOff[i+1]; g++ {
			r.groups.Append(p.groups.Value(int(g)))
		}
		r.groupOff = append(r.groupOff, int32(r.groups.Len()))
		r.grades = append(r.grades, p.grades[p.gradeOff[i]:p.gradeOff[i+1]]...)
		r.gradeOff = append(r.gradeOff, int32(len(r.grades)))
		r.run = append(r.run, p.run[p.runOff[i]:p.runOff[i+1]]...)
		r.runOff = append(r.runOff, int32(len(r.run)))
		if p.paired {
			r.base = append(r.base, p.base[p.baseOff[i]:p.baseOff[i+1]]...)
		}
		if r.paired {
			r.baseOff = append(r.baseOff, int32(len(r.base)))
		}
	}
}
