package schema

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
