package schema

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/klauspost/compress/gzip"
)

// Helpers shared by the tests of this package: writing input files,
// draining readers into plain Go values, and checking errors.

// writeFile writes content to dir/name and returns the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
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

// Plain Go views of the four input forms. Pos is the 1-based source line
// (text formats) or row (Arrow, Parquet).

type goldLongRow struct {
	QID, Doc string
	Grade    int32
	Pos      int64
}

type runLongRow struct {
	QID, Doc  string
	Score     float64
	Rank      int32
	RankValid bool
	Pos       int64
}

type goldListRow struct {
	QID     string
	Query   string
	HasText bool
	Docs    []string
	Grades  []int32
	Tags    []string // "name=value" in map order
	Pos     int64
}

type runListRow struct {
	QID        string
	Docs       []string
	Scores     []float64
	ScoresNull bool
	Pos        int64
}

// contents is everything read from one file.
type contents struct {
	Form     Form
	Batches  int
	GoldLong []goldLongRow
	RunLong  []runLongRow
	GoldList []goldListRow
	RunList  []runListRow
}

func (c *contents) rows() int {
	return len(c.GoldLong) + len(c.RunLong) + len(c.GoldList) + len(c.RunList)
}

func stringList(l *array.List, i int) []string {
	s, e := l.ValueOffsets(i)
	v := l.ListValues().(*array.String)
	out := []string{}
	for j := s; j < e; j++ {
		out = append(out, strings.Clone(v.Value(int(j))))
	}
	return out
}

// appendBatch decodes b into c, checking the batch's schema against its form.
func appendBatch(t testing.TB, c *contents, b *Batch) {
	t.Helper()
	rec := b.Record
	var want *arrow.Schema
	switch b.Form {
	case FormGoldLong:
		want = GoldLong()
	case FormGoldList:
		want = GoldList()
	case FormRunLong:
		want = RunLong()
		if rec.Column(0).DataType().ID() == arrow.RUN_END_ENCODED {
			want = RunLongEncoded()
		}
	case FormRunList:
		want = RunList()
	default:
		t.Fatalf("batch of form %v", b.Form)
	}
	if !rec.Schema().Equal(want) {
		t.Fatalf("batch schema\n%v\nwant\n%v", rec.Schema(), want)
	}
	n := int(rec.NumRows())
	if n == 0 {
		t.Fatalf("empty batch")
	}
	if b.Lines != nil && len(b.Lines) != n {
		t.Fatalf("batch has %d rows and %d line numbers", n, len(b.Lines))
	}
	for i := 0; i < n; i++ {
		if rec.Column(0).IsNull(i) {
			t.Fatalf("null query_id in row %d", i)
		}
	}
	pos := func(i int) int64 {
		if b.Lines != nil {
			return b.Lines[i]
		}
		return b.FirstRow + int64(i)
	}
	c.Batches++
	switch b.Form {
	case FormGoldLong:
		q := rec.Column(0).(*array.String)
		d := rec.Column(1).(*array.String)
		g := rec.Column(2).(*array.Int32)
		for i := 0; i < n; i++ {
			c.GoldLong = append(c.GoldLong, goldLongRow{strings.Clone(q.Value(i)), strings.Clone(d.Value(i)), g.Value(i), pos(i)})
		}
	case FormRunLong:
		q, err := RunQueryIDs(rec)
		if err != nil {
			t.Fatal(err)
		}
		d := rec.Column(1).(*array.String)
		s := rec.Column(2).(*array.Float64)
		r := rec.Column(3).(*array.Int32)
		for i := 0; i < n; i++ {
			// Cloned: a reader with Options.ReuseMemory reuses the batch.
			row := runLongRow{QID: strings.Clone(q.Value(i)), Doc: strings.Clone(d.Value(i)), Score: s.Value(i), Pos: pos(i)}
			if r.IsValid(i) {
				row.Rank, row.RankValid = r.Value(i), true
			}
			c.RunLong = append(c.RunLong, row)
		}
	case FormGoldList:
		q := rec.Column(0).(*array.String)
		text := rec.Column(1).(*array.String)
		docs := rec.Column(2).(*array.List)
		grades := rec.Column(3).(*array.List)
		gv := grades.ListValues().(*array.Int32)
		tags := rec.Column(4).(*array.Map)
		tk := tags.Keys().(*array.String)
		tv := tags.Items().(*array.String)
		for i := 0; i < n; i++ {
			row := goldListRow{QID: q.Value(i), Docs: stringList(docs, i), Grades: []int32{}, Tags: []string{}, Pos: pos(i)}
			if text.IsValid(i) {
				row.Query, row.HasText = text.Value(i), true
			}
			s, e := grades.ValueOffsets(i)
			for j := s; j < e; j++ {
				row.Grades = append(row.Grades, gv.Value(int(j)))
			}
			if len(row.Grades) != len(row.Docs) {
				t.Fatalf("row %d: %d grades for %d docs", i, len(row.Grades), len(row.Docs))
			}
			if tags.IsValid(i) {
				s, e := tags.ValueOffsets(i)
				for j := s; j < e; j++ {
					row.Tags = append(row.Tags, tk.Value(int(j))+"="+tv.Value(int(j)))
				}
			}
			c.GoldList = append(c.GoldList, row)
		}
	case FormRunList:
		q := rec.Column(0).(*array.String)
		docs := rec.Column(1).(*array.List)
		scores := rec.Column(2).(*array.List)
		sv := scores.ListValues().(*array.Float64)
		for i := 0; i < n; i++ {
			row := runListRow{QID: q.Value(i), Docs: stringList(docs, i), Pos: pos(i)}
			if scores.IsNull(i) {
				row.ScoresNull = true
			} else {
				row.Scores = []float64{}
				s, e := scores.ValueOffsets(i)
				for j := s; j < e; j++ {
					row.Scores = append(row.Scores, sv.Value(int(j)))
				}
				if len(row.Scores) != len(row.Docs) {
					t.Fatalf("row %d: %d scores for %d docs", i, len(row.Scores), len(row.Docs))
				}
			}
			c.RunList = append(c.RunList, row)
		}
	}
}

// drain reads every batch of r. It returns the contents read and the
// error that ended reading (nil at io.EOF). It checks that Next keeps
// returning io.EOF after the end, and closes r.
func drain(t testing.TB, r Reader) (*contents, error) {
	t.Helper()
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}()
	ctx := context.Background()
	c := &contents{}
	for {
		b, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if b != nil {
				t.Fatalf("Next returned a batch and an error")
			}
			// After the errors, Next returns io.EOF (text) or the same
			// errors again (Arrow, Parquet).
			if _, again := r.Next(ctx); again != io.EOF && (again == nil || again.Error() != err.Error()) {
				t.Errorf("Next after an error: %v, want io.EOF or %v", again, err)
			}
			c.Form = r.Form()
			return c, err
		}
		if b.Form != r.Form() {
			t.Errorf("batch form %v, reader form %v", b.Form, r.Form())
		}
		c.Form = b.Form
		appendBatch(t, c, b)
		b.Release()
	}
	if _, err := r.Next(ctx); err != io.EOF {
		t.Errorf("Next after io.EOF: %v", err)
	}
	return c, nil
}

// readFile opens path and drains it. An error from Open is returned like
// an error from Next.
func readFile(t testing.TB, path string, role Role, opts Options) (*contents, error) {
	t.Helper()
	r, err := Open(context.Background(), path, role, opts)
	if err != nil {
		return nil, err
	}
	return drain(t, r)
}

// mustRead reads a file that must have no errors.
func mustRead(t testing.TB, path string, role Role, opts Options) *contents {
	t.Helper()
	c, err := readFile(t, path, role, opts)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return c
}

// inputErrors returns the input errors in err: the kept errors of an
// *ErrorList, or the single *InputError.
func inputErrors(t testing.TB, err error) []*InputError {
	t.Helper()
	var l *ErrorList
	if errors.As(err, &l) {
		return l.Errors()
	}
	var ie *InputError
	if errors.As(err, &ie) {
		return []*InputError{ie}
	}
	t.Fatalf("error %v (%T) is not an *InputError or *ErrorList", err, err)
	return nil
}

// wantErr describes one expected input error. Line is the text line (0:
// none), Row the Arrow/Parquet row (0: none), Col the 1-based column (0:
// none), Field the field name ("" none), Is the sentinel (nil: any) and
// Has a substring of the message ("" any).
type wantErr struct {
	Line  int64
	Row   int64
	Col   int
	Field string
	Is    error
	Has   string
}

func checkInputError(t testing.TB, got *InputError, w wantErr, file string) {
	t.Helper()
	if got.File != file {
		t.Errorf("error %q: file %q, want %q", got, got.File, file)
	}
	if got.Line != w.Line || got.Row != w.Row || got.Column != w.Col || got.Field != w.Field {
		t.Errorf("error %q: at line %d row %d col %d field %q, want line %d row %d col %d field %q",
			got, got.Line, got.Row, got.Column, got.Field, w.Line, w.Row, w.Col, w.Field)
	}
	if w.Is != nil && !errors.Is(got, w.Is) {
		t.Errorf("error %q: not %q", got, w.Is)
	}
	if w.Has != "" && !strings.Contains(got.Error(), w.Has) {
		t.Errorf("error %q does not mention %q", got, w.Has)
	}
	if !IsInvalidInput(got) {
		t.Errorf("error %q: IsInvalidInput false", got)
	}
}

// checkErrors checks that err holds exactly the errors want, in order.
func checkErrors(t testing.TB, err error, file string, want []wantErr) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %d", len(want))
	}
	if !IsInvalidInput(err) {
		t.Errorf("IsInvalidInput(%v) = false", err)
	}
	got := inputErrors(t, err)
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i := range want {
		checkInputError(t, got[i], want[i], file)
	}
	for _, w := range want {
		if w.Is != nil && !errors.Is(err, w.Is) {
			t.Errorf("errors.Is(list, %v) = false", w.Is)
		}
	}
}

// equal fails the test when got and want differ.
func equal[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// firstBatch opens path as role and returns its first batch; the reader
// and the batch are released when the test ends.
func firstBatch(t *testing.T, path string, role Role) *Batch {
	t.Helper()
	r, err := Open(context.Background(), path, role, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	b, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	return b
}
