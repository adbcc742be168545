package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// TestConvertRoundTrip converts a TREC run to Parquet and Arrow IPC: each
// file reads back as the rows of the text, and an input with no rows is
// an input error with nothing to take a schema from.
func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "run.trec")
	if err := os.WriteFile(text, []byte("q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d9 1 7 t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := readContents(t, text, Options{})
	for _, f := range []Format{FormatParquet, FormatArrow} {
		r, err := Open(context.Background(), text, RoleRun, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rows, err := Convert(context.Background(), r, &out, "out", f, WriterOptions{})
		r.Close()
		if err != nil || rows != 3 {
			t.Fatalf("%v: %d rows, %v", f, rows, err)
		}
		p := filepath.Join(dir, "run."+f.String())
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got := readContents(t, p, Options{Format: f})
		for i := range got.RunLong {
			got.RunLong[i].Pos = want.RunLong[i].Pos // lines against rows
		}
		if !reflect.DeepEqual(got.RunLong, want.RunLong) {
			t.Fatalf("%v: read back %+v, want %+v", f, got.RunLong, want.RunLong)
		}
	}
	empty := filepath.Join(dir, "empty.trec")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), empty, RoleRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := Convert(context.Background(), r, &bytes.Buffer{}, "out", FormatParquet, WriterOptions{}); !errors.Is(err, ErrMissingField) || !IsInvalidInput(err) {
		t.Fatalf("empty input: %v", err)
	}
}

func readContents(t *testing.T, path string, o Options) *contents {
	t.Helper()
	r, err := Open(context.Background(), path, RoleRun, o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := drain(t, r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failingReader returns the batches of a reader, then fails.
type failingReader struct {
	Reader
	left int
}

var errReadFailed = errors.New("read failed")

func (r *failingReader) Next(ctx context.Context) (*Batch, error) {
	if r.left == 0 {
		return nil, errReadFailed
	}
	r.left--
	return r.Reader.Next(ctx)
}

// TestConvertFailureStopsWriters fails a conversion after some batches
// were written: the reader's error is returned, and the writer's
// goroutines (the row groups' encoders, the block writer) have stopped.
func TestConvertFailureStopsWriters(t *testing.T) {
	text := filepath.Join(t.TempDir(), "run.trec")
	var b bytes.Buffer
	for q := range 300 {
		for d := range 50 {
			fmt.Fprintf(&b, "q%d Q0 d%d %d %d.5 t\n", q, d, d+1, 100-d)
		}
	}
	if err := os.WriteFile(text, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{FormatParquet, FormatArrow, FormatArrowStream} {
		before := runtime.NumGoroutine()
		r, err := Open(context.Background(), text, RoleRun, Options{BlockSize: 16 << 10})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Convert(context.Background(), &failingReader{Reader: r, left: 5}, io.Discard, "out", f, WriterOptions{RowGroupRows: 500})
		r.Close()
		if !errors.Is(err, errReadFailed) {
			t.Fatalf("%v: %v, want the reader's error", f, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Fatalf("%v: %d goroutines, %d before:\n%s", f, n, before, buf[:runtime.Stack(buf, true)])
		}
	}
}
