package schema

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// runLongRecord returns a run-long record (utf8 query ids) of the given
// query ids, with doc ids d<row> and scores counting down.
func runLongRecord(ids []string) arrow.Record {
	qids, docs := NewStrings(len(ids), 0), NewStrings(len(ids), 0)
	scores := make([]float64, len(ids))
	for i, id := range ids {
		qids.Append(id)
		docs.Append(fmt.Sprintf("d%d", i))
		scores[i] = float64(len(ids) - i)
	}
	return NewRecord(RunLong(), []arrow.Array{qids.Array(), docs.Array(), Float64Array(scores), NullInt32Array(len(ids))}, len(ids))
}

// encodedRecord returns rec with its query ids run-end encoded in the
// runs given (ends), which may split a query's rows into several runs.
func encodedRecord(t *testing.T, rec arrow.Record, ends []int32) arrow.Record {
	t.Helper()
	plain := rec.Column(0).(*array.String)
	vals := NewStrings(len(ends), 0)
	for _, e := range ends {
		vals.Append(plain.Value(int(e) - 1))
	}
	re, va := Int32Array(ends, nil), vals.Array()
	defer re.Release()
	defer va.Release()
	cols := []arrow.Array{array.NewRunEndEncodedArray(re, va, int(rec.NumRows()), 0)}
	for _, c := range rec.Columns()[1:] {
		c.Retain()
		cols = append(cols, c)
	}
	return NewRecord(RunLongEncoded(), cols, int(rec.NumRows()))
}

// randomRuns returns query ids in runs of random lengths, some queries
// repeating after others, and run ends that split some runs in two.
func randomRuns(rng *rand.Rand) (ids []string, ends []int32) {
	pool := []string{"q1", "q2", "q10", "ab", "abab", "日本"}
	for len(ids) < 300 {
		id := pool[rng.IntN(len(pool))]
		n := 1 + rng.IntN(30)
		for range n {
			ids = append(ids, id)
			if rng.IntN(20) == 0 { // a run split where the id goes on
				ends = append(ends, int32(len(ids)))
			}
		}
		if len(ends) == 0 || int(ends[len(ends)-1]) != len(ids) {
			ends = append(ends, int32(len(ids)))
		}
	}
	return ids, ends
}

// TestQueryIDsMatchRowByRow checks Len, Value and RunEnd of run-end
// encoded query ids, runs split or not, visited in order and at random,
// against the utf8 column and a row-by-row scan.
func TestQueryIDsMatchRowByRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		ids, ends := randomRuns(rng)
		rec := runLongRecord(ids)
		enc := encodedRecord(t, rec, ends)
		for _, r := range []arrow.Record{rec, enc} {
			q, err := RunQueryIDs(r)
			if err != nil {
				t.Fatal(err)
			}
			if q.Len() != len(ids) {
				t.Fatalf("trial %d: Len %d, want %d", trial, q.Len(), len(ids))
			}
			for i := range ids {
				if got := q.Value(i); got != ids[i] {
					t.Fatalf("trial %d: Value(%d) = %q, want %q", trial, i, got, ids[i])
				}
			}
			for range 200 {
				i := rng.IntN(len(ids))
				if got := q.Value(i); got != ids[i] {
					t.Fatalf("trial %d: Value(%d) at random = %q, want %q", trial, i, got, ids[i])
				}
			}
			for from := 0; from <= len(ids); from++ {
				for _, id := range []string{"q1", "ab", "zz"} {
					if got, want := q.RunEnd(from, id), naiveRunEnd(ids, from, id); got != want {
						t.Fatalf("trial %d: RunEnd(%d, %q) = %d, want %d", trial, from, id, got, want)
					}
				}
			}
		}
		rec.Release()
		enc.Release()
	}
}

// TestEncodeQueryRuns checks that EncodeQueryRuns keeps one run a
// stretch of equal ids and that DecodeQueryRuns gives back the record.
func TestEncodeQueryRuns(t *testing.T) {
	ids := []string{"q1", "q1", "q2", "q1", "q1", "q1", "q3"}
	rec := runLongRecord(ids)
	defer rec.Release()
	enc, err := EncodeQueryRuns(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Release()
	if !enc.Schema().Equal(RunLongEncoded()) {
		t.Fatalf("schema %v", enc.Schema())
	}
	ree := enc.Column(0).(*array.RunEndEncoded)
	if got := ree.RunEndsArr().(*array.Int32).Int32Values(); !reflect.DeepEqual(got, []int32{2, 3, 6, 7}) {
		t.Errorf("run ends %v", got)
	}
	again, err := EncodeQueryRuns(enc)
	if err != nil || again != enc {
		t.Errorf("encoding an encoded record: %v, %v", again, err)
	}
	again.Release()
	dec, err := DecodeQueryRuns(enc)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Release()
	if !array.RecordEqual(dec, rec) {
		t.Errorf("decoded\n%v\nwant\n%v", dec, rec)
	}
}

// TestRunQueryIDsRefuses checks that query id columns of other types or
// with runs that do not cover the rows one by one are refused.
func TestRunQueryIDsRefuses(t *testing.T) {
	rec := runLongRecord([]string{"q1", "q1", "q2"})
	defer rec.Release()
	for _, tc := range []struct {
		name string
		col  func() arrow.Array
	}{
		{"int32 ids", func() arrow.Array { return Int32Array([]int32{1, 1, 2}, nil) }},
		{"empty run", func() arrow.Array { return ree([]int32{2, 2, 3}, "q1", "q1", "q2", 3, 0) }},
		{"runs past the rows", func() arrow.Array { return ree([]int32{2, 5}, "q1", "q2", 3, 0) }},
		{"runs short of the rows", func() arrow.Array { return ree([]int32{1, 2}, "q1", "q2", 3, 0) }},
		{"sliced", func() arrow.Array { return ree([]int32{2, 4}, "q1", "q2", 3, 1) }},
	} {
		cols := []arrow.Array{tc.col()}
		for _, c := range rec.Columns()[1:] {
			c.Retain()
			cols = append(cols, c)
		}
		fields := RunLong().Fields()
		fields[0].Type = cols[0].DataType()
		r := NewRecord(arrow.NewSchema(fields, nil), cols, 3)
		if _, err := RunQueryIDs(r); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: %v", tc.name, err)
		}
		r.Release()
	}
}

// ree returns a run-end encoded utf8 array of rows rows from offset:
// run ends, then the runs' values (nil: null), rows and offset.
func ree(ends []int32, args ...any) *array.RunEndEncoded {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, a := range args[:len(args)-2] {
		if a == nil {
			b.AppendNull()
		} else {
			b.Append(a.(string))
		}
	}
	re, va := Int32Array(ends, nil), b.NewStringArray()
	defer re.Release()
	defer va.Release()
	return array.NewRunEndEncodedArray(re, va, args[len(args)-2].(int), args[len(args)-1].(int))
}

// TestReadQueryRuns reads Arrow IPC files whose query ids are run-end
// encoded: well-formed ones as their utf8 twins read, runs that end past
// the rows as well (row by row), and runs that are not increasing or ids
// that are empty or null as errors naming the rows or the column.
func TestReadQueryRuns(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"q1", "q1", "q2", "q2", "q2", "q3"}
	rec := runLongRecord(ids)
	defer rec.Release()
	want := func(ids []string) []runLongRow {
		var rows []runLongRow
		for i, id := range ids {
			rows = append(rows, runLongRow{QID: id, Doc: fmt.Sprintf("d%d", i), Score: float64(len(ids) - i), Pos: int64(i + 1)})
		}
		return rows
	}
	write := func(name string, col arrow.Array) string {
		cols := []arrow.Array{col}
		for _, c := range rec.Columns()[1:] {
			c.Retain()
			cols = append(cols, c)
		}
		r := NewRecord(RunLongEncoded(), cols, len(ids))
		defer r.Release()
		return writeColumnar(t, dir, name, FormatArrow, r.Schema(), []arrow.Record{r})
	}
	for _, tc := range []struct {
		name string
		col  arrow.Array
		want []runLongRow
		errs []wantErr
	}{
		{"runs", ree([]int32{2, 5, 6}, "q1", "q2", "q3", 6, 0), want(ids), nil},
		{"split runs", ree([]int32{1, 2, 4, 5, 6}, "q1", "q1", "q2", "q2", "q3", 6, 0), want(ids), nil},
		{"runs past the rows", ree([]int32{2, 5, 9}, "q1", "q2", "q3", 6, 0), want(ids), nil},
		{"empty id", ree([]int32{2, 5, 6}, "q1", "", "q3", 6, 0), nil,
			[]wantErr{{Row: 3, Field: "query_id", Is: ErrEmptyID}, {Row: 4, Field: "query_id", Is: ErrEmptyID}, {Row: 5, Field: "query_id", Is: ErrEmptyID}}},
		{"null id", ree([]int32{2, 5, 6}, "q1", nil, "q3", 6, 0), nil,
			[]wantErr{{Row: 3, Field: "query_id", Is: ErrNull}, {Row: 4, Field: "query_id", Is: ErrNull}, {Row: 5, Field: "query_id", Is: ErrNull}}},
		{"run ends not increasing", ree([]int32{2, 2, 6}, "q1", "q2", "q3", 6, 0), nil,
			[]wantErr{{Row: 1, Is: ErrCorrupt, Has: "run end 1 at 2 is not past 2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(strings.ReplaceAll(tc.name, " ", "_")+".arrow", tc.col)
			readMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			c, err := readFile(t, p, RoleRun, Options{Allocator: readMem})
			if tc.errs != nil {
				checkErrors(t, err, p, tc.errs)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.RunLong, tc.want) {
				t.Errorf("read %+v\nwant %+v", c.RunLong, tc.want)
			}
			readMem.AssertSize(t, 0)
		})
	}
}

// TestExpansionBounded reads a run whose query_id names an 8 KiB id for
// each of 100,000 rows in a few bytes (run-end encoded): 819 MB one a
// row, more than a file of its size may allocate, refused as corrupt
// rather than copied; checkExpansion bounds dictionary columns alike.
func TestExpansionBounded(t *testing.T) {
	const rows = 100_000
	long := strings.Repeat("q", 8192)
	docs, scores := NewStrings(rows, 0), make([]float64, rows)
	for i := range rows {
		docs.Append(fmt.Sprintf("d%d", i))
		scores[i] = float64(rows - i)
	}
	cols := []arrow.Array{ree([]int32{rows}, long, rows, 0), docs.Array(), Float64Array(scores), NullInt32Array(rows)}
	rec := NewRecord(RunLongEncoded(), cols, rows)
	defer rec.Release()
	p := writeColumnar(t, t.TempDir(), "long.arrow", FormatArrow, rec.Schema(), []arrow.Record{rec})
	_, err := readFile(t, p, RoleRun, Options{})
	checkErrors(t, err, p, []wantErr{{Row: 1, Is: ErrCorrupt, Has: "column query_id: its values take 819200000 bytes one a row"}})

	if err := checkExpansion(rec, 1<<30); err != nil {
		t.Errorf("within the limit: %v", err)
	}
	dict := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		Int32Array([]int32{0, 0, 0, 1}, nil), ree([]int32{1, 2}, "abcdefghij", "x", 2, 0).Values())
	defer dict.Release()
	d := NewRecord(arrow.NewSchema([]arrow.Field{{Name: "query_id", Type: dict.DataType()}}, nil), []arrow.Array{dict}, 4)
	defer d.Release()
	if err := checkExpansion(d, 30); err == nil || !strings.Contains(err.Error(), "31 bytes") {
		t.Errorf("dictionary of 31 bytes one a row, limit 30: %v", err)
	}
	if err := checkExpansion(d, 31); err != nil {
		t.Errorf("dictionary within the limit: %v", err)
	}
	// Run-end encoded large_utf8 counts alike.
	lb := array.NewLargeStringBuilder(memory.DefaultAllocator)
	defer lb.Release()
	lb.AppendValues([]string{"abcdefghij", "x"}, nil)
	lv := lb.NewArray()
	defer lv.Release()
	ends := Int32Array([]int32{3, 4}, nil)
	defer ends.Release()
	lr := array.NewRunEndEncodedArray(ends, lv, 4, 0)
	defer lr.Release()
	l := NewRecord(arrow.NewSchema([]arrow.Field{{Name: "query_id", Type: lr.DataType()}}, nil), []arrow.Array{lr}, 4)
	lr.Retain() // NewRecord released the reference the deferred Release drops
	defer l.Release()
	if err := checkExpansion(l, 30); err == nil || !strings.Contains(err.Error(), "31 bytes") {
		t.Errorf("run-end encoded large_utf8 of 31 bytes one a row, limit 30: %v", err)
	}
}
