package corpus

import (
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/evalgate/evalgate/schema"
)

// TestParquetColumns checks the columns a Parquet corpus may have:
// integer ids, several aliases that agree, null titles, other columns.
func TestParquetColumns(t *testing.T) {
	dir := t.TempDir()
	pq := parquetBytes(t,
		column{"docid", arrow.PrimitiveTypes.Int64, []any{int64(7), int64(-2), int64(9)}},
		column{"id", arrow.BinaryTypes.String, []any{"7", nil, "9"}},
		column{"body", arrow.BinaryTypes.String, []any{"seven", "minus two", "nine"}},
		column{"contents", arrow.BinaryTypes.String, []any{nil, "minus two", "nine"}},
		column{"title", dictString, []any{"T", nil, "T"}},
		column{"url", arrow.BinaryTypes.String, []any{"u", "v", "w"}},
	)
	res, err := load(t, writeFile(t, dir, "c.pq", pq), Options{}, "7", "-2", "8")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Document{"7": {ID: "7", Title: "T", Text: "seven"}, "-2": {ID: "-2", Text: "minus two"}}
	if !reflect.DeepEqual(res.Docs, want) || !reflect.DeepEqual(res.Missing, []string{"8"}) || res.Read != 3 || res.Format != FormatParquet {
		t.Errorf("got %+v; want %v, missing [8], 3 read", res, want)
	}
}

// TestParquetErrors checks the errors of bad Parquet corpora: columns
// missing or of the wrong type, and rows with bad values.
func TestParquetErrors(t *testing.T) {
	dir := t.TempDir()
	str := arrow.BinaryTypes.String
	cases := []struct {
		name     string
		cols     []column
		field    string
		sentinel error
		text     string
		rows     []int64
	}{
		{"no id", []column{{"text", str, []any{"a"}}}, "", schema.ErrMissingColumn, "want a document id column (doc_id, docid, id, _id); the file has [text]", nil},
		{"no text", []column{{"id", str, []any{"a"}}, {"title", str, []any{"t"}}}, "", schema.ErrMissingColumn, "want a passage text column", nil},
		{"float id", []column{{"id", arrow.PrimitiveTypes.Float64, nil}, {"text", str, nil}}, "id", schema.ErrTypeMismatch, "want a string or an integer, got float64", nil},
		{"int text", []column{{"id", str, nil}, {"text", arrow.PrimitiveTypes.Int64, nil}}, "text", schema.ErrTypeMismatch, "want a string, got int64", nil},
		{"list text", []column{{"id", str, nil}, {"text", arrow.ListOf(str), nil}}, "text", schema.ErrTypeMismatch, "nested", nil},
		{"null id", []column{{"id", str, []any{"a", nil, "c", nil}}, {"text", str, []any{"x", "y", "z", "w"}}}, "id", schema.ErrNull, "want a document id", []int64{2, 4}},
		{"empty id", []column{{"_id", str, []any{"a", ""}}, {"text", str, []any{"x", "y"}}}, "_id", schema.ErrEmptyID, "", []int64{2}},
		{"null text", []column{{"id", str, []any{"a", "b"}}, {"text", str, []any{"x", nil}}}, "text", schema.ErrNull, "want the passage text", []int64{2}},
		{"ids disagree", []column{{"doc_id", str, []any{"a", "b"}}, {"id", str, []any{"a", "c"}}, {"text", str, []any{"x", "y"}}}, "", schema.ErrDuplicate, "both doc_id and id, with different values", []int64{2}},
		{"invalid utf8", []column{{"id", str, []any{"a", "b"}}, {"text", str, []any{"x", "y\xff"}}}, "text", schema.ErrInvalidUTF8, "", []int64{2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, dir, "c.parquet", parquetBytes(t, c.cols...))
			_, err := load(t, path, Options{}, "a", "b")
			wantInputError(t, err, c.field, c.sentinel, c.text, c.rows...)
		})
	}
	// Not Parquet at all, though it says so.
	_, err := load(t, writeFile(t, dir, "fake.parquet", []byte("PAR1 not really")), Options{}, "a")
	wantInputError(t, err, "", schema.ErrCorrupt, "")
}
