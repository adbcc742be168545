package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/evalgate/evalgate/internal/httpcall"
	"github.com/evalgate/evalgate/internal/secret"
)

// answer is the outcome of one ask: a request with its retries.
type answer struct {
	content  string // the message content (or the refusal text)
	finish   string // finish_reason
	model    string // the model the server says answered
	usage    Usage  // summed over the attempts that reported usage
	latency  time.Duration
	attempts int
}

// attemptResult is the outcome of one attempt.
type attemptResult struct {
	status     int
	body       []byte
	elapsed    time.Duration
	err        error // why the answer is not usable (unredacted); nil on success
	retryable  bool
	retryAfter time.Duration // from Retry-After-Ms or Retry-After; -1 when none
	api        apiError      // the server's account of an error
	stop       error         // ctx ended, or the limiter failed: give up at once
	resp       chatResponse  // on success
}

// header returns the headers of every request.
func (c *Client) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("User-Agent", "evalgate")
	if c.cfg.apiKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.apiKey)
	}
	for _, x := range c.cfg.headers {
		h.Set(x.name, x.value)
	}
	return h
}

// ask sends one request of a pair with its retries.
func (c *Client) ask(ctx context.Context, p Pair, msgs []message, ask int) (answer, error) {
	var res answer
	body, err := c.cfg.body(msgs)
	if err != nil {
		return res, fmt.Errorf("judge query %q document %q: encode request: %w", p.QueryID, p.DocID, err)
	}
	req := httpcall.Request{Method: http.MethodPost, URL: c.cfg.url, Header: c.hdr, Host: c.cfg.host, Body: body}
	for {
		a := c.attempt(ctx, req)
		if a.stop != nil {
			return res, fmt.Errorf("judge query %q document %q: %w", p.QueryID, p.DocID, a.stop)
		}
		res.attempts++
		res.usage = res.usage.Add(a.usage()) // a 2xx reports what it billed, usable or not
		if a.err == nil {
			c.report(p, ask, a, false)
			ch := a.resp.Choices[0]
			switch {
			case ch.Message.Content != nil:
				res.content = *ch.Message.Content
			case ch.Message.Refusal != nil:
				res.content = *ch.Message.Refusal
			}
			res.finish, res.model, res.latency = ch.FinishReason, a.resp.Model, a.elapsed
			return res, nil
		}
		if !a.retryable || res.attempts > c.cfg.Retries {
			c.report(p, ask, a, false)
			return res, c.callError(p, res.attempts, a, a.err)
		}
		wait := c.backoff.Delay(res.attempts)
		if a.retryAfter >= 0 {
			if a.retryAfter > c.cfg.MaxRetryAfter {
				c.report(p, ask, a, false)
				return res, c.callError(p, res.attempts, a, fmt.Errorf("%w: the server asks to retry after %s, more than max_retry_after %s",
					ErrRetryAfterTooLong, a.retryAfter.Round(time.Millisecond), c.cfg.MaxRetryAfter))
			}
			wait = a.retryAfter
		}
		c.report(p, ask, a, true)
		if err := httpcall.Sleep(ctx, wait); err != nil {
			return res, fmt.Errorf("judge query %q document %q: %w", p.QueryID, p.DocID, err)
		}
	}
}

// attempt makes one attempt (a concurrency slot, the rate limit, then
// the request within the file's timeout) and decodes its answer.
func (c *Client) attempt(ctx context.Context, req httpcall.Request) attemptResult {
	r := c.send.Send(ctx, req)
	a := attemptResult{status: r.Status, body: r.Body, elapsed: r.Elapsed, err: r.Err, retryable: r.Retryable, retryAfter: -1, stop: r.Stop}
	if r.Stop != nil || r.Err != nil {
		return a
	}
	if a.status < 200 || a.status > 299 {
		a.api, _ = parseAPIError(a.body)
		a.err, a.retryable = classify(a.status, a.api)
		if a.err == nil {
			a.err = statusError(a.status)
		}
		if a.retryable {
			a.retryAfter = retryAfter(r.Header, time.Now())
		}
		return a
	}
	if err := decodeAnswer(a.body, &a.resp); err != nil {
		a.api, _ = parseAPIError(a.body)
		a.err = fmt.Errorf("%w: %v", ErrMalformedAnswer, err)
		if isModelNotFound(a.api) {
			a.err = ErrModelNotFound
		}
	}
	a.elapsed = time.Since(r.Start)
	return a
}

// decodeAnswer decodes a chat completion that has at least one choice.
func decodeAnswer(body []byte, resp *chatResponse) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(resp); err != nil {
		return err
	}
	if len(resp.Choices) == 0 {
		return fmt.Errorf("no choices")
	}
	return nil
}

// usage returns the usage the answer reports.
func (a attemptResult) usage() Usage {
	u := a.resp.Usage
	if u == nil {
		return Usage{}
	}
	return Usage{u.PromptTokens, u.CompletionTokens, u.TotalTokens}
}

// statusError is the cause of a 429 or 5xx answer: the status says it.
type statusError int

func (e statusError) Error() string { return "HTTP " + strconv.Itoa(int(e)) }

// retryAfter reads how long the server asks to wait: Retry-After-Ms
// (OpenAI, Azure), else Retry-After; -1 when neither is there.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return time.Duration(min(ms, 1e12) * float64(time.Millisecond)) // 1e12 ms: 31 years, beyond any cap
		}
	}
	if d, ok := httpcall.ParseRetryAfter(h.Get("Retry-After"), now); ok {
		return d
	}
	return -1
}

// callError builds the error of a request that got no usable answer.
func (c *Client) callError(p Pair, attempts int, a attemptResult, cause error) *CallError {
	red := func(s string) string {
		return httpcall.TruncateUTF8(c.cfg.Redact(s), maxMessageBytes)
	}
	e := &CallError{QueryID: p.QueryID, DocID: p.DocID, Model: c.cfg.Model, Attempts: attempts, Status: a.status,
		Message: red(a.api.message), Type: red(a.api.typ), Code: red(a.api.code), Param: red(a.api.param),
		Body: httpcall.Excerpt(a.body, ExcerptBytes, c.cfg.redact)}
	if _, ok := cause.(statusError); !ok {
		e.Err = c.redactErr(cause)
	}
	return e
}

// redactErr returns err with its secrets redacted; it unwraps only to the
// package's sentinels and context errors.
func (c *Client) redactErr(err error) error {
	for _, s := range []error{ErrModelNotFound, ErrEndpointNotFound, ErrUnauthorized, ErrQuota, ErrContextLength, ErrRejected} {
		if err == s {
			return err // the sentinels hold no secret
		}
	}
	return secret.RedactError(err, c.cfg.redact, ErrTimeout, ErrMalformedAnswer, ErrAnswerTooLarge, ErrRetryAfterTooLong, context.DeadlineExceeded, context.Canceled)
}

// report calls Observe for one attempt.
func (c *Client) report(p Pair, ask int, a attemptResult, retry bool) {
	if c.observe == nil {
		return
	}
	var err error
	if a.err != nil {
		err = c.redactErr(a.err)
	}
	c.observe(Attempt{QueryID: p.QueryID, DocID: p.DocID, Ask: ask, Status: a.status, Elapsed: a.elapsed, Usage: a.usage(), Err: err,
		RateLimited: a.status == http.StatusTooManyRequests, Retry: retry})
}
