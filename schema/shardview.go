package schema

import (
	"fmt"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
)

// ShardView gives zero-copy, bounds-checked access to a record in the
// ShardBatch schema. Offsets are already adjusted for slicing (see the Arrow
// pitfall that List.Offsets ignores the array offset). A view is valid while
// the record is.
type ShardView struct {
	Rows    int
	Seq     []int64
	QueryID *array.String

	GroupOff []int32 // Rows+1 offsets into GroupVal
	GroupVal *array.String

	GradeOff []int32 // Rows+1 offsets into Grades
	Grades   []int32

	RunOff []int32 // Rows+1 offsets into Run
	Run    []uint32

	// BaseOff and Base hold the baseline rankings of a paired batch (nil
	// otherwise).
	BaseOff []int32
	Base    []uint32
}

// ViewShardBatch checks that rec has the ShardBatch layout (column types, no
// nulls, offsets in range) and returns a view of it. It does not check the
// per-row invariants; ValidateShardBatch does.
func ViewShardBatch(rec arrow.Record) (*ShardView, error) {
	if rec == nil {
		return nil, fmt.Errorf("%w: nil record", ErrInvalidBatch)
	}
	want := ShardBatch()
	if rec.NumCols() == int64(len(PairedShardBatch().Fields())) {
		want = PairedShardBatch()
	}
	if int(rec.NumCols()) != want.NumFields() {
		return nil, fmt.Errorf("%w: %d columns, want %d (or %d with a baseline run)", ErrInvalidBatch, rec.NumCols(), want.NumFields(), want.NumFields()+1)
	}
	for i, f := range want.Fields() {
		got := rec.Schema().Field(i)
		if got.Name != f.Name || !arrow.TypeEqual(got.Type, f.Type) {
			return nil, fmt.Errorf("%w: column %d is %s %s, want %s %s", ErrInvalidBatch, i, got.Name, got.Type, f.Name, f.Type)
		}
		if rec.Column(i).NullN() != 0 {
			return nil, fmt.Errorf("%w: column %s has nulls", ErrInvalidBatch, f.Name)
		}
	}
	n := int(rec.NumRows())
	v := &ShardView{Rows: n}
	v.Seq = rec.Column(ShardColSeq).(*array.Int64).Int64Values()
	v.QueryID = rec.Column(ShardColQueryID).(*array.String)
	if len(v.Seq) != n {
		return nil, fmt.Errorf("%w: seq has %d values for %d rows", ErrInvalidBatch, len(v.Seq), n)
	}
	if err := CheckStringOffsets(v.QueryID); err != nil {
		return nil, fmt.Errorf("%w: column query_id: %v", ErrInvalidBatch, err)
	}

	var err error
	groups := rec.Column(ShardColGroups).(*array.List)
	v.GroupVal = groups.ListValues().(*array.String)
	if v.GroupVal.NullN() != 0 {
		return nil, fmt.Errorf("%w: null group name", ErrInvalidBatch)
	}
	if err := CheckStringOffsets(v.GroupVal); err != nil {
		return nil, fmt.Errorf("%w: column groups: %v", ErrInvalidBatch, err)
	}
	if v.GroupOff, err = listOffsets(groups, v.GroupVal.Len()); err != nil {
		return nil, fmt.Errorf("%w: column groups: %v", ErrInvalidBatch, err)
	}
	grades := rec.Column(ShardColGrades).(*array.List)
	gv := grades.ListValues().(*array.Int32)
	if gv.NullN() != 0 {
		return nil, fmt.Errorf("%w: null grade", ErrInvalidBatch)
	}
	v.Grades = gv.Int32Values()
	if v.GradeOff, err = listOffsets(grades, len(v.Grades)); err != nil {
		return nil, fmt.Errorf("%w: column grades: %v", ErrInvalidBatch, err)
	}
	run := rec.Column(ShardColRun).(*array.List)
	rv := run.ListValues().(*array.Uint32)
	if rv.NullN() != 0 {
		return nil, fmt.Errorf("%w: null doc id in run", ErrInvalidBatch)
	}
	v.Run = rv.Uint32Values()
	if v.RunOff, err = listOffsets(run, len(v.Run)); err != nil {
		return nil, fmt.Errorf("%w: column run: %v", ErrInvalidBatch, err)
	}
	if rec.NumCols() > ShardColBaseRun {
		base := rec.Column(ShardColBaseRun).(*array.List)
		bv := base.ListValues().(*array.Uint32)
		if bv.NullN() != 0 {
			return nil, fmt.Errorf("%w: null doc id in base_run", ErrInvalidBatch)
		}
		v.Base = bv.Uint32Values()
		if v.Base == nil { // paired, with every baseline ranking empty
			v.Base = []uint32{}
		}
		if v.BaseOff, err = listOffsets(base, len(v.Base)); err != nil {
			return nil, fmt.Errorf("%w: column base_run: %v", ErrInvalidBatch, err)
		}
	}
	return v, nil
}

// listOffsets returns the Len()+1 offsets of l, adjusted for l's own offset,
// after checking that they are non-decreasing and within [0, values].
func listOffsets(l *array.List, values int) ([]int32, error) {
	off := l.Offsets()
	start := l.Data().Offset()
	end := start + l.Len() + 1
	if l.Len() == 0 && len(off) == 0 {
		return []int32{0}, nil
	}
	if start < 0 || end > len(off) {
		return nil, fmt.Errorf("offsets buffer has %d entries, need %d", len(off), end)
	}
	off = off[start:end]
	prev := off[0]
	if prev < 0 {
		return nil, fmt.Errorf("negative offset %d", prev)
	}
	for i, o := range off[1:] {
		if o < prev {
			return nil, fmt.Errorf("offset %d decreases at row %d", o, i)
		}
		prev = o
	}
	if int(prev) > values {
		return nil, fmt.Errorf("offset %d beyond %d values", prev, values)
	}
	return off, nil
}

// ValidateShardBatch checks the per-row invariants the kernel relies on:
// grades are non-increasing, and no judged doc id (id < number of grades)
// appears twice in a ranking. A batch built by package shard always passes;
// a batch from elsewhere (a corrupt or foreign payload) may not.
func (v *ShardView) Validate() error {
	var seen []uint64
	for r := 0; r < v.Rows; r++ {
		g := v.Grades[v.GradeOff[r]:v.GradeOff[r+1]]
		for i := 1; i < len(g); i++ {
			if g[i] > g[i-1] {
				return fmt.Errorf("%w: row %d (query %q): grades not in decreasing order", ErrInvalidBatch, r, v.QueryID.Value(r))
			}
		}
		words := (len(g) + 63) / 64
		if cap(seen) < words {
			seen = make([]uint64, words)
		}
		seen = seen[:words]
		rankings := [][]uint32{v.Run[v.RunOff[r]:v.RunOff[r+1]]}
		if v.Base != nil {
			rankings = append(rankings, v.Base[v.BaseOff[r]:v.BaseOff[r+1]])
		}
		for _, ranking := range rankings {
			clear(seen)
			for _, id := range ranking {
				if int(id) >= len(g) {
					continue
				}
				w, b := id/64, uint64(1)<<(id%64)
				if seen[w]&b != 0 {
					return fmt.Errorf("%w: row %d (query %q): judged doc id %d ranked twice", ErrInvalidBatch, r, v.QueryID.Value(r), id)
				}
				seen[w] |= b
			}
		}
	}
	return nil
}

// CheckStringOffsets checks that the offsets of a string array are
// non-decreasing and within its data buffer, so that Value cannot panic on a
// malformed record from a file or the network.
func CheckStringOffsets(a *array.String) error {
	if a.Len() == 0 {
		return nil
	}
	bufs := a.Data().Buffers()
	if len(bufs) < 3 || bufs[1] == nil {
		return fmt.Errorf("missing offsets buffer")
	}
	start := a.Data().Offset()
	all := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
	if start < 0 || start+a.Len()+1 > len(all) {
		return fmt.Errorf("offsets buffer has %d entries, need %d", len(all), start+a.Len()+1)
	}
	dataLen := 0
	if bufs[2] != nil {
		dataLen = bufs[2].Len()
	}
	off := all[start : start+a.Len()+1]
	if off[0] < 0 {
		return fmt.Errorf("negative offset %d", off[0])
	}
	for i := 1; i < len(off); i++ {
		if off[i] < off[i-1] {
			return fmt.Errorf("offset decreases at row %d", i-1)
		}
	}
	if int(off[len(off)-1]) > dataLen {
		return fmt.Errorf("offset %d beyond %d bytes of data", off[len(off)-1], dataLen)
	}
	return nil
}
