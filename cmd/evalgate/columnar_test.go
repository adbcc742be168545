package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/ipc"

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
	// The lines of the run in another order: each query's rows in
	// several places, its Arrow file a run of query ids every row or so.
	text, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(text), "\n")
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	shuffled := filepath.Join(dir, "shuffled.trec")
	if err := os.WriteFile(shuffled, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, in string
		flags    []string
		queryID  arrow.Type // of an Arrow file's query_id column
	}{
		{"snappy.parquet", runFile, []string{"--compression", "snappy"}, 0},
		{"zstd.parquet", runFile, []string{"--compression", "zstd"}, 0},
		{"none.parquet", runFile, []string{"--compression", "none"}, 0},
		{"run.arrow", runFile, nil, arrow.RUN_END_ENCODED},
		{"run.arrows", runFile, nil, arrow.RUN_END_ENCODED},
		{"plain.arrow", runFile, []string{"--plain-query-ids"}, arrow.STRING},
		{"from-arrow.parquet", "run.arrow", nil, 0},
		{"from-arrow.arrow", "run.arrow", []string{"--plain-query-ids"}, arrow.STRING},
		{"shuffled.arrow", shuffled, nil, arrow.RUN_END_ENCODED},
		{"shuffled.parquet", shuffled, nil, 0},
	} {
		in, out := c.in, filepath.Join(dir, c.name)
		if !filepath.IsAbs(in) {
			in = filepath.Join(dir, in)
		}
		args := append(append([]string{"convert"}, c.flags...), in, out)
		if code, _, errs := evalgate(t, args...); code != 0 {
			t.Fatalf("convert %s: exit %d: %s", c.name, code, errs)
		}
		if c.queryID != 0 {
			if got := arrowQueryID(t, out); got != c.queryID {
				t.Errorf("%s: query_id of type %v, want %v", c.name, got, c.queryID)
			}
		}
		if got := summaryOf(t, gold, out); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: summary differs from the text run's:\n%v\nwant\n%v", c.name, got, want)
		}
	}
}

// arrowQueryID returns the type of the query_id column of an Arrow IPC
// file or stream.
func arrowQueryID(t *testing.T, path string) arrow.Type {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s *arrow.Schema
	if strings.HasSuffix(path, ".arrows") {
		r, err := ipc.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		s = r.Schema()
	} else {
		r, err := ipc.NewFileReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		s = r.Schema()
	}
	return s.Field(0).Type.ID()
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
