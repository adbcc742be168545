package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/evalgate/evalgate/internal/httpcall"
)

// Sentinels. The errors of Judge and Probe wrap them; test with errors.Is.
var (
	// ErrModelNotFound: the server does not serve the file's model (OpenAI
	// model_not_found, vLLM "The model `x` does not exist", Ollama "model
	// \"x\" not found, try pulling it first", Azure DeploymentNotFound).
	// Every request would fail: stop the job (IsJobFatal).
	ErrModelNotFound = errors.New("model not found")
	// ErrEndpointNotFound: HTTP 404 that does not name the model: no chat
	// completions endpoint at base_url (a missing /v1?). Job-fatal.
	ErrEndpointNotFound = errors.New("no chat completions endpoint at base_url")
	// ErrUnauthorized: HTTP 401 or 403: a missing, wrong or unauthorised
	// API key. Job-fatal.
	ErrUnauthorized = errors.New("not authorised")
	// ErrQuota: HTTP 429 insufficient_quota: the account is out of credit
	// (a rate limit is a 429 without this code, and is retried). Job-fatal.
	ErrQuota = errors.New("quota exhausted")
	// ErrContextLength: the prompt and max_tokens exceed the model's
	// context window (HTTP 400, context_length_exceeded): this pair's
	// passage is too long. The pair fails; the job goes on.
	ErrContextLength = errors.New("prompt exceeds the model's context length")
	// ErrRejected: any other HTTP 4xx: the server refuses this request and
	// would refuse it again; not retried.
	ErrRejected = errors.New("request rejected")
	// ErrMalformedAnswer: a 2xx answer that is not a chat completion (not
	// JSON, no choices). Not retried.
	ErrMalformedAnswer = errors.New("answer is not a chat completion")
	// ErrAnswerTooLarge: an answer longer than MaxAnswerBytes. Not retried.
	ErrAnswerTooLarge = httpcall.ErrTooLarge
	// ErrTimeout: an attempt took longer than the file's timeout.
	ErrTimeout = httpcall.ErrTimeout
	// ErrRetryAfterTooLong: the server asked to wait longer than
	// max_retry_after; the pair fails rather than wait.
	ErrRetryAfterTooLong = errors.New("server asks to wait beyond max_retry_after")
	// ErrTemplate: a prompt template failed for one pair. The error is a
	// *schema.InputError naming the key; job-fatal.
	ErrTemplate = errors.New("template failed")
)

// IsJobFatal reports whether err means every later request of the job
// would fail the same way, so the job should stop rather than count a
// failed judgment per pair: a model that is not served, an endpoint that
// is not there, a key that is refused, a quota that is spent, a prompt
// template that fails. Other errors (a *CallError after its retries, a
// *GradeError) fail one pair.
func IsJobFatal(err error) bool {
	for _, s := range []error{ErrModelNotFound, ErrEndpointNotFound, ErrUnauthorized, ErrQuota, ErrTemplate} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// ExcerptBytes is the length of the answer excerpt a CallError keeps.
const ExcerptBytes = 200

// maxMessageBytes bounds the server's error message a CallError keeps.
const maxMessageBytes = 500

// CallError is a pair whose request got no usable answer: its attempts
// ran out (429, 5xx, timeouts, transport errors), or its failure is not
// one a retry can fix (a 4xx, a 2xx that is not a chat completion, a
// Retry-After beyond the cap). It holds no secret: every text is redacted.
type CallError struct {
	QueryID, DocID string
	Model          string // the file's model
	Attempts       int    // attempts made for this request
	Status         int    // HTTP status of the last answer; 0 when none came
	// Message, Type, Code and Param are the server's account of the
	// error, from an OpenAI-style body {"error": {"message", "type",
	// "param", "code"}} (or vLLM's and Ollama's variants); empty when the
	// body has none. Param names the request member at fault.
	Message, Type, Code, Param string
	Body                       string // first ExcerptBytes bytes of the last answer
	// Err is the kind: one of the sentinels (ErrModelNotFound,
	// ErrEndpointNotFound, ErrUnauthorized, ErrQuota, ErrContextLength,
	// ErrRejected, ErrMalformedAnswer, ErrAnswerTooLarge,
	// ErrRetryAfterTooLong, ErrTimeout), the last transport error, or nil
	// when the status says it all (429 or 5xx after the retries).
	Err error
}

// Error renders, for example, `judge query "q1" document "d7": model
// "gpt-4o-mni" not found: 1 attempt, last answer HTTP 404 Not Found: the
// server says "The model `gpt-4o-mni` does not exist" (code
// model_not_found)`.
func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "judge query %q document %q: ", e.QueryID, e.DocID)
	switch {
	case errors.Is(e.Err, ErrModelNotFound):
		fmt.Fprintf(&b, "model %q not found: ", e.Model)
	case e.Err != nil && e.Status != 0:
		fmt.Fprintf(&b, "%v: ", e.Err)
	}
	b.WriteString(plural(e.Attempts, "attempt"))
	if e.Status == 0 {
		if e.Err != nil {
			fmt.Fprintf(&b, ", last error: %v", e.Err)
		}
		return b.String()
	}
	fmt.Fprintf(&b, ", last answer HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Message == "" {
		fmt.Fprintf(&b, ": body %s", strconv.Quote(e.Body))
		return b.String()
	}
	fmt.Fprintf(&b, ": the server says %s", strconv.Quote(e.Message))
	var tc []string
	if e.Type != "" {
		tc = append(tc, "type "+e.Type)
	}
	if e.Code != "" {
		tc = append(tc, "code "+e.Code)
	}
	if len(tc) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(tc, ", "))
	}
	return b.String()
}

// Unwrap returns the kind.
func (e *CallError) Unwrap() error { return e.Err }

// GradeError is a failed judgment: the model answered, twice (the second
// time after a reminder), without a grade on the scale. The caller counts
// and names it; it is never a grade of 0.
type GradeError struct {
	QueryID, DocID string
	// Answer is the start of the last answer (ExcerptBytes bytes).
	Answer string
	// FinishReason is the server's finish_reason of the last answer:
	// "length" means it was cut at max_tokens.
	FinishReason string
	// Err is ErrNoGrade or ErrBadGrade, with what was wrong.
	Err error
}

func (e *GradeError) Error() string {
	msg := fmt.Sprintf("judge query %q document %q: asked twice, no grade: %v", e.QueryID, e.DocID, e.Err)
	switch e.FinishReason {
	case "length":
		msg += " (the answer was cut at max_tokens: raise max_tokens)"
	case "content_filter":
		msg += " (the server's content filter stopped the answer)"
	}
	return msg + ": answer " + strconv.Quote(e.Answer)
}

// Unwrap returns ErrNoGrade or ErrBadGrade (wrapped).
func (e *GradeError) Unwrap() error { return e.Err }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// apiError is the server's account of an error, as OpenAI, vLLM, Ollama,
// llama.cpp, LiteLLM and Azure write it.
type apiError struct {
	message, typ, code, param string
}

// parseAPIError reads {"error": {"message", "type", "code"}} (OpenAI,
// Ollama's /v1, Azure, llama.cpp, newer vLLM), {"object": "error",
// "message", "type", "code"} (older vLLM), {"error": "text"} (Ollama's
// native API) or {"detail": "text"} (FastAPI). code may be a string or a
// number.
func parseAPIError(body []byte) (apiError, bool) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Object  string          `json:"object"`
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return apiError{}, false
	}
	var e apiError
	if len(v.Error) > 0 && v.Error[0] == '{' {
		var inner struct {
			Message, Type, Code, Param json.RawMessage
		}
		if json.Unmarshal(v.Error, &inner) == nil {
			e = apiError{scalarText(inner.Message), scalarText(inner.Type), scalarText(inner.Code), scalarText(inner.Param)}
		}
	} else if len(v.Error) > 0 {
		e.message = scalarText(v.Error)
	}
	if e.message == "" && (v.Object == "error" || len(v.Error) == 0 && len(v.Message) > 0) {
		e = apiError{scalarText(v.Message), scalarText(v.Type), scalarText(v.Code), scalarText(v.Param)}
	}
	if e.message == "" {
		e.message = scalarText(v.Detail)
	}
	return e, e.message != "" || e.code != "" || e.typ != ""
}

// scalarText returns the text of a JSON string or number; "" otherwise.
func scalarText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// classify returns the kind of a non-2xx answer, and whether sending the
// request again may succeed.
func classify(status int, e apiError) (kind error, retryable bool) {
	switch {
	case status == http.StatusTooManyRequests && isQuota(e):
		return ErrQuota, false
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status == http.StatusTooManyRequests || status >= 500:
		return nil, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrUnauthorized, false
	case isModelNotFound(e):
		return ErrModelNotFound, false
	case status == http.StatusNotFound:
		return ErrEndpointNotFound, false
	case isContextLength(e):
		return ErrContextLength, false
	}
	return ErrRejected, false
}

func isQuota(e apiError) bool {
	return strings.EqualFold(e.code, "insufficient_quota") || strings.EqualFold(e.typ, "insufficient_quota")
}

// isModelNotFound recognises the model-not-found answers of OpenAI,
// Azure, vLLM, Ollama and LiteLLM.
func isModelNotFound(e apiError) bool {
	if strings.EqualFold(e.code, "model_not_found") || strings.EqualFold(e.code, "DeploymentNotFound") {
		return true
	}
	m := strings.ToLower(e.message)
	if !strings.Contains(m, "model") && !strings.Contains(m, "deployment") {
		return false
	}
	for _, s := range []string{"does not exist", "not found", "not exist", "invalid model", "unknown model", "no such model", "not available"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// isContextLength recognises a prompt longer than the model's context.
func isContextLength(e apiError) bool {
	if strings.EqualFold(e.code, "context_length_exceeded") {
		return true
	}
	m := strings.ToLower(e.message)
	for _, s := range []string{"context length", "context window", "maximum context", "context_length", "too many tokens", "exceeds the available context"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
