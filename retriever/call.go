package retriever

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/evalgate/evalgate/internal/httpcall"
	"github.com/evalgate/evalgate/internal/keyfile"
	"github.com/evalgate/evalgate/internal/secret"
	"github.com/evalgate/evalgate/schema"
)

// render runs the templates of a request for one query.
func (c *Client) render(r *request, queryID string, data any) (httpcall.Request, error) {
	out := httpcall.Request{Method: r.method, Header: http.Header{}}
	run := func(t *tmpl) (string, error) {
		s, err := t.execute(data)
		if err != nil {
			tl, msg := keyfile.TemplateError(err)
			return "", &schema.InputError{File: c.cfg.File, Line: int64(t.at.FileLine(tl)), Field: t.key,
				Err: fmt.Errorf("%w for query %q: %s", ErrTemplate, queryID, c.cfg.Redact(msg))}
		}
		return s, nil
	}
	var err error
	if out.URL, err = run(r.url); err != nil {
		return out, err
	}
	for _, h := range r.headers {
		v, err := run(h.value)
		if err != nil {
			return out, err
		}
		if strings.EqualFold(h.name, "Host") {
			out.Host = v
			continue
		}
		out.Header.Set(h.name, v)
	}
	if r.body != nil {
		b, err := run(r.body)
		if err != nil {
			return out, err
		}
		out.Body = []byte(b)
		if out.Header.Get("Content-Type") == "" {
			out.Header.Set("Content-Type", "application/json")
		}
	}
	if out.Header.Get("Accept") == "" {
		out.Header.Set("Accept", "application/json")
	}
	if out.Header.Get("User-Agent") == "" {
		out.Header.Set("User-Agent", "evalgate")
	}
	return out, nil
}

// callResult is the outcome of one request with its retries.
type callResult struct {
	status   int
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
	retryAfter time.Duration // from a Retry-After header; -1 when none
	shape      *shapeError
	stop       error // ctx ended, or the limiter failed: give up at once
}

// call sends one request of a query with its retries. parse extracts what
// the request is for from the decoded answer; its failure is a shape
// error, never retried.
func (c *Client) call(ctx context.Context, queryID string, r *request, data any, parse func(any) *shapeError) (callResult, error) {
	step := StepSearch
	if r.prefix == "embed." {
		step = StepEmbed
	}
	var res callResult
	req, err := c.render(r, queryID, data)
	if err != nil {
		return res, err
	}
	for {
		a := c.attempt(ctx, req, parse)
		if a.stop != nil {
			return res, fmt.Errorf("retrieve query %q: %w", queryID, a.stop)
		}
		res.attempts++
		res.status = a.status
		if a.shape != nil {
			c.report(queryID, step, a, false)
			return res, c.shapeErr(queryID, a)
		}
		if a.err == nil {
			c.report(queryID, step, a, false)
			res.latency = a.elapsed
			return res, nil
		}
		qerr := func(cause error) error {
			if _, ok := cause.(statusError); ok {
				cause = nil
			}
			return &QueryError{QueryID: queryID, Step: step, Attempts: res.attempts, Status: a.status,
				Body: c.excerpt(a.body), Err: c.redactErr(cause)}
		}
		if !a.retryable || res.attempts > c.cfg.Retries {
			c.report(queryID, step, a, false)
			return res, qerr(a.err)
		}
		wait := c.backoff.Delay(res.attempts)
		if a.retryAfter >= 0 {
			if a.retryAfter > c.cfg.MaxRetryAfter {
				c.report(queryID, step, a, false)
				return res, qerr(retryAfterError(a.retryAfter, c.cfg.MaxRetryAfter))
			}
			wait = a.retryAfter
		}
		c.report(queryID, step, a, true)
		if err := httpcall.Sleep(ctx, wait); err != nil {
			return res, fmt.Errorf("retrieve query %q: %w", queryID, err)
		}
	}
}

// attempt makes one attempt (a concurrency slot, the rate limit, then
// the request within the file's timeout) and decodes its answer.
func (c *Client) attempt(ctx context.Context, req httpcall.Request, parse func(any) *shapeError) attemptResult {
	r := c.send.Send(ctx, req)
	a := attemptResult{status: r.Status, body: r.Body, elapsed: r.Elapsed, err: r.Err, retryable: r.Retryable, retryAfter: -1, stop: r.Stop}
	if r.Stop != nil || r.Err != nil {
		return a
	}
	if a.status < 200 || a.status > 299 {
		a.err = statusError(a.status)
		a.retryable = httpcall.RetryableStatus(a.status)
		if d, ok := httpcall.ParseRetryAfter(r.Header.Get("Retry-After"), time.Now()); ok && a.retryable {
			a.retryAfter = d
		}
		return a
	}
	root, err := decodeJSON(a.body)
	if err != nil {
		a.elapsed, a.err = time.Since(r.Start), fmt.Errorf("%w: %v", ErrMalformedAnswer, err)
		return a
	}
	a.shape = parse(root)
	a.elapsed = time.Since(r.Start)
	return a
}

// statusError is the cause of a non-2xx answer: the status says it all.
type statusError int

func (e statusError) Error() string { return "HTTP " + strconv.Itoa(int(e)) }

// report calls Observe for one attempt.
func (c *Client) report(queryID string, step Step, a attemptResult, retry bool) {
	if c.observe == nil {
		return
	}
	var err error
	switch {
	case a.shape != nil:
		err = ErrAnswerShape
	case a.err != nil:
		err = c.redactErr(a.err)
	}
	c.observe(Attempt{QueryID: queryID, Step: step, Status: a.status, Elapsed: a.elapsed, Err: err,
		RateLimited: a.status == http.StatusTooManyRequests, Retry: retry})
}

// redactErr returns err with its secrets redacted; it unwraps only to the
// package's sentinels and context errors.
func (c *Client) redactErr(err error) error {
	return secret.RedactError(err, c.cfg.redact, ErrTimeout, ErrMalformedAnswer, ErrAnswerTooLarge, ErrRetryAfterTooLong, context.DeadlineExceeded, context.Canceled)
}

// excerpt returns the first ExcerptBytes bytes of an answer, redacted
// before it is cut so that no part of a secret survives the cut.
func (c *Client) excerpt(body []byte) string {
	return httpcall.Excerpt(body, ExcerptBytes, c.cfg.redact)
}

// shapeErr turns a shape error into the *schema.InputError callers stop
// the job on, naming the key whose path did not fit.
func (c *Client) shapeErr(queryID string, a attemptResult) error {
	return &schema.InputError{File: c.cfg.File, Line: int64(max(c.cfg.lines[a.shape.key], 1)), Field: a.shape.key,
		Err: fmt.Errorf("%w: answer to query %q: %s; the answer begins %s", ErrAnswerShape, queryID,
			c.cfg.Redact(a.shape.msg), strconv.Quote(c.excerpt(a.body)))}
}
