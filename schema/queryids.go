package schema

import (
	"fmt"
	"sort"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
)

// QueryIDs is the query_id column of a run-long batch as the readers
// hand it out: utf8, an id a row, or of QueryRunsType, an id a run of
// rows (run ends checked: increasing, the last at the batch's length).
type QueryIDs struct {
	plain *array.String
	ends  []int32       // run-end encoded: where each run of rows ends
	vals  *array.String // and its id
	last  int           // the run last looked up: rows are mostly visited in order
}

// RunQueryIDs returns the query ids of a run-long batch's record.
func RunQueryIDs(rec arrow.Record) (QueryIDs, error) {
	switch c := rec.Column(0).(type) {
	case *array.String:
		return QueryIDs{plain: c}, nil
	case *array.RunEndEncoded:
		if ends, vals, ok := queryRuns(c); ok {
			return QueryIDs{ends: ends, vals: vals}, nil
		}
	}
	return QueryIDs{}, fmt.Errorf("%w: query_id of a run batch is %s, want utf8 or %s", ErrInvalidBatch, rec.Column(0).DataType(), QueryRunsType)
}

// queryRuns returns the run ends and ids of a column of QueryRunsType
// whose runs are well formed: not sliced, run ends without nulls and
// strictly increasing from above 0, the last at the column's length, one
// id a run. ok is false otherwise.
func queryRuns(c *array.RunEndEncoded) (ends []int32, vals *array.String, ok bool) {
	re, ok1 := c.RunEndsArr().(*array.Int32)
	vals, ok2 := c.Values().(*array.String)
	if !ok1 || !ok2 || c.Data().Offset() != 0 || re.NullN() != 0 {
		return nil, nil, false
	}
	ends = re.Int32Values()
	if len(ends) != vals.Len() || (len(ends) == 0) != (c.Len() == 0) {
		return nil, nil, false
	}
	prev := int32(0)
	for _, e := range ends {
		if e <= prev {
			return nil, nil, false
		}
		prev = e
	}
	if int(prev) != c.Len() {
		return nil, nil, false
	}
	return ends, vals, true
}

// Len returns the number of rows.
func (q QueryIDs) Len() int {
	if q.plain != nil {
		return q.plain.Len()
	}
	if len(q.ends) == 0 {
		return 0
	}
	return int(q.ends[len(q.ends)-1])
}

// Value returns the query id of row i.
func (q *QueryIDs) Value(i int) string {
	if q.plain != nil {
		return q.plain.Value(i)
	}
	return q.vals.Value(q.run(i))
}

// run returns the run row i is in (len(q.ends) past the last row): the
// run last looked up or the one after it, else by binary search.
func (q *QueryIDs) run(i int) int {
	for k := q.last; k <= q.last+1 && k < len(q.ends); k++ {
		if i < int(q.ends[k]) && (k == 0 || i >= int(q.ends[k-1])) {
			q.last = k
			return k
		}
	}
	k := sort.Search(len(q.ends), func(k int) bool { return int(q.ends[k]) > i })
	if k < len(q.ends) {
		q.last = k
	}
	return k
}

// RunEnd returns the first row at or after from whose query id is not id,
// or Len() when there is none (RunEnd of a utf8 column). Run-end encoded,
// it compares one id a run.
func (q *QueryIDs) RunEnd(from int, id string) int {
	if q.plain != nil {
		return RunEnd(q.plain, from, id)
	}
	end := from
	for k := q.run(from); k < len(q.ends) && q.vals.Value(k) == id; k++ {
		end = int(q.ends[k])
	}
	return end
}

// EncodeQueryRuns returns a run-long record with its query_id column of
// QueryRunsType (schema RunLongEncoded): rec itself, with a reference
// taken, when it has one already. Its other columns are rec's.
func EncodeQueryRuns(rec arrow.Record) (arrow.Record, error) {
	q, err := RunQueryIDs(rec)
	if err != nil {
		return nil, err
	}
	if q.plain == nil {
		rec.Retain()
		return rec, nil
	}
	var ends []int32
	vals := NewStrings(0, 0)
	for lo, n := 0, q.Len(); lo < n; {
		id := q.Value(lo)
		lo = q.RunEnd(lo, id)
		ends = append(ends, int32(lo))
		vals.Append(id)
	}
	re, va := Int32Array(ends, nil), vals.Array()
	defer re.Release()
	defer va.Release()
	cols := []arrow.Array{array.NewRunEndEncodedArray(re, va, q.Len(), 0)}
	for _, c := range rec.Columns()[1:] {
		c.Retain()
		cols = append(cols, c)
	}
	return NewRecord(RunLongEncoded(), cols, int(rec.NumRows())), nil
}

// DecodeQueryRuns returns a run-long record with a utf8 query_id column
// (schema RunLong): rec itself, with a reference taken, when it has one
// already. Its other columns are rec's.
func DecodeQueryRuns(rec arrow.Record) (arrow.Record, error) {
	q, err := RunQueryIDs(rec)
	if err != nil {
		return nil, err
	}
	if q.plain != nil {
		rec.Retain()
		return rec, nil
	}
	n := q.Len()
	size := 0
	prev := int32(0)
	for k, e := range q.ends {
		size += int(e-prev) * len(q.vals.Value(k))
		prev = e
	}
	ids := NewStrings(n, size)
	prev = 0
	for k, e := range q.ends {
		id := q.vals.Value(k)
		for range e - prev {
			ids.Append(id)
		}
		prev = e
	}
	cols := []arrow.Array{ids.Array()}
	for _, c := range rec.Columns()[1:] {
		c.Retain()
		cols = append(cols, c)
	}
	return NewRecord(RunLong(), cols, n), nil
}
