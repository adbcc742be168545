package retrieval

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retriever"
)

// TestRunReplaysStoredAnswers: a second attempt at a task (a redelivery)
// asks the retriever only for the queries without a stored answer and
// gives the same bytes, even when the retriever would now answer
// differently.
func TestRunReplaysStoredAnswers(t *testing.T) {
	var requests, version atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		q := r.URL.Query().Get("q")
		fmt.Fprintf(w, `{"hits":[{"id":"%s-a%d"},{"id":"rel-%s"}]}`, q, version.Load(), q)
	}))
	defer ts.Close()
	cfg, err := retriever.Parse("search.yaml", []byte("url: "+ts.URL+"/?q={{.QueryID}}\nresults: hits\nid: id\nconcurrency: 3\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := retriever.NewClient(cfg, retriever.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	task := &Task{RelLevel: 1, FailedSeq: 10}
	for i := range 7 {
		id := fmt.Sprintf("q%d", i)
		task.Queries = append(task.Queries, Query{Seq: int64(i), ID: id, Text: "text " + id, Judged: []string{"rel-" + id}, Grades: []int32{1}})
	}
	ms, _ := metric.ParseList([]string{"R@1,RR"})
	sc, err := metric.NewScorer(metric.Config{Measures: ms, RelLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	var answers MemoryAnswers
	env := Env{Client: client, Answers: answers.Task("t"), Scorer: sc}
	first, err := Run(context.Background(), task, env)
	if err != nil {
		t.Fatal(err)
	}
	if requests.Load() != 7 {
		t.Fatalf("%d requests for 7 queries", requests.Load())
	}
	version.Store(1) // the retriever changed its mind
	second, err := Run(context.Background(), task, env)
	if err != nil {
		t.Fatal(err)
	}
	if requests.Load() != 7 || !bytes.Equal(first, second) {
		t.Fatalf("the second attempt asked %d times and gave other bytes", requests.Load()-7)
	}
	res, err := DecodeResult(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Answered) != 7 || res.Stats.RunQueries != 7 || res.Stats.RunEntries != 14 || res.Score == nil {
		t.Fatalf("result %+v", res)
	}
}
