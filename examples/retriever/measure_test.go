package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/examples/retriever/internal/api"
	"github.com/evalgate/evalgate/examples/retriever/internal/engine"
)

// TestMeasure is a tool, not a check: given a gold set, it asks the service
// every query in every mode and writes each mode's answers as a TREC run
// (rank = list position), for `evalgate score --rank-by rank`. It runs only
// when given -gold and -out, and either -url (a running service) or
// -corpus (it then starts one in-process):
//
//	go test -run TestMeasure -count=1 . -args -gold gold.jsonl -corpus corpus.jsonl -out runs/
var (
	measureGold   = flag.String("gold", "", "TestMeasure: gold set (JSON Lines with query_id and query)")
	measureCorpus = flag.String("corpus", "", "TestMeasure: corpus to serve in-process")
	measureURL    = flag.String("url", "", "TestMeasure: base URL of a running service, instead of -corpus")
	measureOut    = flag.String("out", "", "TestMeasure: directory for <mode>.trec")
	measureK      = flag.Int("k", 100, "TestMeasure: results per query")
	measureConc   = flag.Int("concurrency", 4, "TestMeasure: requests in flight")
)

type goldQuery struct {
	ID   string `json:"query_id"`
	Text string `json:"query"`
}

func TestMeasure(t *testing.T) {
	if *measureGold == "" || *measureOut == "" || (*measureURL == "") == (*measureCorpus == "") {
		t.Skip("a tool: needs -gold, -out and one of -url, -corpus")
	}
	queries := readGoldQueries(t, *measureGold)
	base := *measureURL
	if base == "" {
		start := time.Now()
		e, err := engine.Build(context.Background(), *measureCorpus, "", zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		t.Logf("indexed %d documents in %v", e.Stats().Docs, time.Since(start).Round(time.Millisecond))
		srv := httptest.NewServer(api.NewHandler(e, zerolog.Nop()))
		defer srv.Close()
		base = srv.URL
	}
	if err := os.MkdirAll(*measureOut, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range engine.Modes {
		start := time.Now()
		runs, lat, took := askAll(t, base, mode, queries)
		wall := time.Since(start)
		var b bytes.Buffer
		for i, q := range queries {
			for r, h := range runs[i] {
				fmt.Fprintf(&b, "%s Q0 %s %d %.6f %s\n", q.ID, h.ID, r+1, h.Score, mode)
			}
		}
		path := filepath.Join(*measureOut, string(mode)+".trec")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		slices.Sort(lat)
		var sum, sumTook float64
		for i := range lat {
			sum += lat[i]
			sumTook += took[i]
		}
		n := float64(len(lat))
		t.Logf("%s: %d queries in %v (%d in flight): %.0f queries/s; latency mean %.2f ms, p50 %.2f, p95 %.2f, p99 %.2f; search time in the service mean %.2f ms; wrote %s",
			mode, len(lat), wall.Round(time.Millisecond), *measureConc, n/wall.Seconds(), sum/n,
			lat[len(lat)/2], lat[len(lat)*95/100], lat[len(lat)*99/100], sumTook/n, path)
	}
}

func readGoldQueries(t *testing.T, path string) []goldQuery {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []goldQuery
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var q goldQuery
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("%s:%d: %v", path, len(out)+1, err)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type answerHit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

type answer struct {
	Hits   []answerHit `json:"hits"`
	TookMS float64     `json:"took_ms"`
}

// askAll asks every query in mode, *measureConc at a time, and returns
// each query's hits, client latencies and service search times (ms).
func askAll(t *testing.T, base string, mode engine.Mode, queries []goldQuery) (runs [][]answerHit, lat, took []float64) {
	runs = make([][]answerHit, len(queries))
	lat, took = make([]float64, len(queries)), make([]float64, len(queries))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range *measureConc {
		wg.Go(func() {
			for i := range next {
				body, _ := json.Marshal(map[string]any{"query": queries[i].Text, "k": *measureK, "mode": mode})
				start := time.Now()
				resp, err := http.Post(base+"/search", "application/json", bytes.NewReader(body))
				if err == nil {
					var a answer
					err = json.NewDecoder(resp.Body).Decode(&a)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
					runs[i], took[i] = a.Hits, a.TookMS
				}
				lat[i] = float64(time.Since(start).Microseconds()) / 1000
				if err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, fmt.Errorf("query %s: %w", queries[i].ID, err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range queries {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return runs, lat, took
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
