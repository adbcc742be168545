package schema

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

var columnarFormats = []struct {
	format Format
	ext    string
}{
	{FormatArrow, ".arrow"},
	{FormatArrowStream, ".arrows"},
	{FormatParquet, ".parquet"},
}

// recordsFromJSON builds one record per JSON array of row objects.
func recordsFromJSON(t testing.TB, mem memory.Allocator, s *arrow.Schema, batches ...string) []arrow.Record {
	t.Helper()
	var recs []arrow.Record
	for _, b := range batches {
		rec, _, err := array.RecordFromJSON(mem, s, strings.NewReader(b))
		if err != nil {
			t.Fatalf("record from %s: %v", b, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// writeAll writes recs with w and closes it.
func writeAll(t testing.TB, w interface {
	Write(arrow.Record) error
	Close() error
}, recs ...arrow.Record) {
	t.Helper()
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// encode writes recs (of schema s) in format and returns the bytes.
func encode(t testing.TB, format Format, s *arrow.Schema, recs []arrow.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewRecordWriter(&buf, format, s)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, recs...)
	return buf.Bytes()
}

// writeColumnar writes recs to dir/name in format.
func writeColumnar(t testing.TB, dir, name string, format Format, s *arrow.Schema, recs []arrow.Record) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewRecordWriter(f, format, s)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, recs...)
	return p
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// roundTrip writes the batches in every columnar format, reads them back
// with a checked allocator and returns what was read per format.
func roundTrip(t *testing.T, role Role, s *arrow.Schema, batches ...string) map[Format]*contents {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs := recordsFromJSON(t, mem, s, batches...)
	defer release(recs)
	out := map[Format]*contents{}
	dir := t.TempDir()
	for _, cf := range columnarFormats {
		// By extension, and by content under a name that says nothing.
		p1 := writeColumnar(t, dir, "in"+cf.ext, cf.format, s, recs)
		p2 := writeColumnar(t, dir, "in-"+cf.ext[1:]+".bin", cf.format, s, recs)
		readMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		c1 := mustRead(t, p1, role, Options{Allocator: readMem})
		c2 := mustRead(t, p2, role, Options{Allocator: readMem, Format: cf.format})
		c3 := mustRead(t, p2, role, Options{Allocator: readMem})
		readMem.AssertSize(t, 0)
		c1.Batches, c2.Batches, c3.Batches = 0, 0, 0
		equal(t, "explicit format", c2, c1)
		equal(t, "detected by content", c3, c1)
		out[cf.format] = c1
	}
	return out
}

func TestRoundTripGoldLong(t *testing.T) {
	got := roundTrip(t, RoleGold, GoldLong(),
		`[{"query_id": "q1", "doc_id": "d1", "grade": 2}, {"query_id": "q1", "doc_id": "msmarco_v2.1_doc_50_2286987788#13_3087841662", "grade": 0}]`,
		`[{"query_id": "q2", "doc_id": "dé", "grade": -1}]`)
	for f, c := range got {
		if c.Form != FormGoldLong {
			t.Errorf("%v: form %v", f, c.Form)
		}
		equal(t, f.String(), c.GoldLong, []goldLongRow{
			{"q1", "d1", 2, 1}, {"q1", "msmarco_v2.1_doc_50_2286987788#13_3087841662", 0, 2}, {"q2", "dé", -1, 3},
		})
	}
}

func TestRoundTripRunLong(t *testing.T) {
	got := roundTrip(t, RoleRun, RunLong(),
		`[{"query_id": "q1", "doc_id": "d1", "score": 2.5, "rank": 1}, {"query_id": "q1", "doc_id": "d2", "score": -1e-300, "rank": null}]`,
		`[{"query_id": "q2", "doc_id": "d3", "score": 0, "rank": 7}]`)
	for f, c := range got {
		if c.Form != FormRunLong {
			t.Errorf("%v: form %v", f, c.Form)
		}
		equal(t, f.String(), c.RunLong, []runLongRow{
			{"q1", "d1", 2.5, 1, true, 1}, {"q1", "d2", -1e-300, 0, false, 2}, {"q2", "d3", 0, 7, true, 3},
		})
	}
}

func TestRoundTripGoldList(t *testing.T) {
	got := roundTrip(t, RoleGold, GoldList(),
		`[{"query_id": "q1", "query": "what", "doc_ids": ["d1", "d2"], "grades": [2, 0],
		   "tags": [{"key": "category", "value": "policy"}, {"key": "lang", "value": "en"}, {"key": "lang", "value": "de"}]},
		  {"query_id": "q2", "query": null, "doc_ids": [], "grades": [], "tags": null}]`,
		`[{"query_id": "q3", "query": "", "doc_ids": ["x#1"], "grades": [-1], "tags": []}]`)
	for f, c := range got {
		if c.Form != FormGoldList {
			t.Errorf("%v: form %v", f, c.Form)
		}
		equal(t, f.String(), c.GoldList, []goldListRow{
			{QID: "q1", Query: "what", HasText: true, Docs: []string{"d1", "d2"}, Grades: []int32{2, 0},
				Tags: []string{"category=policy", "lang=en", "lang=de"}, Pos: 1},
			{QID: "q2", Docs: []string{}, Grades: []int32{}, Tags: []string{}, Pos: 2},
			{QID: "q3", Query: "", HasText: true, Docs: []string{"x#1"}, Grades: []int32{-1}, Tags: []string{}, Pos: 3},
		})
	}
}

func TestRoundTripRunList(t *testing.T) {
	got := roundTrip(t, RoleRun, RunList(),
		`[{"query_id": "q1", "doc_ids": ["d3", "d1"], "scores": [1.5, 0.5]}, {"query_id": "q2", "doc_ids": ["x"], "scores": null}]`,
		`[{"query_id": "q3", "doc_ids": [], "scores": []}, {"query_id": "q4", "doc_ids": ["a", "b", "c"], "scores": [3, 2, 1]}]`)
	for f, c := range got {
		if c.Form != FormRunList {
			t.Errorf("%v: form %v", f, c.Form)
		}
		equal(t, f.String(), c.RunList, []runListRow{
			{QID: "q1", Docs: []string{"d3", "d1"}, Scores: []float64{1.5, 0.5}, Pos: 1},
			{QID: "q2", Docs: []string{"x"}, ScoresNull: true, Pos: 2},
			{QID: "q3", Docs: []string{}, Scores: []float64{}, Pos: 3},
			{QID: "q4", Docs: []string{"a", "b", "c"}, Scores: []float64{3, 2, 1}, Pos: 4},
		})
	}
}

// TestRoundTripFromText converts text inputs to every columnar format
// through the reader's own batches and checks that nothing changes.
func TestRoundTripFromText(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, in string
		role     Role
	}{
		{"g.qrels", "q1 0 d1 1\nq1 0 d2 0\nq2 0 d#3 2\n", RoleGold},
		{"r.run", "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 x 1.5 t\n", RoleRun},
		{"g.jsonl", `{"qid": "q1", "query": "x", "relevance_map": {"a": 1, "b": 2}, "category": "c"}` + "\n" + `{"qid": "q2", "relevant_ids": []}` + "\n", RoleGold},
		{"r.jsonl", `{"qid": "q1", "retrieved_ids": ["a", "b"]}` + "\n" + `{"qid": "q2", "retrieved_ids": [{"id": "c", "score": 1}]}` + "\n", RoleRun},
	} {
		src := writeFile(t, dir, tc.name, tc.in)
		want := mustRead(t, src, tc.role, Options{})
		want.Batches = 0
		for _, cf := range columnarFormats {
			r, err := Open(t.Context(), src, tc.role, Options{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Next(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			p := writeColumnar(t, dir, tc.name+cf.ext, cf.format, b.Record.Schema(), []arrow.Record{b.Record})
			b.Release()
			r.Close()
			got := mustRead(t, p, tc.role, Options{})
			got.Batches = 0
			// Text rows carry line numbers, columnar rows row numbers;
			// here they coincide except where the text has comments.
			equal(t, tc.name+" as "+cf.format.String(), got, want)
		}
	}
}

// TestColumnarForeignTypes reads files whose columns have other names and
// types than the canonical schemas; they are normalized.
func TestColumnarForeignTypes(t *testing.T) {
	// Not a checked allocator: building dictionary arrays from JSON leaks
	// in Arrow itself (array.GetDictArrayData).
	mem := memory.NewGoAllocator()
	dir := t.TempDir()
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	for _, tc := range []struct {
		name   string
		role   Role
		fields []arrow.Field
		rows   string
		check  func(t *testing.T, c *contents)
		noPQ   bool // Parquet cannot hold the types
	}{
		{"gold long qid large_utf8 relevance int64", RoleGold, []arrow.Field{
			{Name: "qid", Type: arrow.BinaryTypes.LargeString},
			{Name: "doc_id", Type: arrow.BinaryTypes.LargeString},
			{Name: "relevance", Type: arrow.PrimitiveTypes.Int64},
			{Name: "extra", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		}, `[{"qid": "q1", "doc_id": "d1", "relevance": 3, "extra": 1}, {"qid": "q1", "doc_id": "d2", "relevance": 0, "extra": null}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.GoldLong, []goldLongRow{{"q1", "d1", 3, 1}, {"q1", "d2", 0, 2}})
			}, false},
		{"gold long rel uint8 and float grades", RoleGold, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.String},
			{Name: "doc_id", Type: arrow.BinaryTypes.String},
			{Name: "rel", Type: arrow.PrimitiveTypes.Float64},
		}, `[{"query_id": "q1", "doc_id": "d1", "rel": 2.0}, {"query_id": "q1", "doc_id": "d2", "rel": -1}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.GoldLong, []goldLongRow{{"q1", "d1", 2, 1}, {"q1", "d2", -1, 2}})
			}, false},
		{"gold long dictionary ids", RoleGold, []arrow.Field{
			{Name: "query_id", Type: dict},
			{Name: "doc_id", Type: arrow.BinaryTypes.String},
			{Name: "grade", Type: arrow.PrimitiveTypes.Int16},
		}, `[{"query_id": "q1", "doc_id": "d1", "grade": 1}, {"query_id": "q2", "doc_id": "d2", "grade": 2}, {"query_id": "q1", "doc_id": "d3", "grade": 3}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.GoldLong, []goldLongRow{{"q1", "d1", 1, 1}, {"q2", "d2", 2, 2}, {"q1", "d3", 3, 3}})
			}, false},
		{"run long float32 score uint16 rank binary doc", RoleRun, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.String},
			{Name: "doc_id", Type: arrow.BinaryTypes.Binary},
			{Name: "score", Type: arrow.PrimitiveTypes.Float32},
			{Name: "rank", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		}, `[{"query_id": "q1", "doc_id": "ZDE=", "score": 0.5, "rank": 1}, {"query_id": "q1", "doc_id": "ZDI=", "score": 0.25, "rank": null}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.RunLong, []runLongRow{{"q1", "d1", 0.5, 1, true, 1}, {"q1", "d2", 0.25, 0, false, 2}})
			}, false},
		{"run long string_view ids as polars writes them", RoleRun, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.StringView},
			{Name: "doc_id", Type: arrow.BinaryTypes.StringView},
			{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		}, `[{"query_id": "q1", "doc_id": "d1", "score": 0.5}, {"query_id": "q1", "doc_id": "a-doc-id-longer-than-twelve-bytes", "score": 0.25}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.RunLong, []runLongRow{{"q1", "d1", 0.5, 0, false, 1}, {"q1", "a-doc-id-longer-than-twelve-bytes", 0.25, 0, false, 2}})
			}, true},
		{"gold long binary_view ids", RoleGold, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.BinaryView},
			{Name: "doc_id", Type: arrow.BinaryTypes.StringView},
			{Name: "grade", Type: arrow.PrimitiveTypes.Int32},
		}, `[{"query_id": "cTE=", "doc_id": "d1", "grade": 2}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.GoldLong, []goldLongRow{{"q1", "d1", 2, 1}})
			}, true},
		{"run long int score no rank", RoleRun, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.String},
			{Name: "doc_id", Type: arrow.BinaryTypes.String},
			{Name: "score", Type: arrow.PrimitiveTypes.Int64},
		}, `[{"query_id": "q1", "doc_id": "d1", "score": 10}, {"query_id": "q1", "doc_id": "d2", "score": -3}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.RunLong, []runLongRow{{"q1", "d1", 10, 0, false, 1}, {"q1", "d2", -3, 0, false, 2}})
			}, false},
		{"gold list binary relevance large lists", RoleGold, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.String},
			{Name: "doc_ids", Type: arrow.LargeListOf(arrow.BinaryTypes.LargeString)},
		}, `[{"query_id": "q1", "doc_ids": ["a", "b"]}, {"query_id": "q2", "doc_ids": []}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.GoldList, []goldListRow{
					{QID: "q1", Docs: []string{"a", "b"}, Grades: []int32{1, 1}, Tags: []string{}, Pos: 1},
					{QID: "q2", Docs: []string{}, Grades: []int32{}, Tags: []string{}, Pos: 2},
				})
			}, true},
		{"gold list int8 grades", RoleGold, []arrow.Field{
			{Name: "qid", Type: arrow.BinaryTypes.String},
			{Name: "query", Type: arrow.BinaryTypes.LargeString, Nullable: true},
			{Name: "doc_ids", Type: arrow.ListOf(arrow.BinaryTypes.String)},
			{Name: "grades", Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)},
		}, `[{"qid": "q1", "query": "x", "doc_ids": ["a", "b"], "grades": [3, -2]}, {"qid": "q2", "query": null, "doc_ids": ["c"], "grades": [0]}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.GoldList, []goldListRow{
					{QID: "q1", Query: "x", HasText: true, Docs: []string{"a", "b"}, Grades: []int32{3, -2}, Tags: []string{}, Pos: 1},
					{QID: "q2", Docs: []string{"c"}, Grades: []int32{0}, Tags: []string{}, Pos: 2},
				})
			}, false},
		{"run list float32 scores", RoleRun, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.String},
			{Name: "doc_ids", Type: arrow.ListOf(arrow.BinaryTypes.String)},
			{Name: "scores", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
		}, `[{"query_id": "q1", "doc_ids": ["a", "b"], "scores": [2, 1]}, {"query_id": "q2", "doc_ids": ["c"], "scores": null}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.RunList, []runListRow{
					{QID: "q1", Docs: []string{"a", "b"}, Scores: []float64{2, 1}, Pos: 1},
					{QID: "q2", Docs: []string{"c"}, ScoresNull: true, Pos: 2},
				})
			}, true},
		{"run list without scores", RoleRun, []arrow.Field{
			{Name: "query_id", Type: arrow.BinaryTypes.String},
			{Name: "doc_ids", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		}, `[{"query_id": "q1", "doc_ids": ["a", "b"]}]`,
			func(t *testing.T, c *contents) {
				equal(t, "rows", c.RunList, []runListRow{{QID: "q1", Docs: []string{"a", "b"}, ScoresNull: true, Pos: 1}})
			}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := arrow.NewSchema(tc.fields, nil)
			recs := recordsFromJSON(t, mem, s, tc.rows)
			defer release(recs)
			for _, cf := range columnarFormats {
				if tc.noPQ && cf.format == FormatParquet {
					continue
				}
				t.Run(cf.format.String(), func(t *testing.T) {
					p := writeColumnar(t, dir, strings.ReplaceAll(tc.name, " ", "_")+cf.ext, cf.format, s, recs)
					readMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					c := mustRead(t, p, tc.role, Options{Allocator: readMem})
					if !strings.Contains(tc.name, "dictionary") {
						// Reading dictionaries from an IPC file leaks
						// inside Arrow (ipc.fileBlock.NewMessage).
						readMem.AssertSize(t, 0)
					}
					tc.check(t, c)
				})
			}
		})
	}
}

// columnarCase is a columnar file (one record per JSON batch) that must
// give the errors want.
type columnarCase struct {
	name    string
	role    Role
	fields  []arrow.Field
	batches []string
	want    []wantErr
}

var (
	fQueryID = arrow.Field{Name: "query_id", Type: arrow.BinaryTypes.String, Nullable: true}
	fDocID   = arrow.Field{Name: "doc_id", Type: arrow.BinaryTypes.String, Nullable: true}
	fGrade   = arrow.Field{Name: "grade", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	fScore   = arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true}
	fRank    = arrow.Field{Name: "rank", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	fDocIDs  = arrow.Field{Name: "doc_ids", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}
	fGrades  = arrow.Field{Name: "grades", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}
	fScores  = arrow.Field{Name: "scores", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true}
	fTags    = arrow.Field{Name: "tags", Type: TagsType, Nullable: true}
	fWeight  = arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float64, Nullable: true} // neither a grade nor a score
)

func TestColumnarErrors(t *testing.T) {
	goldLong := []arrow.Field{fQueryID, fDocID, fGrade}
	runLong := []arrow.Field{fQueryID, fDocID, fScore, fRank}
	cases := []columnarCase{
		{"null query_id", RoleGold, goldLong, []string{`[{"query_id": "q1", "doc_id": "d1", "grade": 1}, {"query_id": null, "doc_id": "d2", "grade": 1}]`},
			[]wantErr{{Row: 2, Field: "query_id", Is: ErrNull}}},
		{"empty query_id", RoleRun, runLong, []string{`[{"query_id": "", "doc_id": "d1", "score": 1, "rank": 1}]`},
			[]wantErr{{Row: 1, Field: "query_id", Is: ErrEmptyID}}},
		{"empty doc_id", RoleGold, goldLong, []string{`[{"query_id": "q1", "doc_id": "d1", "grade": 1}, {"query_id": "q1", "doc_id": "", "grade": 1}]`},
			[]wantErr{{Row: 2, Field: "doc_id", Is: ErrEmptyID}}},
		{"null doc_id", RoleRun, runLong, []string{`[{"query_id": "q1", "doc_id": null, "score": 1, "rank": 1}]`},
			[]wantErr{{Row: 1, Field: "doc_id", Is: ErrNull}}},
		{"invalid utf8 doc_id", RoleGold, []arrow.Field{fQueryID, {Name: "doc_id", Type: arrow.BinaryTypes.Binary}, fGrade},
			[]string{`[{"query_id": "q1", "doc_id": "ZP8=", "grade": 1}]`},
			[]wantErr{{Row: 1, Field: "doc_id", Is: ErrInvalidUTF8}}},
		{"null grade", RoleGold, goldLong, []string{`[{"query_id": "q1", "doc_id": "d1", "grade": null}]`},
			[]wantErr{{Row: 1, Field: "grade", Is: ErrNull}}},
		{"fractional grade", RoleGold, []arrow.Field{fQueryID, fDocID, {Name: "grade", Type: arrow.PrimitiveTypes.Float64}},
			[]string{`[{"query_id": "q1", "doc_id": "d1", "grade": 1}, {"query_id": "q1", "doc_id": "d2", "grade": 1.5}]`},
			[]wantErr{{Row: 2, Field: "grade", Is: ErrNumber}}},
		{"grade beyond int32", RoleGold, []arrow.Field{fQueryID, fDocID, {Name: "relevance", Type: arrow.PrimitiveTypes.Int64}},
			[]string{`[{"query_id": "q1", "doc_id": "d1", "relevance": 3000000000}]`},
			[]wantErr{{Row: 1, Field: "grade", Is: ErrNumber}}},
		{"NaN score", RoleRun, runLong, []string{`[{"query_id": "q1", "doc_id": "d1", "score": 1, "rank": 1}, {"query_id": "q1", "doc_id": "d2", "score": "NaN", "rank": 2}]`},
			[]wantErr{{Row: 2, Field: "score", Is: ErrNotFinite}}},
		{"infinite score", RoleRun, runLong, []string{`[{"query_id": "q1", "doc_id": "d1", "score": "-Inf", "rank": 1}]`},
			[]wantErr{{Row: 1, Field: "score", Is: ErrNotFinite}}},
		{"infinite float32 score", RoleRun, []arrow.Field{fQueryID, fDocID, {Name: "score", Type: arrow.PrimitiveTypes.Float32}},
			[]string{`[{"query_id": "q1", "doc_id": "d1", "score": "Inf"}]`},
			[]wantErr{{Row: 1, Field: "score", Is: ErrNotFinite}}},
		{"null score", RoleRun, runLong, []string{`[{"query_id": "q1", "doc_id": "d1", "score": null, "rank": 1}]`},
			[]wantErr{{Row: 1, Field: "score", Is: ErrNull}}},
		{"fractional rank", RoleRun, []arrow.Field{fQueryID, fDocID, fScore, {Name: "rank", Type: arrow.PrimitiveTypes.Float32}},
			[]string{`[{"query_id": "q1", "doc_id": "d1", "score": 1, "rank": 1.5}]`},
			[]wantErr{{Row: 1, Field: "rank", Is: ErrNumber}}},
		{"missing doc_id column", RoleGold, []arrow.Field{fQueryID, fGrade}, []string{`[{"query_id": "q1", "grade": 1}]`},
			[]wantErr{{Row: 1, Is: ErrMissingColumn, Has: "doc_id or doc_ids (the file has [query_id grade])"}}},
		{"missing query_id column", RoleRun, []arrow.Field{fDocID, fScore}, []string{`[{"doc_id": "d1", "score": 1}]`},
			[]wantErr{{Row: 1, Is: ErrMissingColumn, Has: "query_id (the file has [doc_id score])"}}},
		{"missing grade column", RoleGold, []arrow.Field{fQueryID, fDocID, fWeight}, []string{`[{"query_id": "q1", "doc_id": "d1", "weight": 1}]`},
			[]wantErr{{Row: 1, Is: ErrMissingColumn, Has: "grade (the file has [query_id doc_id weight])"}}},
		{"missing score column", RoleRun, []arrow.Field{fQueryID, fDocID, fWeight}, []string{`[{"query_id": "q1", "doc_id": "d1", "weight": 1}]`},
			[]wantErr{{Row: 1, Is: ErrMissingColumn, Has: "score (the file has [query_id doc_id weight])"}}},
		{"doc_id int64", RoleGold, []arrow.Field{fQueryID, {Name: "doc_id", Type: arrow.PrimitiveTypes.Int64}, fGrade},
			[]string{`[{"query_id": "q1", "doc_id": 5, "grade": 1}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "column doc_id: wrong type: want utf8, got int64"}}},
		{"query_id float", RoleGold, []arrow.Field{{Name: "query_id", Type: arrow.PrimitiveTypes.Float64}, fDocID, fGrade},
			[]string{`[{"query_id": 1, "doc_id": "d", "grade": 1}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch}}},
		{"score utf8", RoleRun, []arrow.Field{fQueryID, fDocID, {Name: "score", Type: arrow.BinaryTypes.String}},
			[]string{`[{"query_id": "q1", "doc_id": "d1", "score": "1.5"}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "column score"}}},
		{"grade utf8", RoleGold, []arrow.Field{fQueryID, fDocID, {Name: "grade", Type: arrow.BinaryTypes.String}},
			[]string{`[{"query_id": "q1", "doc_id": "d1", "grade": "1"}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "column grade"}}},
		{"rank bool", RoleRun, []arrow.Field{fQueryID, fDocID, fScore, {Name: "rank", Type: arrow.FixedWidthTypes.Boolean}},
			[]string{`[{"query_id": "q1", "doc_id": "d1", "score": 1, "rank": true}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "column rank"}}},
		{"doc_ids not a list", RoleGold, []arrow.Field{fQueryID, {Name: "doc_ids", Type: arrow.BinaryTypes.String}},
			[]string{`[{"query_id": "q1", "doc_ids": "d1"}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "want list<utf8>"}}},
		{"doc_ids of ints", RoleRun, []arrow.Field{fQueryID, {Name: "doc_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}},
			[]string{`[{"query_id": "q1", "doc_ids": [1, 2]}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch}}},
		{"grades not a list", RoleGold, []arrow.Field{fQueryID, fDocIDs, {Name: "grades", Type: arrow.PrimitiveTypes.Int32}},
			[]string{`[{"query_id": "q1", "doc_ids": ["d1"], "grades": 1}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "want list<int>"}}},
		{"scores not a list", RoleRun, []arrow.Field{fQueryID, fDocIDs, {Name: "scores", Type: arrow.PrimitiveTypes.Float64}},
			[]string{`[{"query_id": "q1", "doc_ids": ["d1"], "scores": 1}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "want list<float>"}}},
		{"tags not a map", RoleGold, []arrow.Field{fQueryID, fDocIDs, {Name: "tags", Type: arrow.BinaryTypes.String}},
			[]string{`[{"query_id": "q1", "doc_ids": ["d1"], "tags": "a=b"}]`},
			[]wantErr{{Row: 1, Is: ErrTypeMismatch, Has: "want map<utf8,utf8>"}}},
		{"empty doc id in list", RoleGold, []arrow.Field{fQueryID, fDocIDs},
			[]string{`[{"query_id": "q1", "doc_ids": ["a", "b", "c"]}, {"query_id": "q2", "doc_ids": ["d", ""]}]`},
			[]wantErr{{Row: 2, Field: "doc_ids", Is: ErrEmptyID}}},
		{"null doc id in list", RoleRun, []arrow.Field{fQueryID, fDocIDs},
			[]string{`[{"query_id": "q1", "doc_ids": ["a", null]}]`},
			[]wantErr{{Row: 1, Field: "doc_ids", Is: ErrNull}}},
		{"null doc list", RoleGold, []arrow.Field{fQueryID, fDocIDs},
			[]string{`[{"query_id": "q1", "doc_ids": ["a"]}, {"query_id": "q2", "doc_ids": null}]`},
			[]wantErr{{Row: 2, Field: "doc_ids", Is: ErrNull}}},
		{"grade count mismatch", RoleGold, []arrow.Field{fQueryID, fDocIDs, fGrades},
			[]string{`[{"query_id": "q1", "doc_ids": ["a", "b"], "grades": [1, 2]}, {"query_id": "q2", "doc_ids": ["a", "b"], "grades": [1]}]`},
			[]wantErr{{Row: 2, Field: "grades", Is: ErrTypeMismatch, Has: "1 grades for 2 doc_ids"}}},
		{"null grade list", RoleGold, []arrow.Field{fQueryID, fDocIDs, fGrades},
			[]string{`[{"query_id": "q1", "doc_ids": [], "grades": null}]`},
			[]wantErr{{Row: 1, Field: "grades", Is: ErrTypeMismatch}}},
		{"null grade in list", RoleGold, []arrow.Field{fQueryID, fDocIDs, fGrades},
			[]string{`[{"query_id": "q1", "doc_ids": ["a", "b", "c"], "grades": [1, 1, 1]}, {"query_id": "q2", "doc_ids": ["a", "b"], "grades": [1, null]}]`},
			[]wantErr{{Row: 2, Field: "grades", Is: ErrNull}}},
		{"fractional grade in list", RoleGold, []arrow.Field{fQueryID, fDocIDs, {Name: "grades", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)}},
			[]string{`[{"query_id": "q1", "doc_ids": ["a", "b", "c"], "grades": [1, 1, 1]}, {"query_id": "q2", "doc_ids": ["a", "b"], "grades": [1, 0.5]}]`},
			[]wantErr{{Row: 2, Field: "grades", Is: ErrNumber}}},
		{"NaN score in list", RoleRun, []arrow.Field{fQueryID, fDocIDs, fScores},
			[]string{`[{"query_id": "q1", "doc_ids": ["a", "b", "c"], "scores": [3, 2, 1]}, {"query_id": "q2", "doc_ids": ["a", "b"], "scores": [1, "NaN"]}]`},
			[]wantErr{{Row: 2, Field: "scores", Is: ErrNotFinite}}},
		{"score count mismatch", RoleRun, []arrow.Field{fQueryID, fDocIDs, fScores},
			[]string{`[{"query_id": "q1", "doc_ids": ["a", "b"], "scores": [1, 2, 3]}]`},
			[]wantErr{{Row: 1, Field: "scores", Is: ErrTypeMismatch, Has: "3 scores for 2 doc_ids"}}},
		{"tag name with =", RoleGold, []arrow.Field{fQueryID, fDocIDs, fTags},
			[]string{`[{"query_id": "q1", "doc_ids": ["a"], "tags": [{"key": "a", "value": "1"}]}, {"query_id": "q2", "doc_ids": ["a"], "tags": [{"key": "a=b", "value": "1"}]}]`},
			[]wantErr{{Row: 2, Field: "tags", Is: ErrTypeMismatch}}},
		{"errors across batches in order", RoleRun, runLong, []string{
			`[{"query_id": "q1", "doc_id": "d1", "score": 1, "rank": 1}, {"query_id": "q1", "doc_id": "", "score": 1, "rank": 2}, {"query_id": "q1", "doc_id": "d3", "score": 1, "rank": 3}]`,
			`[{"query_id": "q2", "doc_id": "d1", "score": 1, "rank": 1}, {"query_id": null, "doc_id": "d2", "score": "Inf", "rank": 2}]`},
			[]wantErr{{Row: 2, Field: "doc_id", Is: ErrEmptyID}, {Row: 5, Field: "query_id", Is: ErrNull}, {Row: 5, Field: "score", Is: ErrNotFinite}}},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := arrow.NewSchema(tc.fields, nil)
			recs := recordsFromJSON(t, mem, s, tc.batches...)
			defer release(recs)
			for _, cf := range columnarFormats {
				p := writeColumnar(t, dir, fmt.Sprintf("case%d%s", i, cf.ext), cf.format, s, recs)
				readMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				c, err := readFile(t, p, tc.role, Options{Allocator: readMem})
				checkErrors(t, err, p, tc.want)
				if c != nil && c.rows() != 0 && tc.want[0].Row == 1 {
					t.Errorf("%v: %d rows before the error", cf.format, c.rows())
				}
				readMem.AssertSize(t, 0)
			}
		})
	}
}

// TestColumnarWrongRole checks that an Arrow or Parquet file opened as the
// other role is refused by Open, from its schema alone (even with no rows),
// naming the file and what it holds; and that files whose schema does not
// tell are read in either role, as before.
func TestColumnarWrongRole(t *testing.T) {
	form := func(f Form) *arrow.Metadata {
		m := arrow.NewMetadata([]string{MetaForm}, []string{f.String()})
		return &m
	}
	qidRel := arrow.Field{Name: "qid", Type: arrow.BinaryTypes.String}
	fRel := arrow.Field{Name: "relevance", Type: arrow.PrimitiveTypes.Int64}
	annotated := []arrow.Field{fQueryID, fDocID, fScore, fGrade}
	for _, tc := range []struct {
		name   string
		role   Role // the role the file is opened as
		schema *arrow.Schema
		rows   string // "" for a file without records
		has    string // "" when the file must read in this role
	}{
		{"run list as gold", RoleGold, RunList(), `[{"query_id": "q1", "doc_ids": ["d1", "d2"], "scores": [2, 1]}]`,
			"this is a run file (columns query_id, doc_ids, scores): pass the file as the run"},
		{"run list without metadata as gold", RoleGold, arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs, fScores}, nil),
			`[{"query_id": "q1", "doc_ids": ["d1"], "scores": null}]`, "this is a run file"},
		{"run long as gold", RoleGold, RunLong(), `[{"query_id": "q1", "doc_id": "d1", "score": 1, "rank": 1}]`,
			"this is a run file (columns query_id, doc_id, score, rank): pass the file as the run"},
		{"run long with ranks only as gold", RoleGold, arrow.NewSchema([]arrow.Field{fQueryID, fDocID, fRank}, nil),
			`[{"query_id": "q1", "doc_id": "d1", "rank": 1}]`, "this is a run file"},
		{"empty run as gold", RoleGold, RunList(), "", "this is a run file"},
		{"gold list as run", RoleRun, GoldList(), `[{"query_id": "q1", "query": "x", "doc_ids": ["d1"], "grades": [1], "tags": null}]`,
			"this is a gold file (columns query_id, query, doc_ids, grades, tags): pass the file as the gold set"},
		{"gold long as run", RoleRun, GoldLong(), `[{"query_id": "q1", "doc_id": "d1", "grade": 1}]`,
			"this is a gold file (columns query_id, doc_id, grade): pass the file as the gold set"},
		{"gold long with relevance as run", RoleRun, arrow.NewSchema([]arrow.Field{qidRel, fDocID, fRel}, nil),
			`[{"qid": "q1", "doc_id": "d1", "relevance": 2}]`, "this is a gold file (columns qid, doc_id, relevance)"},
		{"empty gold as run", RoleRun, GoldLong(), "", "this is a gold file"},
		{"doc list with gold form as run", RoleRun, arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs}, form(FormGoldList)),
			`[{"query_id": "q1", "doc_ids": ["d1"]}]`, "this is a gold file (evalgate.form gold-list, columns query_id, doc_ids)"},
		{"doc list with run form as gold", RoleGold, arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs}, form(FormRunList)),
			`[{"query_id": "q1", "doc_ids": ["d1"]}]`, "this is a run file (evalgate.form run-list, columns query_id, doc_ids)"},
		{"grades and scores with run form as gold", RoleGold, arrow.NewSchema(annotated, form(FormRunLong)),
			`[{"query_id": "q1", "doc_id": "d1", "score": 1, "grade": 1}]`, "this is a run file (evalgate.form run-long"},

		// Schemas that do not tell: read in either role.
		{"doc list as gold", RoleGold, arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs}, nil), `[{"query_id": "q1", "doc_ids": ["d1"]}]`, ""},
		{"doc list as run", RoleRun, arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs}, nil), `[{"query_id": "q1", "doc_ids": ["d1"]}]`, ""},
		{"grades and scores as gold", RoleGold, arrow.NewSchema(annotated, nil), `[{"query_id": "q1", "doc_id": "d1", "score": 1, "grade": 1}]`, ""},
		{"grades and scores as run", RoleRun, arrow.NewSchema(annotated, nil), `[{"query_id": "q1", "doc_id": "d1", "score": 1, "grade": 1}]`, ""},
		{"doc list with unknown form as run", RoleRun, arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs}, form(FormShardBatch)),
			`[{"query_id": "q1", "doc_ids": ["d1"]}]`, ""},
		// And the right role, of course.
		{"run list as run", RoleRun, RunList(), `[{"query_id": "q1", "doc_ids": ["d1"], "scores": [1]}]`, ""},
		{"gold list as gold", RoleGold, GoldList(), `[{"query_id": "q1", "query": null, "doc_ids": ["d1"], "grades": [1], "tags": null}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var recs []arrow.Record
			if tc.rows != "" {
				recs = recordsFromJSON(t, mem, tc.schema, tc.rows)
				defer release(recs)
			}
			dir := t.TempDir()
			for _, cf := range columnarFormats {
				p := writeColumnar(t, dir, "in"+cf.ext, cf.format, tc.schema, recs)
				readMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				r, err := Open(t.Context(), p, tc.role, Options{Allocator: readMem})
				if tc.has == "" {
					if err != nil {
						t.Fatalf("%v: %v", cf.format, err)
					}
					if _, err := drain(t, r); err != nil {
						t.Errorf("%v: %v", cf.format, err)
					}
				} else {
					if err == nil {
						r.Close()
						t.Fatalf("%v: Open accepted the file as %v", cf.format, tc.role)
					}
					checkErrors(t, err, p, []wantErr{{Is: ErrWrongFileRole, Has: tc.has}})
				}
				readMem.AssertSize(t, 0)
			}
		})
	}
}

// TestColumnarInvalidUTF8 writes utf8 columns holding invalid UTF-8 (the
// writers do not check).
func TestColumnarInvalidUTF8(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs, fTags}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	qb := b.Field(0).(*array.StringBuilder)
	lb := b.Field(1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	mb := b.Field(2).(*array.MapBuilder)
	kb := mb.KeyBuilder().(*array.StringBuilder)
	ib := mb.ItemBuilder().(*array.StringBuilder)
	for _, row := range []struct{ q, d, k, v string }{
		{"q1", "ok", "a", "b"},
		{"q\xff", "ok", "a", "b"},
		{"q3", "bad\xc3", "a", "b"},
		{"q4", "ok", "a", "\xfe"},
	} {
		qb.Append(row.q)
		lb.Append(true)
		vb.Append(row.d)
		mb.Append(true)
		kb.Append(row.k)
		ib.Append(row.v)
	}
	rec := b.NewRecord()
	defer rec.Release()
	dir := t.TempDir()
	for _, cf := range columnarFormats {
		p := writeColumnar(t, dir, "utf8"+cf.ext, cf.format, s, []arrow.Record{rec})
		_, err := readFile(t, p, RoleGold, Options{})
		checkErrors(t, err, p, []wantErr{
			{Row: 2, Field: "query_id", Is: ErrInvalidUTF8},
			{Row: 3, Field: "doc_ids", Is: ErrInvalidUTF8},
			{Row: 4, Field: "tags", Is: ErrTypeMismatch},
		})
	}
}

// TestColumnarNotColumnar reads files that are not what their extension
// says, and truncated files.
func TestColumnarNotColumnar(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content string }{
		{"text.arrow", "q1 0 d1 1\n"},
		{"empty.arrow", ""},
		{"magic.arrow", "ARROW1"},
		{"magic2.arrow", "ARROW1\x00\x00" + strings.Repeat("\x00", 40) + "ARROW1"},
		{"text.arrows", "q1 0 d1 1\n"},
		{"empty.arrows", ""},
		{"eos.arrows", "\xff\xff\xff\xff\x00\x00\x00\x00"},
		{"text.parquet", "q1 0 d1 1\n"},
		{"empty.parquet", ""},
		{"magic.parquet", "PAR1PAR1"},
		{"footer.parquet", "PAR1\x00\x00\x00\x00PAR1"},
		{"hugefooter.parquet", "PAR1\xff\xff\xff\x7fPAR1"},
	} {
		p := writeFile(t, dir, tc.name, tc.content)
		for _, role := range []Role{RoleGold, RoleRun} {
			_, err := readFile(t, p, role, Options{})
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrCorrupt) || ie.File != p {
				t.Errorf("%s: %v (%T)", tc.name, err, err)
			}
		}
	}
}

func TestColumnarTruncated(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var rows []string
	for i := 0; i < 50; i++ {
		rows = append(rows, fmt.Sprintf(`{"query_id": "q%d", "doc_id": "d%d", "score": %d.5, "rank": %d}`, i/10, i, i, i%10))
	}
	recs := recordsFromJSON(t, mem, RunLong(), "["+strings.Join(rows[:25], ",")+"]", "["+strings.Join(rows[25:], ",")+"]")
	defer release(recs)
	dir := t.TempDir()
	for _, cf := range columnarFormats {
		full := encode(t, cf.format, RunLong(), recs)
		p := writeFile(t, dir, "full"+cf.ext, string(full))
		whole := mustRead(t, p, RoleRun, Options{})
		if len(whole.RunLong) != 50 {
			t.Fatalf("%v: %d rows", cf.format, len(whole.RunLong))
		}
		step := max(1, len(full)/200)
		for cut := 0; cut < len(full); cut += step {
			p := writeFile(t, dir, "cut"+cf.ext, string(full[:cut]))
			readMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			c, err := readFile(t, p, RoleRun, Options{Allocator: readMem})
			readMem.AssertSize(t, 0)
			if err == nil {
				// An Arrow stream may end after any message (the
				// end-of-stream marker is optional): a cut there reads
				// as the records before it.
				if cf.format == FormatArrowStream && (len(c.RunLong) == 0 || len(c.RunLong) == 25) {
					equal(t, "prefix", c.RunLong, whole.RunLong[:len(c.RunLong)])
					continue
				}
				t.Fatalf("%v cut at %d of %d: no error, %d rows", cf.format, cut, len(full), len(c.RunLong))
			}
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrCorrupt) || ie.File != p {
				t.Errorf("%v cut at %d: %v (%T)", cf.format, cut, err, err)
			}
		}
	}
}

// corruptVariants returns copies of full with one byte changed: a sample
// of positions (at most about n), and the given positions.
func corruptVariants(full []byte, n int, positions ...int) [][]byte {
	var out [][]byte
	flip := func(k int) {
		i, x := k/3, []byte{0xff, 0x80, 0x01}[k%3]
		if i < len(full) {
			bad := append([]byte{}, full...)
			bad[i] ^= x
			out = append(out, bad)
		}
	}
	step := max(1, 3*len(full)/n)
	for k := 0; k < 3*len(full); k += step {
		flip(k)
	}
	for _, k := range positions {
		flip(k)
	}
	return out
}

// TestColumnarCorruptBytes changes bytes all over valid files: reading
// must not panic or crash, and must fail with input errors or succeed.
// The full sweep is the fuzz targets' job; this is a sample, plus changes
// that used to crash the process (see the k values below).
func TestColumnarCorruptBytes(t *testing.T) {
	mem := memory.NewGoAllocator()
	recs := recordsFromJSON(t, mem, GoldList(),
		`[{"query_id": "q1", "query": "what", "doc_ids": ["d1", "d2"], "grades": [2, 0], "tags": [{"key": "category", "value": "policy"}]},
		  {"query_id": "q2", "query": null, "doc_ids": [], "grades": [], "tags": null}]`)
	defer release(recs)
	dir := t.TempDir()
	// Byte k/3 xor {0xff, 0x80, 0x01}[k%3]. In the Parquet file these hit
	// the compressed pages of tags, which pqarrow decodes in a goroutine
	// of its own where the zstd codec's panics (and a nil dictionary page
	// header) used to end the process; in the Arrow files, list lengths
	// beyond their offsets used to make the reader allocate gigabytes.
	regressions := map[Format][]int{
		FormatParquet:     {1192, 1194, 1209, 1218, 1236, 1250, 1274},
		FormatArrow:       {2737, 2741, 3672, 3675, 3678},
		FormatArrowStream: {},
	}
	for _, cf := range columnarFormats {
		full := encode(t, cf.format, GoldList(), recs)
		for i, bad := range corruptVariants(full, 400, regressions[cf.format]...) {
			p := writeFile(t, dir, "bad"+cf.ext, string(bad))
			for _, role := range []Role{RoleGold, RoleRun} {
				_, err := readFile(t, p, role, Options{Format: cf.format})
				if err != nil && !IsInvalidInput(err) {
					t.Fatalf("%v variant %d: %v (%T)", cf.format, i, err, err)
				}
			}
			if _, err := DetectRole(p, cf.format); err != nil && !IsInvalidInput(err) && !strings.Contains(err.Error(), "cannot tell") {
				t.Fatalf("%v variant %d: DetectRole: %v (%T)", cf.format, i, err, err)
			}
		}
	}
}

// TestCheckLengths builds arrays whose length exceeds their buffers (as a
// corrupt file can): Arrow does not check lists, and reading must fail
// instead of sizing allocations by the length.
func TestCheckLengths(t *testing.T) {
	strs := NewStrings(2, 2)
	strs.Append("a")
	strs.Append("b")
	vals := strs.Array()
	defer vals.Release()
	good := array.NewData(arrow.ListOf(arrow.BinaryTypes.String), 1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf([]int32{0, 2}))}, []arrow.ArrayData{vals.Data()}, 0, 0)
	defer good.Release()
	if err := checkLengths(good, 0); err != nil {
		t.Errorf("good list: %v", err)
	}
	huge := array.NewData(arrow.ListOf(arrow.BinaryTypes.String), 1<<31-2,
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf([]int32{0, 2}))}, []arrow.ArrayData{vals.Data()}, 0, 0)
	defer huge.Release()
	if err := checkLengths(huge, 0); err == nil || !strings.Contains(err.Error(), "values need") {
		t.Errorf("huge list: %v", err)
	}
	// The check also reaches children and dictionaries.
	nested := array.NewData(arrow.ListOf(arrow.ListOf(arrow.BinaryTypes.String)), 1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf([]int32{0, 1}))}, []arrow.ArrayData{huge}, 0, 0)
	defer nested.Release()
	if err := checkLengths(nested, 0); err == nil {
		t.Errorf("nested huge list: no error")
	}
	noValues := array.NewData(arrow.PrimitiveTypes.Int64, 10, []*memory.Buffer{nil, nil}, nil, 0, 0)
	defer noValues.Release()
	if err := checkLengths(noValues, 0); err == nil {
		t.Errorf("int64 without values: no error")
	}
	empty := array.NewData(arrow.BinaryTypes.String, 0, []*memory.Buffer{nil, nil, nil}, nil, 0, 0)
	defer empty.Release()
	if err := checkLengths(empty, 0); err != nil {
		t.Errorf("empty string array: %v", err)
	}
	// And a whole record with such a list: an error, before any
	// allocation sized by the list's length.
	rows := 1 << 20
	bigQ := array.NewData(arrow.BinaryTypes.String, rows, []*memory.Buffer{nil, memory.NewBufferBytes(make([]byte, 4*(rows+1))), memory.NewBufferBytes(nil)}, nil, 0, 0)
	defer bigQ.Release()
	list := array.NewData(arrow.ListOf(arrow.BinaryTypes.String), rows,
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf([]int32{0, 2}))}, []arrow.ArrayData{vals.Data()}, 0, 0)
	defer list.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs}, nil),
		[]arrow.Array{array.MakeFromData(bigQ), array.MakeFromData(list)}, int64(rows))
	defer rec.Release()
	r := &columnarReader{file: "x.arrow", role: RoleRun, row: 1}
	var list2 ErrorList
	err := protect(func() error {
		_, _, err := r.normalize(rec, 1, &list2)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "column doc_ids") {
		t.Errorf("normalize: %v", err)
	}
}

// TestParquetCorruptStoredSchema corrupts the Arrow schema Parquet
// writers store in the file's metadata so that it claims a huge message:
// an input error, not an allocation of gigabytes.
func TestParquetCorruptStoredSchema(t *testing.T) {
	recs := recordsFromJSON(t, memory.NewGoAllocator(), GoldLong(), `[{"query_id": "q", "doc_id": "d", "grade": 1}]`)
	defer release(recs)
	full := encode(t, FormatParquet, GoldLong(), recs)
	// The stored schema is a base64 IPC stream: continuation marker, then
	// the metadata length.
	marker := base64.StdEncoding.EncodeToString([]byte{0xff, 0xff, 0xff, 0xff})[:4] // "/////"[:4]: first 3 bytes
	i := bytes.Index(full, []byte(marker))
	if i < 0 {
		t.Fatalf("no stored schema found")
	}
	// Decode the quantum holding the marker and the length, raise the
	// length, encode it back in place: same size, so the footer stays
	// valid.
	q, err := base64.StdEncoding.DecodeString(string(full[i : i+8]))
	if err != nil {
		t.Fatal(err)
	}
	q[3], q[4], q[5] = 0xf0, 0xff, 0xff // length bytes 0..2 (0xfffff0..)
	copy(full[i:i+8], base64.StdEncoding.EncodeToString(q))
	p := writeFile(t, t.TempDir(), "schema.parquet", string(full))
	_, err = readFile(t, p, RoleGold, Options{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "stored Arrow schema") {
		t.Errorf("read: %v", err)
	}
	if _, err := DetectRole(p, FormatAuto); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DetectRole: %v", err)
	}
}

// TestColumnarScoresInNullList checks that list values no row holds (behind
// a null list) are not checked: only what the rows hold counts.
func TestColumnarScoresInNullList(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs, fScores}, nil)
	qids := NewStrings(2, 4)
	qids.Append("q1")
	qids.Append("q2")
	docs := NewStrings(3, 3)
	for _, d := range []string{"a", "b", "c"} {
		docs.Append(d)
	}
	rec := NewRecord(s, []arrow.Array{
		qids.Array(),
		ListArray([]int32{0, 2, 3}, docs.Array(), nil),
		ListArray([]int32{0, 2, 3}, Float64Array([]float64{2, 1, math.NaN()}), []bool{true, false}),
	}, 2)
	defer rec.Release()
	p := writeColumnar(t, t.TempDir(), "x.arrow", FormatArrow, s, []arrow.Record{rec})
	c := mustRead(t, p, RoleRun, Options{})
	equal(t, "rows", c.RunList, []runListRow{
		{QID: "q1", Docs: []string{"a", "b"}, Scores: []float64{2, 1}, Pos: 1},
		{QID: "q2", Docs: []string{"c"}, ScoresNull: true, Pos: 2},
	})
}
