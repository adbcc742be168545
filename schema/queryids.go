package schema

import (
	"fmt"
	"math"
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

// RunQueryIDs returns the query ids of a run-long batch's record: its
// utf8 query_id column, or one of QueryRunsType with well-formed runs. It
// checks the form only; the ids themselves (non-null, non-empty, valid
// UTF-8) are the readers' to check, which hand out only batches whose
// ids are.
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
	if !ok1 || !ok2 || c.Data().Offset() != 0 || checkRunEnds(c) != nil {
		return nil, nil, false
	}
	// checkRunEnds lets the last run end past the rows; here it ends at them.
	ends = re.Int32Values()
	if (len(ends) == 0) != (c.Len() == 0) || len(ends) > 0 && int(ends[len(ends)-1]) != c.Len() {
		return nil, nil, false
	}
	return ends, vals, true
}

// queryRunsOf accumulates a query_id column as runs of one id, the
// run-end encoded form (QueryRunsType): EncodeQueryRuns makes it from ids
// one a row, the Parquet reader from a column's dictionary indices.
type queryRunsOf struct {
	ends []int32
	vals Strings
	// bytes counts the bytes of the ids one a row, for a reader to hold
	// against the limit its ids one a row had (see appendRepeated).
	bytes int64
}

func newQueryRuns() queryRunsOf { return queryRunsOf{vals: NewStrings(0, 0)} }

// add appends count rows of id v, extending the last run when it holds v.
func (q *queryRunsOf) add(v string, count int) {
	q.bytes += int64(count) * int64(len(v))
	k := len(q.ends)
	if k > 0 && q.vals.Value(k-1) == v {
		q.ends[k-1] += int32(count)
		return
	}
	end := int32(count)
	if k > 0 {
		end += q.ends[k-1]
	}
	q.vals.Append(v)
	q.ends = append(q.ends, end)
}

// array returns the runs as a column of QueryRunsType.
func (q *queryRunsOf) array() *array.RunEndEncoded {
	re, va := Int32Array(q.ends, nil), q.vals.Array()
	defer re.Release()
	defer va.Release()
	rows := 0
	if len(q.ends) > 0 {
		rows = int(q.ends[len(q.ends)-1])
	}
	return array.NewRunEndEncodedArray(re, va, rows, 0)
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
	runs := newQueryRuns()
	for lo, n := 0, q.Len(); lo < n; {
		id := q.Value(lo)
		hi := q.RunEnd(lo, id)
		runs.add(id, hi-lo)
		lo = hi
	}
	cols := []arrow.Array{runs.array()}
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
		if size > math.MaxInt32 {
			return nil, fmt.Errorf("decode query ids: %w: their values take more than %d bytes one a row, more than a utf8 column holds", ErrCorrupt, math.MaxInt32)
		}
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
