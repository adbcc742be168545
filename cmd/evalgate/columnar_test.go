package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/synth"
)

// TestColumnarSummariesEqualText scores one run as TREC text and as every
// columnar file convert writes (Parquet in each compression, with several
// row groups; Arrow IPC file and stream, with many batches): the
// summaries must be the same bits, digests included, apart from the
// inputs' paths and formats and the execution times.
func TestColumnarSummariesEqualText(t *testing.T) {
	dir := t.TempDir()
	gold, runFile := synth.Paths(dir, schema.FormatTREC)
	// 3,000 queries × 100 rows: two Parquet row groups of at least
	// schema.DefaultRowGroupRows rows.
	opts := synth.Options{Queries: 3000, Depth: 100, Seed: 5, Format: schema.FormatTREC}
	if err := synth.Write(context.Background(), opts, gold, runFile); err != nil {
		t.Fatal(err)
	}
	want := summaryOf(t, gold, runFile)
	for _, c := range []struct{ name, compression string }{
		{"snappy.parquet", "snappy"}, {"zstd.parquet", "zstd"}, {"none.parquet", "none"},
		{"run.arrow", ""}, {"run.arrows", ""},
	} {
		out := filepath.Join(dir, c.name)
		args := []string{"convert", runFile, out}
		if c.compression != "" {
			args = []string{"convert", "--compression", c.compression, runFile, out}
		}
		if code, _, errs := evalgate(t, args...); code != 0 {
			t.Fatalf("convert %s: exit %d: %s", c.name, code, errs)
		}
		if got := summaryOf(t, gold, out); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: summary differs from the text run's:\n%v\nwant\n%v", c.name, got, want)
		}
	}
}

// summaryOf scores run and returns its JSON summary without what depends
// on the file rather than its rows.
func summaryOf(t *testing.T, gold, run string) map[string]any {
	t.Helper()
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--format", "json")
	if code != 0 {
		t.Fatalf("score %s: exit %d: %s", run, code, errs)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("score %s: %v", run, err)
	}
	delete(s, "execution")
	for _, in := range s["inputs"].(map[string]any) {
		delete(in.(map[string]any), "path")
		delete(in.(map[string]any), "format")
	}
	return s
}
