package retriever

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

// Each example of examples/retrievers is loaded with its URL variables
// pointing at a test server that checks the request as the engine would
// receive it and answers in the shape of the engine's documentation.

// exampleQuery holds quotes and a backslash, which every body must escape.
var exampleQuery = Query{ID: "q-17", Text: `what is "RAG" \ retrieval?`, Tags: []string{"category=legal"}, K: 3}

func loadExample(t *testing.T, name string, env map[string]string) *Client {
	t.Helper()
	c, err := Load(filepath.Join("..", "examples", "retrievers", name), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	return newTestClient(t, c, fastBackoff)
}

// requestError answers 400 with what the check found, which the test
// then reports through the client's error.
func requestError(w http.ResponseWriter, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), http.StatusBadRequest)
}

// checkPOST checks the method, path, JSON content type and a header of a
// request, and decodes its JSON body into v.
func checkPOST(w http.ResponseWriter, r *http.Request, body []byte, path, header, value string, v any) bool {
	switch {
	case r.Method != "POST" || r.URL.Path != path:
		requestError(w, "want POST %s, got %s %s", path, r.Method, r.URL.Path)
	case r.Header.Get("Content-Type") != "application/json":
		requestError(w, "Content-Type %q", r.Header.Get("Content-Type"))
	case header != "" && r.Header.Get(header) != value:
		requestError(w, "%s: %q, want %q", header, r.Header.Get(header), value)
	case json.Unmarshal(body, v) != nil:
		requestError(w, "body is not JSON: %s", body)
	default:
		return true
	}
	return false
}

func wantHits(t *testing.T, ans Answer, err error, want []Hit) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ans.Hits) != fmt.Sprint(want) {
		t.Errorf("hits %v, want %v", ans.Hits, want)
	}
}

func TestExampleElasticsearch(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var req struct {
			Query struct {
				Match struct {
					Text string `json:"text"`
				} `json:"match"`
			} `json:"query"`
			Size   int  `json:"size"`
			Source bool `json:"_source"`
		}
		if !checkPOST(w, r, body, "/chunks/_search", "Authorization", "ApiKey VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw==", &req) {
			return
		}
		if req.Query.Match.Text != exampleQuery.Text || req.Size != 3 || req.Source {
			requestError(w, "body %s", body)
			return
		}
		// The shape of a _search answer (Elasticsearch reference, Search API).
		fmt.Fprint(w, `{"took": 5, "timed_out": false,
			"_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
			"hits": {"total": {"value": 20, "relation": "eq"}, "max_score": 1.3862942,
				"hits": [
					{"_index": "chunks", "_id": "doc-7", "_score": 1.3862942},
					{"_index": "chunks", "_id": "doc-2", "_score": 1.1},
					{"_index": "chunks", "_id": "doc-9", "_score": 0.2876821}]}}`)
	})
	cl := loadExample(t, "elasticsearch.yaml", map[string]string{"ES_URL": srv.URL, "ES_API_KEY": "VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw=="})
	ans, err := cl.Retrieve(context.Background(), exampleQuery)
	wantHits(t, ans, err, []Hit{{"doc-7", 1.3862942, true}, {"doc-2", 1.1, true}, {"doc-9", 0.2876821, true}})
}

func TestExampleOpenSearch(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var req struct {
			Size   int  `json:"size"`
			Source bool `json:"_source"`
			Query  struct {
				Neural map[string]struct {
					QueryText string `json:"query_text"`
					ModelID   string `json:"model_id"`
					K         int    `json:"k"`
				} `json:"neural"`
			} `json:"query"`
		}
		if !checkPOST(w, r, body, "/chunks/_search", "Authorization", "Basic YWRtaW46YWRtaW4=", &req) {
			return
		}
		nq, ok := req.Query.Neural["passage_embedding"]
		if !ok || nq.QueryText != exampleQuery.Text || nq.ModelID != "aVeifpQB-y2x8Ij5zjFN" || nq.K != 3 || req.Size != 3 {
			requestError(w, "body %s", body)
			return
		}
		fmt.Fprint(w, `{"took": 26, "timed_out": false,
			"_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
			"hits": {"total": {"value": 2, "relation": "eq"}, "max_score": 0.52,
				"hits": [
					{"_index": "chunks", "_id": "1775029934", "_score": 0.52},
					{"_index": "chunks", "_id": "2664027745", "_score": 0.48}]}}`)
	})
	cl := loadExample(t, "opensearch.yaml", map[string]string{"OPENSEARCH_URL": srv.URL, "OPENSEARCH_AUTH": "YWRtaW46YWRtaW4=", "OPENSEARCH_MODEL_ID": "aVeifpQB-y2x8Ij5zjFN"})
	ans, err := cl.Retrieve(context.Background(), exampleQuery)
	wantHits(t, ans, err, []Hit{{"1775029934", 0.52, true}, {"2664027745", 0.48, true}})
	if !ans.Short {
		t.Error("2 hits for k 3 is short")
	}
}

// qdrantPoints is a Query API answer (Qdrant API reference, query-points):
// integer and UUID ids.
const qdrantPoints = `{"result": {"points": [
	{"id": 42, "version": 3, "score": 7.25},
	{"id": "5c56c793-69f3-4fbf-87e6-c4bf54c28c26", "version": 1, "score": 6.5},
	{"id": 9007199254740993, "version": 8, "score": 1.5}]},
	"status": "ok", "time": 0.002}`

var qdrantHits = []Hit{{"42", 7.25, true}, {"5c56c793-69f3-4fbf-87e6-c4bf54c28c26", 6.5, true}, {"9007199254740993", 1.5, true}}

func TestExampleQdrant(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var req struct {
			Query struct {
				Text  string `json:"text"`
				Model string `json:"model"`
			} `json:"query"`
			Using       string `json:"using"`
			Limit       int    `json:"limit"`
			WithPayload bool   `json:"with_payload"`
		}
		if !checkPOST(w, r, body, "/collections/chunks/points/query", "api-key", "qk-123", &req) {
			return
		}
		if req.Query.Text != exampleQuery.Text || req.Query.Model != "qdrant/bm25" || req.Using != "bm25" || req.Limit != 3 || req.WithPayload {
			requestError(w, "body %s", body)
			return
		}
		fmt.Fprint(w, qdrantPoints)
	})
	cl := loadExample(t, "qdrant.yaml", map[string]string{"QDRANT_URL": srv.URL, "QDRANT_API_KEY": "qk-123"})
	ans, err := cl.Retrieve(context.Background(), exampleQuery)
	wantHits(t, ans, err, qdrantHits)
}

func TestExampleWeaviate(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var req struct {
			Query string `json:"query"`
		}
		if !checkPOST(w, r, body, "/v1/graphql", "Authorization", "Bearer wv-key", &req) {
			return
		}
		text, _ := json.Marshal(exampleQuery.Text) // a GraphQL string is written as a JSON one
		want := fmt.Sprintf(`{ Get { Chunk(nearText: {concepts: [%s]}, limit: 3) { _additional { id distance } } } }`, text)
		if req.Query != want {
			requestError(w, "GraphQL query %s, want %s", req.Query, want)
			return
		}
		// A GraphQL Get answer (Weaviate reference, additional properties).
		fmt.Fprint(w, `{"data": {"Get": {"Chunk": [
			{"_additional": {"distance": 0.1189, "id": "36ddd591-2dee-4e7e-a3cc-eb86d30a4303"}},
			{"_additional": {"distance": 0.1432, "id": "a2f0d9d1-7c43-4b8e-9f53-0d6d8c4a5b1e"}}]}}}`)
	})
	cl := loadExample(t, "weaviate.yaml", map[string]string{"WEAVIATE_URL": srv.URL, "WEAVIATE_API_KEY": "wv-key"})
	ans, err := cl.Retrieve(context.Background(), exampleQuery)
	wantHits(t, ans, err, []Hit{{"36ddd591-2dee-4e7e-a3cc-eb86d30a4303", 0.1189, true}, {"a2f0d9d1-7c43-4b8e-9f53-0d6d8c4a5b1e", 0.1432, true}})
}

func TestExampleVespa(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var req struct {
			YQL     string `json:"yql"`
			Query   string `json:"query"`
			Hits    int    `json:"hits"`
			Ranking string `json:"ranking"`
		}
		if !checkPOST(w, r, body, "/search/", "", "", &req) {
			return
		}
		if !strings.Contains(req.YQL, "userQuery()") || req.Hits != 3 || req.Ranking != "bm25" {
			requestError(w, "body %s", body)
			return
		}
		if req.Query == "nothing matches" {
			// Vespa leaves children out when no document matches.
			fmt.Fprint(w, `{"root": {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": 0},
				"coverage": {"coverage": 100, "documents": 1000, "full": true, "nodes": 1, "results": 1, "resultsFull": 1}}}`)
			return
		}
		// The default JSON result format (Vespa reference).
		fmt.Fprint(w, `{"root": {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": 2},
			"coverage": {"coverage": 100, "documents": 1000, "full": true, "nodes": 1, "results": 1, "resultsFull": 1},
			"children": [
				{"id": "id:mynamespace:chunk::doc-17", "relevance": 0.254, "source": "content",
				 "fields": {"sddocname": "chunk", "documentid": "id:mynamespace:chunk::doc-17"}},
				{"id": "id:mynamespace:chunk:g=tenant-a:doc:4", "relevance": 0.19, "source": "content",
				 "fields": {"sddocname": "chunk", "documentid": "id:mynamespace:chunk:g=tenant-a:doc:4"}}]}}`)
	})
	cl := loadExample(t, "vespa.yaml", map[string]string{"VESPA_URL": srv.URL})
	ans, err := cl.Retrieve(context.Background(), exampleQuery)
	wantHits(t, ans, err, []Hit{{"doc-17", 0.254, true}, {"doc:4", 0.19, true}})
	ans, err = cl.Retrieve(context.Background(), Query{ID: "q-none", Text: "nothing matches", K: 3})
	if err != nil || len(ans.Hits) != 0 || !ans.Short {
		t.Errorf("no match: %+v, %v", ans, err)
	}
}

// openAIEmbedding is a POST /v1/embeddings answer (OpenAI API reference).
const openAIEmbedding = `{"object": "list",
	"data": [{"object": "embedding", "index": 0, "embedding": [0.0023064255, -0.009327292, 1e-3, 0.015797347]}],
	"model": "%s", "usage": {"prompt_tokens": 8, "total_tokens": 8}}`

// The vector as the search request must carry it: the same numbers, the
// same text.
const openAIVector = `[0.0023064255,-0.009327292,1e-3,0.015797347]`

// checkEmbeddings checks an embeddings request and answers it.
func checkEmbeddings(w http.ResponseWriter, r *http.Request, body []byte, path, header, value, model string) {
	var req struct {
		Model string `json:"model"`
		Input string `json:"input"`
	}
	if !checkPOST(w, r, body, path, header, value, &req) {
		return
	}
	if req.Model != model || req.Input != exampleQuery.Text {
		requestError(w, "embeddings body %s", body)
		return
	}
	fmt.Fprintf(w, openAIEmbedding, model)
}

func TestExamplePgvectorAPI(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if r.URL.Path == "/v1/embeddings" {
			checkEmbeddings(w, r, body, "/v1/embeddings", "", "", "nomic-embed-text")
			return
		}
		var req struct {
			Embedding json.RawMessage `json:"embedding"`
			Limit     int             `json:"limit"`
		}
		if !checkPOST(w, r, body, "/search", "Authorization", "Bearer st-1", &req) {
			return
		}
		if string(req.Embedding) != openAIVector || req.Limit != 3 {
			requestError(w, "search body %s", body)
			return
		}
		fmt.Fprint(w, `{"results": [{"chunk_id": 1017, "distance": 0.18}, {"chunk_id": 88, "distance": 0.2}, {"chunk_id": 1017000000000000001, "distance": 0.31}]}`)
	})
	cl := loadExample(t, "pgvector-api.yaml", map[string]string{"EMBED_URL": srv.URL, "SEARCH_URL": srv.URL, "SEARCH_TOKEN": "st-1"})
	ans, err := cl.Retrieve(context.Background(), exampleQuery)
	wantHits(t, ans, err, []Hit{{"1017", 0.18, true}, {"88", 0.2, true}, {"1017000000000000001", 0.31, true}})
	if ans.Attempts != 2 || ans.EmbedLatency <= 0 || ans.Latency <= ans.EmbedLatency || srv.requests() != 2 {
		t.Errorf("answer %+v after %d requests", ans, srv.requests())
	}
}

func TestExampleOpenAIEmbeddingsQdrant(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if r.URL.Path == "/v1/embeddings" {
			checkEmbeddings(w, r, body, "/v1/embeddings", "Authorization", "Bearer sk-test-abc", "text-embedding-3-small")
			return
		}
		var req struct {
			Query json.RawMessage `json:"query"`
			Limit int             `json:"limit"`
		}
		if !checkPOST(w, r, body, "/collections/chunks/points/query", "api-key", "", &req) {
			return
		}
		if string(req.Query) != openAIVector || req.Limit != 3 {
			requestError(w, "search body %s", body)
			return
		}
		fmt.Fprint(w, qdrantPoints)
	})
	cl := loadExample(t, "openai-embeddings-qdrant.yaml", map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-test-abc", "QDRANT_URL": srv.URL})
	ans, err := cl.Retrieve(context.Background(), exampleQuery)
	wantHits(t, ans, err, qdrantHits)
}

// TestEmbedFailures: a failing embeddings request fails the query at the
// embed step; an embeddings answer without the vector is a shape error on
// embed.vector.
func TestEmbedFailures(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/down/"):
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case strings.HasPrefix(r.URL.Path, "/odd/"):
			fmt.Fprint(w, `{"data": [{"embedding": "base64…"}]}`)
		default:
			http.Error(w, "the search must not be asked", 500)
		}
	})
	for _, tc := range []struct{ prefix, want string }{{"/down", "embed request: 2 attempts, last answer HTTP 503"}, {"/odd", "data[0].embedding is not a list of numbers: found the string"}} {
		cl := loadExample(t, "pgvector-api.yaml", map[string]string{"EMBED_URL": srv.URL + tc.prefix, "SEARCH_URL": srv.URL, "SEARCH_TOKEN": "x"})
		cl.cfg.Retries = 1
		_, err := cl.Retrieve(context.Background(), exampleQuery)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.prefix, err, tc.want)
		}
		var qe *QueryError
		var ie *schema.InputError
		switch tc.prefix {
		case "/down":
			if !errors.As(err, &qe) || qe.Step != StepEmbed {
				t.Errorf("%s: %v is not a QueryError of the embed step", tc.prefix, err)
			}
		case "/odd":
			if !errors.As(err, &ie) || ie.Field != "embed.vector" || ie.Line != int64(cl.cfg.Line("embed.vector")) || ie.Line == 0 {
				t.Errorf("%s: %v is not an InputError on embed.vector", tc.prefix, err)
			}
		}
	}
	if srv.requests() != 3 {
		t.Errorf("%d requests, want 3 (the search never asked)", srv.requests())
	}
}
