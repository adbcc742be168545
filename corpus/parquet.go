package corpus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/evalgate/evalgate/schema"
)

// loadParquet reads a Parquet corpus: the id, text and title columns (by
// the names of idKeys, textKeys and titleKeys; a file may have several
// aliases, which must then agree on every row), nothing else. A gzipped
// file is first decompressed to a temporary file.
func loadParquet(ctx context.Context, path string, acc *accumulator, opts Options) error {
	local, cleanup, err := parquetFile(path, opts.TempDir)
	if err != nil {
		return err
	}
	defer cleanup()
	names := slices.Concat(idKeys, textKeys, titleKeys)
	pc, err := schema.OpenParquetColumns(local, names, schema.Options{MaxErrors: opts.MaxErrors})
	if err != nil {
		var ie *schema.InputError
		if errors.As(err, &ie) {
			ie.File = path
		}
		return err
	}
	defer pc.Close()
	cols, err := pickColumns(pc.Schema(), pc.FileColumns())
	if err != nil {
		return &schema.InputError{File: path, Field: fieldOf(err), Err: err}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, first, err := pc.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var ie *schema.InputError
			if !errors.As(err, &ie) {
				return err
			}
			ie.File = path
			acc.addError(ie)
			return nil
		}
		if err := cols.addRecord(path, rec, first, acc); err != nil {
			acc.addError(&schema.InputError{File: path, Row: first, Err: fmt.Errorf("%w: %v", schema.ErrCorrupt, err)})
			return nil
		}
	}
}

// parquetFile returns a path to read the Parquet file at path from: path
// itself, or a temporary copy decompressed from gzip (removed by cleanup).
func parquetFile(path, tempDir string) (local string, cleanup func(), err error) {
	if gz, err := isGzip(path); err != nil || !gz {
		return path, func() {}, err
	}
	r, err := schema.OpenStream(path)
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	tmp, err := os.CreateTemp(tempDir, "evalgate-corpus-*.parquet")
	if err != nil {
		return "", nil, fmt.Errorf("decompress %s: %w", path, err)
	}
	cleanup = func() { os.Remove(tmp.Name()) }
	_, err = io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		if schema.IsInvalidInput(err) {
			return "", nil, err // a broken gzip stream, naming the file
		}
		return "", nil, fmt.Errorf("decompress %s: %w", path, err)
	}
	return tmp.Name(), cleanup, nil
}

// isGzip reports whether the file at path starts with the gzip magic.
func isGzip(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	return n == 2 && head[0] == 0x1f && head[1] == 0x8b, nil
}

// columnError is a problem with a column as a whole.
type columnError struct {
	column string
	err    error
}

func (e *columnError) Error() string { return e.err.Error() }
func (e *columnError) Unwrap() error { return e.err }

func fieldOf(err error) string {
	var ce *columnError
	if errors.As(err, &ce) {
		return ce.column
	}
	return ""
}

// parquetColumns are the indices, in the records, of the columns of each
// field: every alias the file has.
type parquetColumns struct {
	ids, texts, titles []int
	names              []string
}

// pickColumns finds the id, text and title columns of a record schema and
// checks their types.
func pickColumns(sc *arrow.Schema, fileColumns []string) (*parquetColumns, error) {
	c := &parquetColumns{}
	for i, f := range sc.Fields() {
		c.names = append(c.names, f.Name)
		isID := slices.Contains(idKeys, f.Name)
		if !stringType(f.Type) && !(isID && integerType(f.Type)) {
			want := "a string"
			if isID {
				want = "a string or an integer"
			}
			return nil, &columnError{column: f.Name, err: fmt.Errorf("%w: want %s, got %s", schema.ErrTypeMismatch, want, f.Type)}
		}
		switch {
		case isID:
			c.ids = append(c.ids, i)
		case slices.Contains(textKeys, f.Name):
			c.texts = append(c.texts, i)
		default:
			c.titles = append(c.titles, i)
		}
	}
	if len(c.ids) == 0 {
		return nil, fmt.Errorf("%w: want a document id column (%s); the file has %v", schema.ErrMissingColumn, strings.Join(idKeys, ", "), fileColumns)
	}
	if len(c.texts) == 0 {
		return nil, fmt.Errorf("%w: want a passage text column (%s); the file has %v", schema.ErrMissingColumn, strings.Join(textKeys, ", "), fileColumns)
	}
	return c, nil
}

func stringType(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType:
		return true
	case *arrow.DictionaryType:
		return stringType(t.ValueType)
	}
	return false
}

func integerType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// values returns the value at row i of a column of a type pickColumns
// accepted, as a string that may point into the column's buffers.
func values(a arrow.Array) (func(i int) string, error) {
	switch c := a.(type) {
	case *array.String:
		if err := schema.CheckStringOffsets(c); err != nil {
			return nil, err
		}
		return c.Value, nil
	case *array.LargeString:
		return c.Value, nil
	case *array.Binary:
		return c.ValueString, nil
	case *array.LargeBinary:
		return func(i int) string { return string(c.Value(i)) }, nil
	case *array.Dictionary:
		get, err := values(c.Dictionary())
		if err != nil {
			return nil, err
		}
		return func(i int) string { return get(c.GetValueIndex(i)) }, nil
	case *array.Int8:
		return func(i int) string { return strconv.FormatInt(int64(c.Value(i)), 10) }, nil
	case *array.Int16:
		return func(i int) string { return strconv.FormatInt(int64(c.Value(i)), 10) }, nil
	case *array.Int32:
		return func(i int) string { return strconv.FormatInt(int64(c.Value(i)), 10) }, nil
	case *array.Int64:
		return func(i int) string { return strconv.FormatInt(c.Value(i), 10) }, nil
	case *array.Uint8:
		return func(i int) string { return strconv.FormatUint(uint64(c.Value(i)), 10) }, nil
	case *array.Uint16:
		return func(i int) string { return strconv.FormatUint(uint64(c.Value(i)), 10) }, nil
	case *array.Uint32:
		return func(i int) string { return strconv.FormatUint(uint64(c.Value(i)), 10) }, nil
	case *array.Uint64:
		return func(i int) string { return strconv.FormatUint(c.Value(i), 10) }, nil
	}
	return nil, fmt.Errorf("column of type %s", a.DataType())
}

// field is one field of a record: its alias columns.
type field struct {
	names []string
	arrs  []arrow.Array
	gets  []func(int) string
}

func (c *parquetColumns) field(rec arrow.Record, idx []int) (*field, error) {
	f := &field{}
	for _, i := range idx {
		get, err := values(rec.Column(i))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.names[i], err)
		}
		f.names = append(f.names, c.names[i])
		f.arrs = append(f.arrs, rec.Column(i))
		f.gets = append(f.gets, get)
	}
	return f, nil
}

// at returns the value of the field at row i: that of the first alias not
// null. ok is false when every alias is null; le is set when two aliases
// differ.
func (f *field) at(i int) (name, v string, ok bool, le *lineError) {
	for k, a := range f.arrs {
		if a.IsNull(i) {
			continue
		}
		s := f.gets[k](i)
		if !ok {
			name, v, ok = f.names[k], s, true
			continue
		}
		if s != v {
			return "", "", false, &lineError{err: fmt.Errorf("%w: both %s and %s, with different values: give one", schema.ErrDuplicate, name, f.names[k])}
		}
	}
	return name, v, ok, nil
}

// addRecord checks every row of rec, whose first row is row first of the
// file, and adds the wanted documents to acc. An error is a record the
// Arrow library cannot read (a panic recovered).
func (c *parquetColumns) addRecord(path string, rec arrow.Record, first int64, acc *accumulator) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed data: %v", p)
		}
	}()
	ids, err := c.field(rec, c.ids)
	if err != nil {
		return err
	}
	texts, err := c.field(rec, c.texts)
	if err != nil {
		return err
	}
	titles, err := c.field(rec, c.titles)
	if err != nil {
		return err
	}
	for i := range int(rec.NumRows()) {
		row := first + int64(i)
		doc, idName, le := parquetRow(i, ids, texts, titles)
		if le != nil {
			acc.addError(&schema.InputError{File: path, Row: row, Field: le.field, Err: le.err})
			continue
		}
		acc.read++
		if _, ok := acc.want[doc.ID]; ok {
			doc = Document{ID: strings.Clone(doc.ID), Title: strings.Clone(doc.Title), Text: strings.Clone(doc.Text)}
			acc.add(found{doc: doc, field: idName, pos: row})
		}
	}
	return nil
}

// parquetRow reads and checks row i. The strings may point into the
// record's buffers.
func parquetRow(i int, ids, texts, titles *field) (doc Document, idName string, le *lineError) {
	checked := func(f *field, what string, required bool) (name, v string, le *lineError) {
		name, v, ok, le := f.at(i)
		switch {
		case le != nil:
			return "", "", le
		case !ok && required:
			return "", "", &lineError{field: f.names[0], err: fmt.Errorf("%w: want %s", schema.ErrNull, what)}
		case !utf8.ValidString(v):
			return "", "", &lineError{field: name, err: schema.ErrInvalidUTF8}
		}
		return name, v, nil
	}
	idName, id, le := checked(ids, "a document id", true)
	if le != nil {
		return Document{}, "", le
	}
	if id == "" {
		return Document{}, "", &lineError{field: idName, err: schema.ErrEmptyID}
	}
	_, text, le := checked(texts, "the passage text", true)
	if le != nil {
		return Document{}, "", le
	}
	var title string
	if len(titles.arrs) > 0 {
		if _, title, le = checked(titles, "", false); le != nil {
			return Document{}, "", le
		}
	}
	return Document{ID: id, Text: text, Title: title}, idName, nil
}
