package schema

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
)

// TestOpenParquetColumns reads some columns of a file of several row
// groups, one of them dictionary-encoded, and checks the refusals.
func TestOpenParquetColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "vec", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
		{Name: "title", Type: dict},
		{Name: "text", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	const n = 10
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).Append(float32(i))
		if err := b.Field(2).(*array.BinaryDictionaryBuilder).AppendString(string(rune('a' + i%3))); err != nil {
			t.Fatal(err)
		}
		b.Field(3).(*array.StringBuilder).Append(string(rune('A' + i)))
	}
	rec := b.NewRecord()
	defer rec.Release()
	var buf bytes.Buffer
	writeWithPqarrow(t, &buf, rec, parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithMaxRowGroupLength(4)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	dir := t.TempDir()
	path := writeFile(t, dir, "c.parquet", buf.String())

	p, err := OpenParquetColumns(path, []string{"text", "title", "missing"}, Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Schema().String(); p.Schema().NumFields() != 2 || p.Schema().Field(0).Name != "title" || p.Schema().Field(1).Name != "text" {
		t.Errorf("schema %s; want title, text", got)
	}
	var titles, texts string
	next := int64(1)
	for {
		rec, first, err := p.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if first != next || rec.NumRows() > 4 {
			t.Errorf("record of %d rows at row %d, want at most 4 at row %d", rec.NumRows(), first, next)
		}
		next += rec.NumRows()
		d := rec.Column(0).(*array.Dictionary)
		for i := range int(rec.NumRows()) {
			titles += d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
			texts += rec.Column(1).(*array.String).Value(i)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if titles != "abcabcabca" || texts != "ABCDEFGHIJ" || next != n+1 {
		t.Errorf("read %q, %q, %d rows; want abcabcabca, ABCDEFGHIJ, %d", titles, texts, next-1, n)
	}

	_, err = OpenParquetColumns(path, []string{"nope"}, Options{})
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, ErrMissingColumn) || ie.File != path {
		t.Errorf("no such column: %v; want an input error, missing column", err)
	}
	_, err = OpenParquetColumns(path, []string{"vec", "text"}, Options{})
	if !errors.As(err, &ie) || !errors.Is(err, ErrTypeMismatch) || ie.Field != "vec" {
		t.Errorf("nested column: %v; want an input error, type mismatch on vec", err)
	}
	for _, bad := range []string{"", "PAR1", "PAR1\x00\x00\x00\x00PAR1", "PAR1\xff\xff\xff\x7fPAR1", buf.String()[:buf.Len()/2]} {
		_, err = OpenParquetColumns(writeFile(t, dir, "bad.parquet", bad), []string{"text"}, Options{})
		if !errors.As(err, &ie) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: %v; want an input error, corrupt", bad[:min(len(bad), 12)], err)
		}
	}
	_, err = OpenParquetColumns(filepath.Join(dir, "absent.parquet"), []string{"text"}, Options{})
	if err == nil || IsInvalidInput(err) {
		t.Errorf("absent file: %v; want an I/O error", err)
	}
}
