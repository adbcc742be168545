package coordinator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/synth"
)

// probeJob is a live job on gold asking the retriever file body (its url
// pointing at srv).
func probeJob(t *testing.T, gold string, srv *httptest.Server, body string) Job {
	t.Helper()
	file := filepath.Join(t.TempDir(), "search.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("url: %s/search?q={{.Query | urlquery}}\n%s", srv.URL, body)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := retriever.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := newJob(gold, "")
	job.Retriever = &Retriever{Config: cfg}
	return job
}

// Probe asks one query and nothing more: a retriever whose answers fit its
// file passes; one whose answers have no hit list at results, or that
// refuses the request, is bad input naming the file and the key's line;
// a gold set without query texts is bad input before any request.
func TestProbe(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"hits": [{"id": "d1"}, {"id": "d2"}]}`)
	}))
	defer srv.Close()
	gold, _ := genData(t, synth.Options{Queries: 50, Depth: 5, Seed: 3, Format: schema.FormatJSONL})
	ctx := context.Background()

	if err := Probe(ctx, probeJob(t, gold, srv, "results: hits\nid: id\nretries: 0\n")); err != nil {
		t.Fatalf("a retriever that fits its file: %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("the probe sent %d requests, want 1", n)
	}

	job := probeJob(t, gold, srv, "\nresults: matches\nid: id\nretries: 0\n")
	err := Probe(ctx, job)
	if !schema.IsInvalidInput(err) || !strings.Contains(err.Error(), job.Retriever.Config.File+":3") {
		t.Fatalf("answers without a hit list at results: %v", err)
	}

	noText := filepath.Join(t.TempDir(), "gold.qrels")
	if err := os.WriteFile(noText, []byte("q1 0 d1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	requests.Store(0)
	err = Probe(ctx, probeJob(t, noText, srv, "results: hits\nid: id\n"))
	if !errors.Is(err, schema.ErrMissingField) || !strings.Contains(err.Error(), noText) || requests.Load() != 0 {
		t.Fatalf("a gold set without query texts: %v (%d requests)", err, requests.Load())
	}

	if err := Probe(ctx, newJob(gold, "run.jsonl")); err == nil {
		t.Fatal("a job without a retriever probed")
	}
}
