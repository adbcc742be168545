package schema

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
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
		name    string
		col     arrow.Array
		want    []runLongRow
		inPlace bool // the batch keeps the runs (else they are read row by row)
		errs    []wantErr
	}{
		{"runs", ree([]int32{2, 5, 6}, "q1", "q2", "q3", 6, 0), want(ids), true, nil},
		{"split runs", ree([]int32{1, 2, 4, 5, 6}, "q1", "q1", "q2", "q2", "q3", 6, 0), want(ids), true, nil},
		{"runs past the rows", ree([]int32{2, 5, 9}, "q1", "q2", "q3", 6, 0), want(ids), false, nil},
		{"empty id", ree([]int32{2, 5, 6}, "q1", "", "q3", 6, 0), nil, false,
			[]wantErr{{Row: 3, Field: "query_id", Is: ErrEmptyID}, {Row: 4, Field: "query_id", Is: ErrEmptyID}, {Row: 5, Field: "query_id", Is: ErrEmptyID}}},
		{"null id", ree([]int32{2, 5, 6}, "q1", nil, "q3", 6, 0), nil, false,
			[]wantErr{{Row: 3, Field: "query_id", Is: ErrNull}, {Row: 4, Field: "query_id", Is: ErrNull}, {Row: 5, Field: "query_id", Is: ErrNull}}},
		{"run ends not increasing", ree([]int32{2, 2, 6}, "q1", "q2", "q3", 6, 0), nil, false,
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
			if got := firstBatch(t, p, RoleRun).Record.Column(0).DataType().ID() == arrow.RUN_END_ENCODED; got != tc.inPlace {
				t.Errorf("query ids kept as runs: %v, want %v", got, tc.inPlace)
			}
		})
	}
}

// TestExpansionBounded: a record whose run-end or dictionary encoded
// columns, views or 64-bit offset strings would expand to more bytes than
// the file's allocation limit, or whose arrays (nested ones included)
// have more values than its 8-byte columns could hold within it, is
// refused as corrupt before anything is copied; well-formed ones within
// it pass.
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
	st, statErr := os.Stat(p)
	if statErr != nil {
		t.Fatal(statErr)
	}
	limit := AllocationLimit(st.Size())
	if rows*int64(len(long)) <= int64(limit) {
		t.Fatalf("the ids take %d bytes, within the limit %d: the test needs more", rows*len(long), limit)
	}
	checkErrors(t, err, p, []wantErr{{Row: 1, Is: ErrCorrupt, Has: fmt.Sprintf("column query_id: its values take more than %d bytes one a row", limit)}})
	if err := checkExpansion(rec, 1<<30); err != nil {
		t.Errorf("within the limit: %v", err)
	}

	// 2^31-1 rows of empty ids and a score, all run-end encoded: a file of
	// a few hundred bytes, refused by its rows before any is copied.
	const many = math.MaxInt32
	empty := func() arrow.Array { return ree([]int32{many}, "", many, 0) }
	score := func() arrow.Array {
		re, va := Int32Array([]int32{many}, nil), Float64Array([]float64{1})
		defer re.Release()
		defer va.Release()
		return array.NewRunEndEncodedArray(re, va, many, 0)
	}()
	q, d := empty(), empty()
	big := NewRecord(arrow.NewSchema([]arrow.Field{{Name: FieldQueryID, Type: q.DataType()}, {Name: FieldDocID, Type: d.DataType()},
		{Name: FieldScore, Type: score.DataType()}}, nil), []arrow.Array{q, d, score}, many)
	defer big.Release()
	p = writeColumnar(t, t.TempDir(), "rows.arrow", FormatArrow, big.Schema(), []arrow.Record{big})
	_, err = readFile(t, p, RoleRun, Options{})
	checkErrors(t, err, p, []wantErr{{Row: 1, Is: ErrCorrupt, Has: "2147483647 values, more than the 33554432"}})

	budget := expansionBudget{values: 100, bytes: 30}
	check := func(name string, a arrow.Array, want int64, wantErr string) {
		t.Helper()
		defer a.Release()
		n, err := budget.expandedBytes(a)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("%s: error %v, want %q", name, err, wantErr)
			}
			return
		}
		if err != nil || n != want {
			t.Errorf("%s: %d bytes, %v; want %d", name, n, err, want)
		}
	}
	dictOf := func(idx []int32, vals arrow.Array) arrow.Array {
		defer vals.Release()
		ix := Int32Array(idx, nil)
		defer ix.Release()
		return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: vals.DataType()}, ix, vals)
	}
	strs := func(v ...string) arrow.Array {
		b := NewStrings(len(v), 0)
		for _, s := range v {
			b.Append(s)
		}
		return b.Array()
	}
	check("dictionary, 31 bytes one a row", dictOf([]int32{0, 0, 0, 1}, strs("abcdefghij", "x")), 31, "")
	check("dictionary, 30 bytes", dictOf([]int32{0, 0, 0}, strs("abcdefghij", "x")), 30, "")

	lb := array.NewLargeStringBuilder(memory.DefaultAllocator)
	lb.AppendValues([]string{"abcdefghij", "x"}, nil)
	lv := lb.NewArray()
	lb.Release()
	ends := Int32Array([]int32{3, 4}, nil)
	check("run-end encoded large_utf8", array.NewRunEndEncodedArray(ends, lv, 4, 0), 31, "")
	lv.Release()
	ends.Release()

	// Run-end encoded dictionary values count through the dictionary.
	dv := dictOf([]int32{1, 0}, strs("x", "abcdefghij"))
	ends = Int32Array([]int32{3, 4}, nil)
	check("run-end encoded dictionary", array.NewRunEndEncodedArray(ends, dv, 4, 0), 31, "")
	dv.Release()
	ends.Release()

	// Views: every row may point at the same long string.
	vb := array.NewStringViewBuilder(memory.DefaultAllocator)
	for range 4 {
		vb.Append("abcdefghijklmnopqrstuvwxyz")
	}
	check("utf8_view", vb.NewArray(), 31, "")
	vb.Release()

	// large_utf8 offsets that decrease: a negative length is corrupt, not
	// a credit against the long values.
	bad := array.NewLargeStringData(array.NewData(arrow.BinaryTypes.LargeString, 2, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int64Traits.CastToBytes([]int64{0, 20, 10})), memory.NewBufferBytes(make([]byte, 20))}, nil, 0, 0))
	check("decreasing offsets", bad, 0, "negative length -10")

	// Products that would overflow saturate past the bound.
	e64 := array.NewInt64Data(array.NewData(arrow.PrimitiveTypes.Int64, 1, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int64Traits.CastToBytes([]int64{1 << 62}))}, nil, 0, 0))
	v8 := strs("abcdefgh")
	huge := array.NewRunEndEncodedArray(e64, v8, 1<<62, 0)
	e64.Release()
	v8.Release()
	wide := expansionBudget{values: math.MaxInt64, bytes: 1 << 40}
	if n, err := wide.expandedBytes(huge); err != nil || n != 1<<40+1 {
		t.Errorf("2^62 rows of 8 bytes: %d, %v; want the bound + 1", n, err)
	}
	huge.Release()

	// A list's values count as values: a run-end encoded child can claim
	// more than the list's own offsets.
	child := ree([]int32{1000}, "d", 1000, 0)
	lst := array.NewListData(array.NewData(arrow.ListOf(child.DataType()), 1, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 1000}))}, []arrow.ArrayData{child.Data()}, 0, 0))
	child.Release()
	check("list of 1000 run-end encoded values", lst, 0, "1000 values, more than the 100")
}

// TestRunEndEncodedNulls: a null in a run-end encoded column is its run's
// value's null (the array's own validity says nothing), and the readers
// of doc-id lists, tags and query texts take it as the null of a utf8
// column: an error in a doc-id list, a tag left out, a missing text.
func TestRunEndEncodedNulls(t *testing.T) {
	at := func(errs *[]string) func(int, string, error) {
		return func(i int, field string, err error) { *errs = append(*errs, fmt.Sprintf("%d %s %v", i, field, err)) }
	}
	docs := ree([]int32{2, 3, 4}, "d1", nil, "d2", 4, 0) // d1 d1 null d2
	defer docs.Release()
	var errs []string
	offs, vals, err := copyStringList(ListArray([]int32{0, 2, 4}, docs, nil), FieldDocIDs, at(&errs))
	if err != nil {
		t.Fatal(err)
	}
	defer vals.Release()
	if !reflect.DeepEqual(offs, []int32{0, 2, 3}) || vals.Len() != 3 || vals.Value(2) != "d2" ||
		!reflect.DeepEqual(errs, []string{"1 doc_ids " + ErrNull.Error()}) {
		t.Errorf("doc-id list: offsets %v, %d values, errors %q", offs, vals.Len(), errs)
	}

	texts := ree([]int32{1, 2}, "what is a run", nil, 2, 0)
	defer texts.Release()
	errs = nil
	out, err := copyNullableStrings(texts, FieldQuery, at(&errs))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out.Len() != 2 || out.IsNull(0) || out.Value(0) != "what is a run" || !out.IsNull(1) || len(errs) != 0 {
		t.Errorf("texts: %v, errors %q", out, errs)
	}

	keys := NewStrings(2, 0)
	keys.Append("category")
	keys.Append("difficulty")
	items := ree([]int32{1, 2}, "billing", nil, 2, 0)
	defer items.Release()
	entries := array.NewData(arrow.StructOf(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "value", Type: items.DataType(), Nullable: true}), 2, []*memory.Buffer{nil},
		[]arrow.ArrayData{keys.Array().Data(), items.Data()}, 0, 0)
	defer entries.Release()
	md := array.NewData(arrow.MapOf(arrow.BinaryTypes.String, items.DataType()), 1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 2}))}, []arrow.ArrayData{entries}, 0, 0)
	defer md.Release()
	m := array.NewMapData(md)
	rec := NewRecord(arrow.NewSchema([]arrow.Field{{Name: FieldTags, Type: m.DataType()}}, nil), []arrow.Array{m}, 1)
	defer rec.Release()
	errs = nil
	tags, err := copyTags(rec, 1, at(&errs))
	if err != nil {
		t.Fatal(err)
	}
	defer tags.Release()
	k, v := tags.Keys().(*array.String), tags.Items().(*array.String)
	if k.Len() != 1 || k.Value(0) != "category" || v.Value(0) != "billing" || len(errs) != 0 {
		t.Errorf("tags: keys %v, values %v, errors %q; want category=billing alone", k, v, errs)
	}
}

// TestExpansionReadColumnsOnly: checkExpansion looks at the columns the
// readers read; a file may carry others (passages, embeddings) of any
// size.
func TestExpansionReadColumnsOnly(t *testing.T) {
	text := array.NewLargeStringBuilder(memory.DefaultAllocator)
	defer text.Release()
	text.Append(strings.Repeat("p", 1000))
	passages := text.NewArray()
	defer passages.Release()
	ids := NewStrings(1, 0)
	ids.Append("q1")
	qid := ids.Array()
	defer qid.Release()
	for _, tc := range []struct {
		name string
		want string
	}{{"passage", ""}, {FieldQuery, "more than 800 bytes"}} {
		rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: FieldQueryID, Type: qid.DataType()},
			{Name: tc.name, Type: passages.DataType()}}, nil), []arrow.Array{qid, passages}, 1)
		err := checkExpansion(rec, 800)
		rec.Release()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("a column %q of 1000 bytes, limit 800: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestListViewsRefused: a list view's rows may each hold all its values,
// so doc-id lists of that type are refused by type, not copied.
func TestListViewsRefused(t *testing.T) {
	vals := ree([]int32{1000}, "d", 1000, 0)
	defer vals.Release()
	lv := array.MakeFromData(array.NewData(arrow.ListViewOf(vals.DataType()), 3, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 0, 0})),
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{1000, 1000, 1000}))}, []arrow.ArrayData{vals.Data()}, 0, 0))
	defer lv.Release()
	_, _, err := copyStringList(lv, FieldDocIDs, func(int, string, error) {})
	if !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("list view of doc ids: %v, want %v", err, ErrTypeMismatch)
	}
}
