package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/examples/retriever/internal/corpus"
	"github.com/evalgate/evalgate/examples/retriever/internal/testcorpus"
)

const fillers = 1500

// shared is an in-memory engine over the test corpus, built once for the
// package's tests (they only read it).
var shared struct {
	path string
	e    *Engine
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "engine-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if shared.path, err = testcorpus.Write(dir, fillers); err == nil {
		shared.e, err = Build(context.Background(), shared.path, "", zerolog.Nop())
	}
	if err == nil {
		code = m.Run()
		shared.e.Close()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func testEngine(*testing.T) (*Engine, string) { return shared.e, shared.path }

func ids(r Result) []string {
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.ID
	}
	return out
}

func mustSearch(t *testing.T, e *Engine, q string, k int, m Mode) Result {
	t.Helper()
	r, err := e.Search(context.Background(), q, k, m)
	if err != nil {
		t.Fatalf("%s %q: %v", m, q, err)
	}
	for i := 1; i < len(r.Hits); i++ {
		a, b := r.Hits[i-1], r.Hits[i]
		if a.Score < b.Score || a.Score == b.Score && a.ID > b.ID {
			t.Fatalf("%s %q: hit %d (%s %v) before hit %d (%s %v): want score descending, then id ascending", m, q, i-1, a.ID, a.Score, i, b.ID, b.Score)
		}
	}
	return r
}

// The title decides in candidate mode; the baseline does not read titles.
func TestTitleQueryRanksDocumentFirst(t *testing.T) {
	e, _ := testEngine(t)
	const q = "quokka habitat survey"
	cand := mustSearch(t, e, q, 10, Candidate)
	if len(cand.Hits) == 0 || cand.Hits[0].ID != "quokka-survey" || cand.Hits[0].Title != "Quokka habitat survey" {
		t.Fatalf("candidate %q: %v, want quokka-survey first, with its title", q, cand.Hits)
	}
	base := mustSearch(t, e, q, 10, Baseline)
	if got := ids(base); !slices.Equal(got, []string{"ferry-notes"}) {
		t.Fatalf("baseline %q: %v, want only ferry-notes (the only text with one of the words)", q, got)
	}
}

// Stemming joins connected, connections and connecting in candidate mode
// only.
func TestStemmingInCandidateOnly(t *testing.T) {
	e, _ := testEngine(t)
	if got := ids(mustSearch(t, e, "connected", 10, Candidate)); !slices.Equal(got, []string{"router-faq"}) {
		t.Fatalf("candidate: %v, want router-faq", got)
	}
	if got := ids(mustSearch(t, e, "connected", 10, Baseline)); len(got) != 0 {
		t.Fatalf("baseline: %v, want nothing (no text says connected)", got)
	}
	if got := ids(mustSearch(t, e, "connections", 10, Baseline)); !slices.Equal(got, []string{"router-faq"}) {
		t.Fatalf("baseline, the exact form: %v, want router-faq", got)
	}
}

// The four forms of a pseudo-word of evalgate gen --corpus are one term
// to the English analyzer and four to the standard one.
func TestPseudoWordForms(t *testing.T) {
	e, _ := testEngine(t)
	m := e.idx.Mapping()
	for _, w := range []string{"bikad", "tolumar", "sopirav", "zagonuk", "dimuvop"} {
		var stems, plain []string
		for _, s := range []string{"", "s", "ing", "ed"} {
			stems = append(stems, string(m.AnalyzerNamed(en.AnalyzerName).Analyze([]byte(w + s))[0].Term))
			plain = append(plain, string(m.AnalyzerNamed(standard.Name).Analyze([]byte(w + s))[0].Term))
		}
		if u := slices.Compact(slices.Clone(stems)); len(u) != 1 || u[0] != w {
			t.Errorf("%s: English analyzer gives %v, want %s for every form", w, stems, w)
		}
		if len(slices.Compact(plain)) != 4 {
			t.Errorf("%s: standard analyzer gives %v, want four terms", w, plain)
		}
	}
	for _, q := range []string{"bikad", "bikaded", "tolumar", "tolumaring"} {
		if got := ids(mustSearch(t, e, q, 10, Candidate)); !slices.Equal(got, []string{"forms"}) {
			t.Errorf("candidate %q: %v, want forms", q, got)
		}
	}
}

// Equal scores rank by document id, in both modes.
func TestTiesRankByID(t *testing.T) {
	e, _ := testEngine(t)
	for _, m := range Modes {
		r := mustSearch(t, e, "xylograph", 10, m)
		if got := ids(r); !slices.Equal(got, []string{"twin-a", "twin-b"}) || r.Hits[0].Score != r.Hits[1].Score {
			t.Fatalf("%s: %v, want twin-a and twin-b with equal scores", m, r.Hits)
		}
	}
}

// A one-term query scores bleve's BM25 with the true average length of
// the text field: idf · k1·√tf / (√tf + k1·(1 − b + b·len/avg)), idf =
// ln(1 + (N − df + 0.5)/(df + 0.5)). Without the statistics the engine
// passes, bleve would divide by the number of distinct terms per document
// and the scores would differ.
func TestBM25Score(t *testing.T) {
	e, _ := testEngine(t)
	st := e.Stats()
	if st.Docs != fillers+len(testcorpus.Known) {
		t.Fatalf("%d documents indexed, want %d", st.Docs, fillers+len(testcorpus.Known))
	}
	avg := math.Ceil(float64(st.FieldTokens[fieldText]) / float64(st.Docs))
	if avg < 40 || avg > 120 {
		t.Fatalf("average text length %v tokens: the fillers have 20-140 words, a quarter of them stop words", avg)
	}
	const k1, b = 1.2, 0.75
	n, df := float64(st.Docs), 2.0
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	bm25 := func(tf, length float64) float64 {
		return idf * k1 * math.Sqrt(tf) / (math.Sqrt(tf) + k1*(1-b+b*length/avg))
	}
	r := mustSearch(t, e, "zymurgy", 10, Baseline)
	want := map[string]float64{"bm25-three": bm25(3, 14), "bm25-one": bm25(1, 6)}
	if len(r.Hits) != 2 {
		t.Fatalf("%v, want bm25-one and bm25-three", r.Hits)
	}
	for _, h := range r.Hits {
		if math.Abs(h.Score-want[h.ID]) > 1e-6*want[h.ID] {
			t.Errorf("%s: score %v, want %v", h.ID, h.Score, want[h.ID])
		}
	}
}

func TestSearchEdges(t *testing.T) {
	e, _ := testEngine(t)
	if r := mustSearch(t, e, "the of and", 10, Candidate); len(r.Hits) != 0 {
		t.Errorf("a stop-word query: %v, want nothing", r.Hits)
	}
	r := mustSearch(t, e, "hehe juju wewe", 7, Baseline)
	if len(r.Hits) != 7 || r.Total < 7 {
		t.Errorf("k 7: %d hits of %d, want 7", len(r.Hits), r.Total)
	}
	for _, bad := range []struct {
		k int
		m Mode
	}{{0, Baseline}, {MaxK + 1, Baseline}, {10, "hybrid"}} {
		if _, err := e.Search(context.Background(), "quokka", bad.k, bad.m); err == nil {
			t.Errorf("k %d mode %q: no error", bad.k, bad.m)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Search(ctx, "hehe", 10, Candidate); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled search: %v, want context.Canceled", err)
	}
}

// A persisted index answers as the in-memory one does, is reused at the
// next start, and is refused for another corpus.
func TestPersistedIndex(t *testing.T) {
	mem, path := testEngine(t)
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Load(context.Background(), path, dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"quokka habitat survey", "connected", "hehe juju", "xylograph"}
	check := func(e *Engine) {
		t.Helper()
		for _, q := range queries {
			for _, m := range Modes {
				if got, want := mustSearch(t, e, q, 50, m).Hits, mustSearch(t, mem, q, 50, m).Hits; !slices.Equal(got, want) {
					t.Fatalf("%s %q: persisted %v, in memory %v", m, q, got, want)
				}
			}
		}
	}
	check(e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = Load(context.Background(), path, dir, zerolog.Nop()); err != nil {
		t.Fatalf("reopen with the same corpus: %v", err)
	}
	check(e)
	e.Close()
	if e, err = Load(context.Background(), "", dir, zerolog.Nop()); err != nil {
		t.Fatalf("reopen without a corpus: %v", err)
	}
	e.Close()
	other := filepath.Join(t.TempDir(), "other.jsonl")
	if err := os.WriteFile(other, []byte(`{"doc_id":"x","text":"y"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), other, dir, zerolog.Nop()); !errors.Is(err, ErrOtherCorpus) {
		t.Fatalf("another corpus: %v, want ErrOtherCorpus", err)
	}
	if _, err := Load(context.Background(), "", filepath.Join(t.TempDir(), "none"), zerolog.Nop()); err == nil {
		t.Fatal("no index and no corpus: no error")
	}
	if _, err := Load(context.Background(), path, t.TempDir(), zerolog.Nop()); !errors.Is(err, ErrNotIndex) {
		t.Fatalf("a directory without an index: %v, want ErrNotIndex", err)
	}
	if _, err := Build(context.Background(), path, dir, zerolog.Nop()); !errors.Is(err, ErrNotIndex) {
		t.Fatalf("build over an existing directory: %v, want ErrNotIndex", err)
	}
}

// A build that fails or is cancelled leaves no directory behind.
func TestFailedBuildLeavesNothing(t *testing.T) {
	_, path := testEngine(t)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"doc_id\":\"a\"}\n{\"doc_id\":\"b\"}\n{\"doc_id\":\"a\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, c := range map[string]struct {
		ctx    context.Context
		corpus string
		want   error
	}{
		"duplicate id": {context.Background(), bad, corpus.ErrBadInput},
		"no documents": {context.Background(), empty, corpus.ErrBadInput},
		"cancelled":    {cancelled, path, context.Canceled},
	} {
		parent := t.TempDir()
		_, err := Build(c.ctx, c.corpus, filepath.Join(parent, "idx"), zerolog.Nop())
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		if left, _ := os.ReadDir(parent); len(left) != 0 {
			t.Errorf("%s: left %v behind", name, left)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); got != m || err != nil {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseMode("Baseline"); err == nil {
		t.Error("ParseMode is case-sensitive: Baseline accepted")
	}
}

// BenchmarkSearch: one search of three common words for 100 hits, per
// mode, on the test corpus.
func BenchmarkSearch(b *testing.B) {
	for _, m := range Modes {
		b.Run(string(m), func(b *testing.B) {
			for b.Loop() {
				if _, err := shared.e.Search(context.Background(), "hehe juju wewe", 100, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
