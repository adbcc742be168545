package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// benchCompletion is a chat completion as OpenAI writes it.
const benchCompletion = `{"id":"chatcmpl-AbCdEf","object":"chat.completion","created":1735689600,"model":"gpt-4o-mini-2024-07-18",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"grade\": 2, \"reason\": \"The passage gives the boiling point but not at altitude.\"}","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":412,"completion_tokens":21,"total_tokens":433,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},` +
	`"system_fingerprint":"fp_0123456789"}`

// benchPair has a passage of a typical chunk's length (about 1,000
// characters).
var benchPair = Pair{QueryID: "q-1", Query: `how do I rotate "API keys" in prod?`, DocID: "doc-000123", Title: "Key rotation",
	Passage: strings.Repeat("Rotate keys with the secrets manager: create the new key, deploy it, then revoke the old one. ", 11)}

// BenchmarkRequest: the client's work to build one request: rendering
// the prompt and encoding the body.
func BenchmarkRequest(b *testing.B) {
	c := testConfig(b, "http://localhost", "")
	b.ReportAllocs()
	for b.Loop() {
		msgs, err := c.messages(benchPair)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.body(msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJudge: one pair end to end against a local server that
// answers at once, in parallel (client and server share the CPU: ns/op
// is an upper bound of the client's cost per pair; a real model takes
// 100 ms to seconds).
func BenchmarkJudge(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(benchCompletion))
	}))
	b.Cleanup(srv.Close)
	cl, err := NewClient(testConfig(b, srv.URL, "concurrency: 8\n"), ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			j, err := cl.Judge(context.Background(), benchPair)
			if err != nil || j.Grade != 2 {
				b.Error(j, err)
				return
			}
		}
	})
}
