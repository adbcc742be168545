package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalgate/evalgate/schema"
)

// chatServer is an OpenAI-compatible chat completions server for tests:
// it checks the wire protocol (POST {base}/v1/chat/completions, a JSON
// body with model and messages), counts requests in flight and in total,
// records each request, and lets the test's handler answer.
type chatServer struct {
	*httptest.Server
	mu          sync.Mutex
	n           int
	inFlight    int
	maxInFlight int
	times       []time.Time
	reqs        []seenRequest
}

// seenRequest is a request as the server received it.
type seenRequest struct {
	Header http.Header
	Path   string
	Query  string
	Raw    string
	Body   struct {
		Model               string          `json:"model"`
		Messages            []message       `json:"messages"`
		Temperature         *float64        `json:"temperature"`
		MaxTokens           *int            `json:"max_tokens"`
		MaxCompletionTokens *int            `json:"max_completion_tokens"`
		Seed                *int64          `json:"seed"`
		ResponseFormat      json.RawMessage `json:"response_format"`
		Stream              bool            `json:"stream"`
	}
	Members map[string]json.RawMessage // every top-level member
}

// prompt returns the content of the request's first user message.
func (r seenRequest) prompt() string {
	for _, m := range r.Body.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

func newChatServer(t testing.TB, h func(w http.ResponseWriter, r *http.Request, n int, req seenRequest)) *chatServer {
	t.Helper()
	s := &chatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := seenRequest{Header: r.Header.Clone(), Path: r.URL.Path, Query: r.URL.RawQuery, Raw: string(raw)}
		s.mu.Lock()
		s.n++
		n := s.n
		s.inFlight++
		s.maxInFlight = max(s.maxInFlight, s.inFlight)
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}()
		switch {
		case r.URL.Path != "/v1/chat/completions" && !strings.HasPrefix(r.URL.Path, "/openai/deployments/"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"detail":"Not Found"}`)
			return
		case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
			apiErrorAnswer(w, 400, fmt.Sprintf("want POST with JSON, got %s %q", r.Method, r.Header.Get("Content-Type")), "invalid_request_error", "", "")
			return
		case json.Unmarshal(raw, &req.Body) != nil || json.Unmarshal(raw, &req.Members) != nil:
			apiErrorAnswer(w, 400, "body is not JSON: "+string(raw), "invalid_request_error", "", "")
			return
		case req.Body.Model == "" || len(req.Body.Messages) == 0 || req.Body.Stream:
			apiErrorAnswer(w, 400, "model and messages are required, stream unsupported", "invalid_request_error", "", "")
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		h(w, r, n, req)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *chatServer) peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

func (s *chatServer) arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

func (s *chatServer) seen() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.reqs...)
}

// complete writes a chat completion as OpenAI does.
func complete(w http.ResponseWriter, content string, u Usage) {
	completeWith(w, content, "stop", u)
}

func completeWith(w http.ResponseWriter, content, finish string, u Usage) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-123", "object": "chat.completion", "created": 1735689600, "model": "gpt-4o-mini-2024-07-18",
		"system_fingerprint": "fp_0123456789",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content, "refusal": nil},
			"logprobs": nil, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Total},
	})
}

// apiErrorAnswer writes an OpenAI error body.
func apiErrorAnswer(w http.ResponseWriter, status int, msg, typ, code, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

const testKey = "sk-test-0123456789abcdef"

var testEnv = envOf(map[string]string{"OPENAI_API_KEY": testKey})

// testConfig parses an LLM file for srv with the given extra keys.
func testConfig(t testing.TB, srvURL, extra string) *Config {
	t.Helper()
	file := fmt.Sprintf("base_url: %s/v1\nmodel: gpt-4o-mini\napi_key: ${OPENAI_API_KEY}\ntimeout: 2s\n%s", srvURL, extra)
	c, err := Parse("llm.yaml", []byte(file), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fastBackoff keeps retries quick in tests.
var fastBackoff = ClientOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}

func newTestClient(t testing.TB, c *Config, opts ClientOptions) *Client {
	t.Helper()
	cl, err := NewClient(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

var testPair = Pair{QueryID: "q1", Query: `what is "RAG"?`, DocID: "d7", Title: "Retrieval", Passage: "RAG grounds a language model in retrieved <documents>."}

func TestJudge(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		complete(w, `{"grade": 3, "reason": "Defines RAG."}`, Usage{412, 17, 429})
	})
	cl := newTestClient(t, testConfig(t, srv.URL, ""), fastBackoff)
	j, err := cl.Judge(context.Background(), testPair)
	if err != nil {
		t.Fatal(err)
	}
	want := Judgment{QueryID: "q1", DocID: "d7", Grade: 3, Reason: "Defines RAG.", Model: "gpt-4o-mini", PromptSHA256: DefaultPromptSHA256,
		ServedModel: "gpt-4o-mini-2024-07-18", Usage: Usage{412, 17, 429}, Latency: j.Latency, Asks: 1, Attempts: 1}
	if j != want || j.Latency <= 0 {
		t.Errorf("judgment\n%+v\nwant\n%+v", j, want)
	}
	reqs := srv.seen()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+testKey || r.Header.Get("Accept") != "application/json" {
		t.Errorf("path %s, headers %v", r.Path, r.Header)
	}
	b := r.Body
	if b.Model != "gpt-4o-mini" || b.Temperature == nil || *b.Temperature != 0 || b.MaxTokens == nil || *b.MaxTokens != DefaultMaxTokens ||
		b.MaxCompletionTokens != nil || b.Seed != nil || b.ResponseFormat != nil {
		t.Errorf("body %s", r.Raw)
	}
	if len(b.Messages) != 1 || b.Messages[0].Role != "user" {
		t.Fatalf("messages %+v", b.Messages)
	}
	for _, s := range []string{"<query>\nwhat is \"RAG\"?\n</query>", "<passage>\nRetrieval\n\nRAG grounds a language model in retrieved <documents>.\n</passage>", "0 to 3"} {
		if !strings.Contains(b.Messages[0].Content, s) {
			t.Errorf("prompt lacks %q:\n%s", s, b.Messages[0].Content)
		}
	}
	for _, m := range []string{"model", "messages", "temperature", "max_tokens"} {
		if _, ok := r.Members[m]; !ok {
			t.Errorf("request lacks %s", m)
		}
	}
	if len(r.Members) != 4 {
		t.Errorf("request members %v, want model, messages, temperature, max_tokens", r.Members)
	}
}

// TestJudgeNoTitle: the default prompt leaves the title line out.
func TestJudgeNoTitle(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		complete(w, "2", Usage{})
	})
	p := testPair
	p.Title = ""
	j, err := newTestClient(t, testConfig(t, srv.URL, ""), fastBackoff).Judge(context.Background(), p)
	if err != nil || j.Grade != 2 || j.Usage != (Usage{}) {
		t.Fatalf("%+v %v", j, err)
	}
	if got := srv.seen()[0].prompt(); !strings.Contains(got, "<passage>\nRAG grounds") {
		t.Errorf("prompt:\n%s", got)
	}
}

// TestJudgeAsksAgain: an answer without a grade (or off the scale) is
// asked once more with the answer and a reminder appended; the usage of
// both answers is summed.
func TestJudgeAsksAgain(t *testing.T) {
	for _, first := range []string{"The passage is relevant.", `{"grade": 4, "reason": "very"}`, ""} {
		srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
			if n == 1 {
				complete(w, first, Usage{400, 10, 410})
				return
			}
			complete(w, `{"grade": 1, "reason": "on topic"}`, Usage{430, 8, 438})
		})
		var attempts []Attempt
		var mu sync.Mutex
		opts := fastBackoff
		opts.Observe = func(a Attempt) { mu.Lock(); attempts = append(attempts, a); mu.Unlock() }
		j, err := newTestClient(t, testConfig(t, srv.URL, ""), opts).Judge(context.Background(), testPair)
		if err != nil {
			t.Fatalf("%q: %v", first, err)
		}
		if j.Grade != 1 || j.Reason != "on topic" || j.Asks != 2 || j.Attempts != 2 || j.Usage != (Usage{830, 18, 848}) {
			t.Errorf("%q: %+v", first, j)
		}
		reqs := srv.seen()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		m := reqs[1].Body.Messages
		if len(m) != 3 || m[0] != reqs[0].Body.Messages[0] || m[1] != (message{"assistant", first}) || m[2].Role != "user" ||
			!strings.Contains(m[2].Content, "integer from 0 to 3") {
			t.Errorf("%q: second request's messages %+v", first, m)
		}
		if len(attempts) != 2 || attempts[0].Ask != 1 || attempts[1].Ask != 2 || attempts[0].Err != nil || attempts[1].Usage != (Usage{430, 8, 438}) {
			t.Errorf("%q: observed %+v", first, attempts)
		}
	}
}

// TestJudgeFails: two answers without a grade are a failed judgment, a
// *GradeError, never a grade of 0; the tokens are still counted.
func TestJudgeFails(t *testing.T) {
	tests := []struct {
		answers []string
		finish  string
		want    error
		msg     string
	}{
		{[]string{"Relevant, I think.", "Still thinking about it."}, "stop", ErrNoGrade, `asked twice, no grade: no grade in the answer: answer "Still thinking about it."`},
		{[]string{`{"grade": 5}`, `{"grade": 7}`}, "stop", ErrBadGrade, "the grade 7 is outside 0..3"},
		{[]string{`{"grade": 2.5}`, `{"grade": "high"}`}, "stop", ErrBadGrade, `the grade "high" is not a number`},
		{[]string{"<think>The user asks", "<think>Let me see"}, "length", ErrNoGrade, "cut at max_tokens: raise max_tokens"},
	}
	for _, tc := range tests {
		srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
			completeWith(w, tc.answers[min(n, 2)-1], tc.finish, Usage{100, 5, 105})
		})
		j, err := newTestClient(t, testConfig(t, srv.URL, ""), fastBackoff).Judge(context.Background(), testPair)
		var ge *GradeError
		if !errors.As(err, &ge) || !errors.Is(err, tc.want) || IsJobFatal(err) {
			t.Fatalf("%v: error %v", tc.answers, err)
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), `judge query "q1" document "d7": `) {
			t.Errorf("error text %q, want %q", err, tc.msg)
		}
		if ge.FinishReason != tc.finish || ge.Answer != tc.answers[1] {
			t.Errorf("GradeError %+v", ge)
		}
		if j.Grade != NoGrade || j.Reason != "" || j.Asks != 2 || j.Attempts != 2 || j.Usage != (Usage{200, 10, 210}) || srv.requests() != 2 {
			t.Errorf("judgment %+v, %d requests", j, srv.requests())
		}
	}
}

func TestRetry429RetryAfter(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			apiErrorAnswer(w, 429, "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3.", "requests", "rate_limit_exceeded", "")
			return
		}
		complete(w, `{"grade": 0}`, Usage{10, 2, 12})
	})
	var attempts []Attempt
	var mu sync.Mutex
	opts := fastBackoff
	opts.Observe = func(a Attempt) { mu.Lock(); attempts = append(attempts, a); mu.Unlock() }
	j, err := newTestClient(t, testConfig(t, srv.URL, "retries: 2\n"), opts).Judge(context.Background(), testPair)
	if err != nil || j.Grade != 0 || j.Attempts != 2 || j.Usage != (Usage{10, 2, 12}) {
		t.Fatalf("%+v %v", j, err)
	}
	times := srv.arrivals()
	if gap := times[1].Sub(times[0]); gap < time.Second {
		t.Errorf("retried after %s, before the Retry-After of 1s", gap)
	}
	if len(attempts) != 2 || !attempts[0].RateLimited || !attempts[0].Retry || attempts[0].Class() != "4xx" || attempts[1].Class() != "2xx" ||
		attempts[1].Retry || attempts[1].Elapsed != j.Latency {
		t.Errorf("observed %+v", attempts)
	}
}

// TestRetryAfterMs: OpenAI's and Azure's Retry-After-Ms wins over
// Retry-After.
func TestRetryAfterMs(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		if n == 1 {
			w.Header().Set("Retry-After-Ms", "300")
			w.Header().Set("Retry-After", "30")
			apiErrorAnswer(w, 429, "Requests to the ChatCompletions_Create Operation have exceeded the call rate limit.", "", "429", "")
			return
		}
		complete(w, "3", Usage{})
	})
	start := time.Now()
	if _, err := newTestClient(t, testConfig(t, srv.URL, "max_retry_after: 10s\n"), fastBackoff).Judge(context.Background(), testPair); err != nil {
		t.Fatal(err)
	}
	times := srv.arrivals()
	if gap := times[1].Sub(times[0]); gap < 300*time.Millisecond || time.Since(start) > 10*time.Second {
		t.Errorf("retried after %s, want 300ms", gap)
	}
}

func TestRetryAfterBeyondCap(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		w.Header().Set("Retry-After", "3600")
		apiErrorAnswer(w, 429, "Rate limit reached for requests per day (RPD)", "requests", "rate_limit_exceeded", "")
	})
	_, err := newTestClient(t, testConfig(t, srv.URL, "max_retry_after: 30s\n"), fastBackoff).Judge(context.Background(), testPair)
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, ErrRetryAfterTooLong) || ce.Attempts != 1 || ce.Status != 429 || IsJobFatal(err) {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(err.Error(), "retry after 1h0m0s, more than max_retry_after 30s") || srv.requests() != 1 {
		t.Errorf("error %v, %d requests", err, srv.requests())
	}
}

// TestQuotaNotRetried: a 429 insufficient_quota is not a rate limit.
func TestQuotaNotRetried(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		apiErrorAnswer(w, 429, "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota", "")
	})
	_, err := newTestClient(t, testConfig(t, srv.URL, "retries: 3\n"), fastBackoff).Judge(context.Background(), testPair)
	if !errors.Is(err, ErrQuota) || !IsJobFatal(err) || srv.requests() != 1 {
		t.Fatalf("error %v, %d requests", err, srv.requests())
	}
}

func TestRetry5xxThenSuccess(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		switch n {
		case 1:
			apiErrorAnswer(w, 500, "The server had an error while processing your request.", "server_error", "", "")
		case 2:
			http.Error(w, "upstream connect error", http.StatusServiceUnavailable)
		default:
			complete(w, `{"grade": 2}`, Usage{5, 1, 6})
		}
	})
	j, err := newTestClient(t, testConfig(t, srv.URL, "retries: 2\n"), fastBackoff).Judge(context.Background(), testPair)
	if err != nil || j.Grade != 2 || j.Attempts != 3 || srv.requests() != 3 {
		t.Fatalf("%+v %v, %d requests", j, err, srv.requests())
	}
}

func TestRetriesExhausted(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		apiErrorAnswer(w, 503, "The engine is currently overloaded, please try again later.", "server_error", "", "")
	})
	j, err := newTestClient(t, testConfig(t, srv.URL, "retries: 3\n"), fastBackoff).Judge(context.Background(), testPair)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Err != nil || ce.Status != 503 || ce.Attempts != 4 || j.Attempts != 4 || j.Grade != NoGrade || srv.requests() != 4 {
		t.Fatalf("error %v (%+v), judgment %+v", err, ce, j)
	}
	want := `judge query "q1" document "d7": 4 attempts, last answer HTTP 503 Service Unavailable: the server says "The engine is currently overloaded, please try again later." (type server_error)`
	if err.Error() != want || IsJobFatal(err) {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
}

func TestTimeoutRetried(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		if n <= 2 {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done(): // the client gave up
			}
			return
		}
		complete(w, `{"grade": 1}`, Usage{})
	})
	c := testConfig(t, srv.URL, "retries: 1\n")
	c.Timeout = 100 * time.Millisecond
	_, err := newTestClient(t, c, fastBackoff).Judge(context.Background(), testPair)
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, ErrTimeout) || ce.Attempts != 2 || ce.Status != 0 || IsJobFatal(err) {
		t.Fatalf("error %v", err)
	}
	if want := `judge query "q1" document "d7": 2 attempts, last error: no answer within the timeout of 100ms`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	// The third request is answered: with retries left, a timeout passes.
	j, err := newTestClient(t, c, fastBackoff).Judge(context.Background(), testPair)
	if err != nil || j.Grade != 1 || j.Attempts != 1 {
		t.Errorf("%+v %v", j, err)
	}
}

// TestModelNotFound: a wrong model name is told apart from a wrong
// base_url, in each server's dialect, and is not retried.
func TestModelNotFound(t *testing.T) {
	tests := map[string]func(w http.ResponseWriter){
		"openai": func(w http.ResponseWriter) {
			apiErrorAnswer(w, 404, "The model `gpt-4o-mni` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found", "")
		},
		"vllm": func(w http.ResponseWriter) {
			w.WriteHeader(404)
			io.WriteString(w, `{"object":"error","message":"The model `+"`gpt-4o-mni`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`)
		},
		"ollama": func(w http.ResponseWriter) {
			apiErrorAnswer(w, 404, `model "gpt-4o-mni" not found, try pulling it first`, "api_error", "", "")
		},
		"azure": func(w http.ResponseWriter) {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`)
		},
		"litellm": func(w http.ResponseWriter) {
			apiErrorAnswer(w, 400, "Invalid model name passed in model=gpt-4o-mni. Call `/v1/models` to view available models for your key.", "invalid_request_error", "400", "model")
		},
	}
	for name, answer := range tests {
		srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
			answer(w)
		})
		_, err := newTestClient(t, testConfig(t, srv.URL, "retries: 3\n"), fastBackoff).Judge(context.Background(), testPair)
		var ce *CallError
		if !errors.As(err, &ce) || !errors.Is(err, ErrModelNotFound) || !IsJobFatal(err) || ce.Attempts != 1 || srv.requests() != 1 {
			t.Errorf("%s: error %v, %d requests", name, err, srv.requests())
			continue
		}
		if !strings.HasPrefix(err.Error(), `judge query "q1" document "d7": model "gpt-4o-mini" not found: 1 attempt, last answer HTTP 4`) || ce.Message == "" {
			t.Errorf("%s: error text %q", name, err)
		}
	}
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter)
		kind   error
		fatal  bool
	}{
		{"no endpoint", func(w http.ResponseWriter) { http.Error(w, "404 page not found", 404) }, ErrEndpointNotFound, true},
		{"bad key", func(w http.ResponseWriter) {
			apiErrorAnswer(w, 401, "Incorrect API key provided: sk-test-***cdef. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key", "")
		}, ErrUnauthorized, true},
		{"forbidden", func(w http.ResponseWriter) {
			apiErrorAnswer(w, 403, "Country, region, or territory not supported", "request_forbidden", "unsupported_country_region_territory", "")
		}, ErrUnauthorized, true},
		{"context length", func(w http.ResponseWriter) {
			apiErrorAnswer(w, 400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130012 tokens.", "invalid_request_error", "context_length_exceeded", "messages")
		}, ErrContextLength, false},
		{"vllm context length", func(w http.ResponseWriter) {
			w.WriteHeader(400)
			io.WriteString(w, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 4402 tokens (4146 in the messages, 256 in the completion).","type":"BadRequestError","param":null,"code":400}`)
		}, ErrContextLength, false},
		{"unsupported parameter", func(w http.ResponseWriter) {
			apiErrorAnswer(w, 400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "invalid_request_error", "unsupported_parameter", "max_tokens")
		}, ErrRejected, false},
		{"content filter", func(w http.ResponseWriter) {
			apiErrorAnswer(w, 400, "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", "", "content_filter", "prompt")
		}, ErrRejected, false},
		{"html 200", func(w http.ResponseWriter) { io.WriteString(w, "<html>Sign in</html>") }, ErrMalformedAnswer, false},
		{"no choices", func(w http.ResponseWriter) { io.WriteString(w, `{"id": "x", "choices": []}`) }, ErrMalformedAnswer, false},
		{"error with 200", func(w http.ResponseWriter) {
			io.WriteString(w, `{"code":404,"message":"The model `+"`gpt-4o-mini`"+` does not exist.","object":"error","param":null,"type":"NotFoundError"}`)
		}, ErrModelNotFound, true},
	}
	for _, tc := range tests {
		srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) { tc.answer(w) })
		j, err := newTestClient(t, testConfig(t, srv.URL, "retries: 3\n"), fastBackoff).Judge(context.Background(), testPair)
		var ce *CallError
		if !errors.As(err, &ce) || !errors.Is(err, tc.kind) || IsJobFatal(err) != tc.fatal || ce.Attempts != 1 || srv.requests() != 1 || j.Grade != NoGrade {
			t.Errorf("%s: error %v (fatal %v), %d requests", tc.name, err, IsJobFatal(err), srv.requests())
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: error shows the key", tc.name)
		}
	}
}

// TestNoEndpointBase: base_url without /v1 reaches a server whose 404
// names no model: ErrEndpointNotFound.
func TestNoEndpointBase(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) { complete(w, "1", Usage{}) })
	c, err := Parse("llm.yaml", []byte("base_url: "+srv.URL+"/api\nmodel: m\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newTestClient(t, c, fastBackoff).Judge(context.Background(), testPair)
	if !errors.Is(err, ErrEndpointNotFound) {
		t.Errorf("error %v", err)
	}
}

func TestConnectionRefusedRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := newTestClient(t, testConfig(t, url, "retries: 2\n"), fastBackoff).Judge(context.Background(), testPair)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Attempts != 3 || ce.Status != 0 || !strings.Contains(err.Error(), "connection refused") || IsJobFatal(err) {
		t.Fatalf("error %v", err)
	}
}

// TestSecretsRedacted: a server that echoes the key (in an error body,
// in a grade's reason, in a 2xx that is not a completion) never gets it
// into an error, a judgment or an observed attempt.
func TestSecretsRedacted(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		auth := r.Header.Get("Authorization")
		switch req.Body.Model {
		case "m-401":
			apiErrorAnswer(w, 401, "Incorrect API key provided: "+auth, "invalid_request_error", "invalid_api_key", "")
		case "m-500":
			w.WriteHeader(500)
			io.WriteString(w, "raw header: "+auth)
		case "m-html":
			io.WriteString(w, "<html>"+auth+"</html>")
		case "m-nograde":
			complete(w, "I saw "+auth, Usage{})
		default:
			b, _ := json.Marshal(map[string]string{"grade": "2", "reason": "you sent " + auth})
			complete(w, string(b), Usage{})
		}
	})
	var observed []Attempt
	var mu sync.Mutex
	opts := fastBackoff
	opts.Observe = func(a Attempt) { mu.Lock(); observed = append(observed, a); mu.Unlock() }
	for _, model := range []string{"m-401", "m-500", "m-html", "m-nograde", "m-ok"} {
		c, err := Parse("llm.yaml", []byte(fmt.Sprintf("base_url: %s/v1\nmodel: %s\napi_key: ${OPENAI_API_KEY}\nretries: 1\n", srv.URL, model)), testEnv)
		if err != nil {
			t.Fatal(err)
		}
		j, err := newTestClient(t, c, opts).Judge(context.Background(), testPair)
		if model == "m-ok" {
			if err != nil || j.Reason != "you sent Bearer [redacted]" {
				t.Errorf("%s: %+v %v", model, j, err)
			}
			continue
		}
		if err == nil || strings.Contains(err.Error(), "0123456789abcdef") || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("%s: error shows the key or nothing redacted: %v", model, err)
		}
	}
	// A transport error names the URL, which holds a secret here.
	srv.Close()
	c, err := Parse("llm.yaml", []byte("base_url: ${URL}\nmodel: m\nretries: 0\n"), envOf(map[string]string{"URL": srv.URL + "/v1"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newTestClient(t, c, opts).Judge(context.Background(), testPair)
	if err == nil || strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("transport error %v", err)
	}
	for _, a := range observed {
		if a.Err != nil && strings.Contains(a.Err.Error(), "0123456789abcdef") {
			t.Errorf("observed attempt error shows the key: %v", a.Err)
		}
	}
}

// TestRequestOptions: the file's options reach the server as the
// OpenAI API names them.
func TestRequestOptions(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		complete(w, `{"grade": 2, "reason": "ok"}`, Usage{})
	})
	file := fmt.Sprintf(`base_url: %s/openai/deployments/judge?api-version=2024-10-21
model: judge
headers:
  api-key: ${AZURE_KEY}
  X-Team: search
  User-Agent: evalgate-test
temperature: 0.5
max_tokens: 64
max_tokens_field: max_completion_tokens
seed: 7
response_format: json_schema
system: You grade passages. {{.QueryID}}
extra_body:
  chat_template_kwargs: {enable_thinking: false}
`, srv.URL)
	c, err := Parse("llm.yaml", []byte(file), envOf(map[string]string{"AZURE_KEY": "az-s3cr3t"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTestClient(t, c, fastBackoff).Judge(context.Background(), testPair); err != nil {
		t.Fatal(err)
	}
	r := srv.seen()[0]
	if r.Path != "/openai/deployments/judge/chat/completions" || r.Query != "api-version=2024-10-21" {
		t.Errorf("path %s query %s", r.Path, r.Query)
	}
	if r.Header.Get("api-key") != "az-s3cr3t" || r.Header.Get("Authorization") != "" || r.Header.Get("X-Team") != "search" || r.Header.Get("User-Agent") != "evalgate-test" {
		t.Errorf("headers %v", r.Header)
	}
	b := r.Body
	if *b.Temperature != 0.5 || b.MaxTokens != nil || *b.MaxCompletionTokens != 64 || *b.Seed != 7 {
		t.Errorf("body %s", r.Raw)
	}
	if len(b.Messages) != 2 || b.Messages[0] != (message{"system", "You grade passages. q1"}) || b.Messages[1].Role != "user" {
		t.Errorf("messages %+v", b.Messages)
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string `json:"name"`
			Strict bool   `json:"strict"`
			Schema struct {
				Properties struct {
					Grade struct {
						Type string `json:"type"`
						Enum []int  `json:"enum"`
					} `json:"grade"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(b.ResponseFormat, &rf); err != nil || rf.Type != "json_schema" || !rf.JSONSchema.Strict ||
		fmt.Sprint(rf.JSONSchema.Schema.Properties.Grade.Enum) != "[0 1 2 3]" || len(rf.JSONSchema.Schema.Required) != 2 {
		t.Errorf("response_format %s", b.ResponseFormat)
	}
	if string(r.Members["chat_template_kwargs"]) != `{"enable_thinking":false}` {
		t.Errorf("extra_body: %s", r.Raw)
	}
}

// TestConcurrencyBound: at most concurrency requests reach the server at
// once, however many goroutines call Judge.
func TestConcurrencyBound(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		time.Sleep(20 * time.Millisecond)
		if n%5 == 0 {
			apiErrorAnswer(w, 503, "overloaded", "server_error", "", "") // retries hold no slot while they back off
			return
		}
		complete(w, "3", Usage{1, 1, 2})
	})
	cl := newTestClient(t, testConfig(t, srv.URL, "concurrency: 3\nretries: 5\n"), fastBackoff)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			p := testPair
			p.DocID = strconv.Itoa(i)
			_, err := cl.Judge(context.Background(), p)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if peak := srv.peak(); peak > 3 || peak < 2 {
		t.Errorf("max in flight %d, want 3 (at most)", peak)
	}
}

// TestRateAtServer: with rate 40, no one-second window at the server
// holds more than 44 requests (41, and 10% for the jitter between the
// client's slot and the server's clock).
func TestRateAtServer(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		complete(w, "1", Usage{})
	})
	cl := newTestClient(t, testConfig(t, srv.URL, "concurrency: 8\nrate: 40\n"), fastBackoff)
	var wg sync.WaitGroup
	for i := range 80 { // 2 s at 40/s
		wg.Go(func() {
			p := testPair
			p.DocID = strconv.Itoa(i)
			if _, err := cl.Judge(context.Background(), p); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := maxPerWindow(srv.arrivals(), time.Second); got > 44 {
		t.Errorf("%d requests in one second, rate 40", got)
	}
}

// maxPerWindow returns the most timestamps in any window of length d.
func maxPerWindow(ts []time.Time, d time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) < d {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// countingLimiter counts waits: the client waits before every attempt.
type countingLimiter struct {
	mu sync.Mutex
	n  int
}

func (l *countingLimiter) Wait(ctx context.Context) error {
	l.mu.Lock()
	l.n++
	l.mu.Unlock()
	return ctx.Err()
}

func TestLimiterEveryAttempt(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		switch n {
		case 1:
			apiErrorAnswer(w, 500, "x", "server_error", "", "")
		case 2:
			complete(w, "no grade here", Usage{})
		default:
			complete(w, "2", Usage{})
		}
	})
	l := &countingLimiter{}
	opts := fastBackoff
	opts.Limiter = l
	j, err := newTestClient(t, testConfig(t, srv.URL, ""), opts).Judge(context.Background(), testPair)
	if err != nil || j.Attempts != 3 || l.n != 3 || srv.requests() != 3 {
		t.Errorf("%+v %v: %d waits, %d requests", j, err, l.n, srv.requests())
	}
}

// TestCancel: Judge returns the context's error when the context ends
// during a request, a backoff or a wait for a slot.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		if req.Body.Model == "retry" {
			w.Header().Set("Retry-After", "30")
			apiErrorAnswer(w, 503, "later", "server_error", "", "")
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	for _, model := range []string{"hang", "retry"} {
		c, err := Parse("llm.yaml", []byte(fmt.Sprintf("base_url: %s/v1\nmodel: %s\nconcurrency: 1\ntimeout: 1m\nretries: 3\n", srv.URL, model)), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		cl := newTestClient(t, c, fastBackoff)
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		for range 2 { // the second waits for the only slot (or backs off)
			go func() {
				_, err := cl.Judge(ctx, testPair)
				errs <- err
			}()
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
		for range 2 {
			select {
			case err := <-errs:
				var ce *CallError
				if !errors.Is(err, context.Canceled) || errors.As(err, &ce) {
					t.Errorf("%s: error %v, want context.Canceled", model, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: Judge did not return after cancel", model)
			}
		}
	}
}

// TestNoGoroutineLeak: after many judgments with retries, timeouts and
// cancellations, the goroutine count comes back.
func TestNoGoroutineLeak(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		switch n % 4 {
		case 0:
			apiErrorAnswer(w, 500, "x", "server_error", "", "")
		case 1:
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
			}
		default:
			complete(w, "2", Usage{})
		}
	})
	before := runtime.NumGoroutine()
	c := testConfig(t, srv.URL, "retries: 2\nconcurrency: 4\n")
	c.Timeout = 50 * time.Millisecond
	cl, err := NewClient(c, fastBackoff)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			if i == 20 {
				cancel()
			}
			cl.Judge(ctx, testPair)
		})
	}
	wg.Wait()
	cancel()
	cl.Close()
	srv.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestTemplateFailsForPair(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) { complete(w, "1", Usage{}) })
	c := testConfig(t, srv.URL, "prompt: |\n  {{.Query}}\n  {{.Passage}}\n  {{if eq .QueryID \"q1\"}}{{index .Title 40}}{{end}}\n")
	_, err := newTestClient(t, c, fastBackoff).Judge(context.Background(), testPair)
	var ie *schema.InputError
	if !errors.As(err, &ie) || !errors.Is(err, ErrTemplate) || !IsJobFatal(err) || ie.Field != "prompt" || ie.Line != 8 || srv.requests() != 0 {
		t.Errorf("error %v, %d requests", err, srv.requests())
	}
}

func TestProbe(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		switch req.Body.Model {
		case "gpt-4o-mni":
			apiErrorAnswer(w, 404, "The model `gpt-4o-mni` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found", "")
		case "key":
			apiErrorAnswer(w, 401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key", "")
		case "o3-mini":
			apiErrorAnswer(w, 400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "invalid_request_error", "unsupported_parameter", "max_tokens")
		case "short":
			completeWith(w, `{"grade": 3, "rea`[:8], "length", Usage{})
		case "chatty":
			complete(w, "This passage is highly relevant.", Usage{})
		case "busy":
			apiErrorAnswer(w, 503, "overloaded", "server_error", "", "")
		default:
			if !strings.Contains(req.prompt(), ProbePair.Passage) {
				apiErrorAnswer(w, 400, "not the probe pair", "", "", "")
				return
			}
			complete(w, `{"grade": 3, "reason": "exact"}`, Usage{300, 9, 309})
		}
	})
	tests := []struct {
		model, extra, base string
		field              string
		line               int64
		want               string
	}{
		{"gpt-4o-mni", "", "/v1", "model", 2, "model \"gpt-4o-mni\" not found"},
		{"key", "", "/v1", "api_key", 3, "not authorised"},
		{"key", "headers:\n  api-key: x\n", "/v1", "api_key", 3, "not authorised"},
		{"o3-mini", "", "/v1", "max_tokens_field", 1, "Use 'max_completion_tokens' instead"},
		{"short", "max_tokens: 5\n", "/v1", "max_tokens", 5, "cut at max_tokens"},
		{"chatty", "", "/v1", "prompt", 1, "asked twice, no grade"},
		{"m", "", "", "base_url", 1, "does base_url end with /v1?"},
	}
	for _, tc := range tests {
		file := fmt.Sprintf("base_url: %s%s\nmodel: %s\napi_key: ${OPENAI_API_KEY}\nretries: 2\n%s", srv.URL, tc.base, tc.model, tc.extra)
		c, err := Parse("llm.yaml", []byte(file), testEnv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = newTestClient(t, c, fastBackoff).Probe(context.Background())
		var ie *schema.InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) || !schema.IsInvalidInput(err) {
			t.Errorf("%s: error %v\nwant field %s line %d saying %q", tc.model, err, tc.field, tc.line, tc.want)
		}
	}
	// Not the file's fault: returned as is.
	c := testConfig(t, srv.URL, "retries: 1\n")
	c.Model = "busy"
	_, err := newTestClient(t, c, fastBackoff).Probe(context.Background())
	var ie *schema.InputError
	if errors.As(err, &ie) || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("busy: %v", err)
	}
	// Unreachable: base_url.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	_, err = newTestClient(t, testConfig(t, dead.URL, "retries: 0\n"), fastBackoff).Probe(context.Background())
	if !errors.As(err, &ie) || ie.Field != "base_url" || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("unreachable: %v", err)
	}
	j, err := newTestClient(t, testConfig(t, srv.URL, ""), fastBackoff).Probe(context.Background())
	if err != nil || j.Grade != 3 || j.QueryID != ProbePair.QueryID || j.Usage.Total != 309 {
		t.Errorf("good probe: %+v %v", j, err)
	}
}

func TestNewClientRefusesNil(t *testing.T) {
	if _, err := NewClient(nil, ClientOptions{}); err == nil {
		t.Error("no error for a nil Config")
	}
	if _, err := NewClient(&Config{}, ClientOptions{}); err == nil {
		t.Error("no error for a Config not from Parse")
	}
}

// TestUsageOfUnusableAnswer: a 2xx that bills tokens but holds no choice
// still counts its usage.
func TestUsageOfUnusableAnswer(t *testing.T) {
	srv := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int, req seenRequest) {
		io.WriteString(w, `{"id": "x", "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 0, "total_tokens": 50}}`)
	})
	j, err := newTestClient(t, testConfig(t, srv.URL, ""), fastBackoff).Judge(context.Background(), testPair)
	if !errors.Is(err, ErrMalformedAnswer) || j.Usage != (Usage{50, 0, 50}) || j.Grade != NoGrade {
		t.Errorf("%+v %v", j, err)
	}
}
