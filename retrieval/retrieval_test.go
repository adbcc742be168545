package retrieval

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

func TestParseBudget(t *testing.T) {
	for _, c := range []struct {
		in      string
		queries int64
		allowed int64
	}{{"0", 100, 0}, {"3", 100, 3}, {"1%", 250, 2}, {"100%", 7, 7}, {" 2.5 % ", 1000, 25}} {
		b, err := ParseBudget(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if got := b.Allowed(c.queries); got != c.allowed {
			t.Errorf("%q of %d: %d allowed, want %d", c.in, c.queries, got, c.allowed)
		}
		if again, _ := ParseBudget(b.String()); again != b {
			t.Errorf("%q: String %q reads back as %+v", c.in, b.String(), again)
		}
	}
	for _, bad := range []string{"", "-1", "x", "101%", "-2%", "NaN%", "1.5"} {
		if _, err := ParseBudget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestResultRoundTrip(t *testing.T) {
	res := &Result{Score: []byte("EGR1\x00score bytes"), Digest: [2]uint64{3, 9},
		Answered: []Answered{{Seq: 4, LatencyNS: 12e6, Attempts: 2, Hits: 10, Short: true}},
		Failed:   []Failed{{Seq: 1, QueryID: "q1", Attempts: 5, Error: "HTTP 503"}}}
	res.Stats.RunQueries, res.Stats.MissingFromRun = 1, 1
	b, err := res.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := got.MarshalBinary()
	if !bytes.Equal(b, again) || !bytes.Equal(got.Score, res.Score) || got.Failed[0].Error != "HTTP 503" {
		t.Fatalf("round trip: %+v", got)
	}
	for n := 0; n < len(b); n++ {
		if _, err := DecodeResult(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a result cut at %d bytes: %v", n, err)
		}
	}
}

// count decides as a join of a run file would: answered queries are in
// the run, failed ones missing from it.
func TestCountFollowsTheJoin(t *testing.T) {
	task := &Task{RelLevel: 1, FailedSeq: 100}
	q := &Query{Seq: 5, ID: "q5", Grades: []int32{2, 0}}
	noRel := &Query{Seq: 6, ID: "q6", Grades: []int32{0}}
	ok := &Record{QueryID: "q5", IDs: []string{"a", "b"}}
	failed := &Record{QueryID: "q5", Error: "boom"}

	var res Result
	if seq, ids := res.count(task, q, ok); seq != 5 || len(ids) != 2 {
		t.Fatalf("answered: seq %d ids %v", seq, ids)
	}
	if seq, ids := res.count(task, q, failed); seq != 105 || ids != nil {
		t.Fatalf("failed: seq %d ids %v", seq, ids)
	}
	if seq, _ := res.count(task, noRel, &Record{QueryID: "q6"}); seq != 6 {
		t.Fatalf("no relevant document, scored: seq %d", seq)
	}
	s := res.Stats
	if s.RunQueries != 2 || s.ScoredQueries != 3 || s.RunEntries != 2 || s.MissingFromRun != 1 || s.MissingScored != 1 || s.NoRelevant != 1 {
		t.Fatalf("stats %+v", s)
	}

	skip := &Task{RelLevel: 1, SkipNoRelevant: true, OnlyRunQueries: true}
	var res2 Result
	if seq, _ := res2.count(skip, noRel, &Record{QueryID: "q6"}); seq != -1 {
		t.Fatal("--skip-no-relevant scored a query without a relevant document")
	}
	if seq, _ := res2.count(skip, q, failed); seq != -1 {
		t.Fatal("--only-run-queries scored a failed query")
	}
	if s := res2.Stats; s.NoRelevantSkipped != 1 || s.MissingFromRun != 1 || s.ScoredQueries != 0 || s.RunQueries != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestWriteRun(t *testing.T) {
	recs := []*Record{
		{QueryID: "q1", IDs: []string{"d2", "d1"}, Scores: []float64{1.5, 2.25}},
		{QueryID: "q2", Error: "no answer"},
		{QueryID: "q3", IDs: []string{"d9", "d8", "d7"}},
		{QueryID: "q4"},
	}
	var b bytes.Buffer
	if err := WriteRun(&b, schema.FormatTREC, "bm25", recs); err != nil {
		t.Fatal(err)
	}
	want := "q1 Q0 d2 1 1.5 bm25\nq1 Q0 d1 2 2.25 bm25\nq3 Q0 d9 1 3 bm25\nq3 Q0 d8 2 2 bm25\nq3 Q0 d7 3 1 bm25\n"
	if b.String() != want {
		t.Fatalf("TREC:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteRun(&b, schema.FormatJSONL, "", recs); err != nil {
		t.Fatal(err)
	}
	want = `{"query_id":"q1","retrieved":[{"id":"d2","score":1.5},{"id":"d1","score":2.25}]}
{"query_id":"q3","retrieved_ids":["d9","d8","d7"]}
{"query_id":"q4","retrieved_ids":[]}
`
	if b.String() != want {
		t.Fatalf("JSONL:\n%s\nwant\n%s", b.String(), want)
	}
	err := WriteRun(&b, schema.FormatTREC, "x", []*Record{{QueryID: "q1", IDs: []string{"a doc"}}})
	if err == nil || !strings.Contains(err.Error(), "save as .jsonl") {
		t.Fatalf("a doc id with a space in TREC text: %v", err)
	}
}
