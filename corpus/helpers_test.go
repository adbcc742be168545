package corpus

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
	"github.com/evalgate/evalgate/schema"
	"github.com/klauspost/compress/gzip"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t testing.TB, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gzipBytes compresses b.
func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// column is one column of a Parquet file written by a test: a name and
// its values (string or int64, nil for null).
type column struct {
	name string
	typ  arrow.DataType
	vals []any
}

// parquetBytes writes the columns as a Parquet file of row groups of 3
// rows.
func parquetBytes(t testing.TB, cols ...column) []byte {
	return parquetBytesRowGroups(t, 3, cols...)
}

// parquetBytesRowGroups writes the columns as a Parquet file of row
// groups of the given number of rows.
func parquetBytesRowGroups(t testing.TB, rowGroup int64, cols ...column) []byte {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
		b := array.NewBuilder(mem, c.typ)
		for _, v := range c.vals {
			switch v := v.(type) {
			case nil:
				b.AppendNull()
			case string:
				switch bb := b.(type) {
				case *array.StringBuilder:
					bb.Append(v)
				case *array.BinaryDictionaryBuilder:
					if err := bb.AppendString(v); err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatalf("column %s: string value for %s", c.name, c.typ)
				}
			case int64:
				b.(*array.Int64Builder).Append(v)
			default:
				t.Fatalf("column %s: value %v (%T)", c.name, v, v)
			}
		}
		arrs[i] = b.NewArray()
		b.Release()
		defer arrs[i].Release()
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, -1)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithMaxRowGroupLength(rowGroup)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var dictString = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// wantInputError checks that err is an input error whose list holds one
// at each of the positions pos (lines for text, rows for Parquet), the
// first with the field, sentinel and text given (each when not empty).
func wantInputError(t *testing.T, err error, field string, sentinel error, text string, pos ...int64) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if !schema.IsInvalidInput(err) {
		t.Fatalf("error %v (%T) is not an input error", err, err)
	}
	var list []*schema.InputError
	var el *schema.ErrorList
	var ie *schema.InputError
	switch {
	case errors.As(err, &el):
		list = el.Errors()
	case errors.As(err, &ie):
		list = []*schema.InputError{ie}
	}
	var got []int64
	for _, e := range list {
		got = append(got, e.Line+e.Row)
	}
	if len(pos) > 0 && !equalInts(got, pos) {
		t.Errorf("errors at %v, want %v:\n%v", got, pos, err)
	}
	if field != "" && list[0].Field != field {
		t.Errorf("field %q, want %q: %v", list[0].Field, field, err)
	}
	if sentinel != nil && !errors.Is(list[0], sentinel) {
		t.Errorf("error %v is not %v", list[0], sentinel)
	}
	if text != "" && !strings.Contains(list[0].Error(), text) {
		t.Errorf("error %q does not say %q", list[0].Error(), text)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// load reads the corpus at path with the given options, for wanted ids.
func load(t *testing.T, path string, opts Options, want ...string) (*Result, error) {
	t.Helper()
	return Load(context.Background(), path, want, opts)
}

// textOptions are the ways a text corpus is read in tests: the defaults,
// sequentially, and in blocks so small that every line is cut and many
// blocks are in flight.
var textOptions = []struct {
	name string
	opts Options
}{
	{"default", Options{}},
	{"sequential", Options{Parallelism: 1}},
	{"tiny-blocks", Options{Parallelism: 3, BlockSize: 7}},
}
