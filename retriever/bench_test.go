package retriever

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// esAnswer100 is an Elasticsearch answer with 100 hits, ids only.
var esAnswer100 = func() []byte {
	var b strings.Builder
	b.WriteString(`{"took": 4, "timed_out": false, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
		"hits": {"total": {"value": 10000, "relation": "gte"}, "max_score": 12.5, "hits": [`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"_index": "chunks", "_id": "doc-%06d", "_score": %.6f}`, i*7919%100000, 12.5-float64(i)*0.1)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}()

func benchConfig(b *testing.B, url string) *Config {
	b.Helper()
	c, err := Parse("bench.yaml", []byte(fmt.Sprintf(`url: %s/chunks/_search
headers:
  Authorization: Bearer ${TOKEN}
body: '{"query": {"match": {"text": {{json .Query}}}}, "size": {{.K}}, "_source": false}'
results: hits.hits
id: _id
score: _score
k: 100
concurrency: 8
`, url)), envOf(map[string]string{"TOKEN": "bench-token"}))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkAnswer: the client's work on one 100-hit answer once it is
// read: JSON decoding and hit extraction.
func BenchmarkAnswer(b *testing.B) {
	c := benchConfig(b, "http://localhost")
	b.SetBytes(int64(len(esAnswer100)))
	b.ReportAllocs()
	for b.Loop() {
		root, err := decodeJSON(esAnswer100)
		if err != nil {
			b.Fatal(err)
		}
		if hits, se := c.hitsAt(root, 100); se != nil || len(hits) != 100 {
			b.Fatal(se)
		}
	}
}

// BenchmarkRender: rendering the request of one query.
func BenchmarkRender(b *testing.B) {
	c := benchConfig(b, "http://localhost")
	cl := &Client{cfg: c}
	data := queryData{Query: `how do I rotate "API keys" in prod?`, QueryID: "q-1", K: 100, Tags: map[string]string{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cl.render(&c.search, "q-1", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRetrieve: one query end to end against a local server that
// answers 100 hits at once, in parallel (client and server share the
// CPU: ns/op is an upper bound of the client's cost per query).
func BenchmarkRetrieve(b *testing.B) {
	srv := newBenchServer(b)
	cl, err := NewClient(benchConfig(b, srv), ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	q := Query{ID: "q-1", Text: `how do I rotate "API keys" in prod?`}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cl.Retrieve(context.Background(), q); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func newBenchServer(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(esAnswer100)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}
