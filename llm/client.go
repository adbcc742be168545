package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/evalgate/evalgate/internal/httpcall"
	"github.com/evalgate/evalgate/internal/keyfile"
	"github.com/evalgate/evalgate/schema"
)

// Defaults of ClientOptions.
const (
	DefaultBackoffBase    = 500 * time.Millisecond
	DefaultBackoffMax     = 20 * time.Second
	DefaultMaxAnswerBytes = 8 << 20
)

// NoGrade is Judgment.Grade when there is none (the judgment failed).
const NoGrade = -1

// Limiter spaces requests out. The client calls Wait before every
// attempt, after it has taken its concurrency slot, so that a request is
// sent as soon as Wait returns. Wait must be safe for concurrent use, and
// return ctx's error promptly when ctx ends. It is retriever.Limiter: one
// job-wide limiter type serves both.
type Limiter = httpcall.Limiter

// LocalLimiter is an in-process Limiter that spaces requests exactly
// 1/rate apart (retriever.LocalLimiter).
type LocalLimiter = httpcall.LocalLimiter

// NewLocalLimiter returns an in-process limiter of rate requests per
// second; 0 (or less) means unlimited.
func NewLocalLimiter(rate float64) *LocalLimiter { return httpcall.NewLocalLimiter(rate) }

// Usage counts tokens as the server reports them in a completion's usage
// field; zero when the server reports none.
type Usage struct {
	Prompt, Completion, Total int
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Prompt + v.Prompt, u.Completion + v.Completion, u.Total + v.Total}
}

// Judgment is the grade of one pair, with its provenance and cost.
type Judgment struct {
	QueryID, DocID string
	// Grade is on the scale 0..Config.MaxGrade; NoGrade when Judge
	// returns an error.
	Grade int
	// Reason is the model's short reason when it gave one (at most
	// MaxReasonBytes).
	Reason string
	// Model and PromptSHA256 are the file's: what a judgment is cached by
	// and recorded with.
	Model        string
	PromptSHA256 string
	// ServedModel is the model the server says answered (OpenAI names a
	// dated snapshot, e.g. gpt-4o-mini-2024-07-18); may be empty.
	ServedModel string
	// Usage sums the usage the server reported for this pair: both asks
	// when the first had no grade, and any 2xx answer that was not a
	// usable completion. Failed attempts (429, 5xx) report none. Set on
	// error too.
	Usage Usage
	// Latency is the time of the attempts whose answers were used, from
	// sending the request to the answer read; the waits (concurrency
	// slot, rate limit, backoff) are excluded.
	Latency time.Duration
	// Asks is 2 when the first answer had no grade and the model was
	// asked again, else 1.
	Asks int
	// Attempts counts every HTTP attempt, retries and both asks included.
	// Set on error too.
	Attempts int
}

// Attempt describes one HTTP attempt, for metrics.
type Attempt struct {
	QueryID, DocID string
	Ask            int           // 1, or 2 for the ask after an answer without a grade
	Status         int           // 0 when no answer came
	Elapsed        time.Duration // request sent to answer read, or to the failure
	Usage          Usage         // the answer's usage; zero when it has none
	// Err is why the attempt gave no usable answer (redacted); nil when
	// it gave one (with or without a grade).
	Err         error
	RateLimited bool // the answer was HTTP 429
	Retry       bool // another attempt follows
}

// Class is the attempt's status class: "2xx", "3xx", "4xx", "5xx", or
// "error" when no answer came.
func (a Attempt) Class() string { return httpcall.StatusClass(a.Status) }

// ClientOptions tune a Client; the zero value is ready to use.
type ClientOptions struct {
	// HTTP sends the requests; nil means a client of its own whose
	// transport keeps Concurrency idle connections per host (Close
	// releases them). Do not set its Timeout: the file's timeout applies
	// per attempt.
	HTTP *http.Client
	// Limiter is waited on before every attempt; nil means
	// NewLocalLimiter(cfg.Rate), a limit for this process only. A job
	// spread over workers passes a limiter shared by all of them.
	Limiter Limiter
	// Observe, if set, is called once per attempt, from the goroutine
	// that called Judge; it must be safe for concurrent use and quick.
	Observe func(Attempt)
	// Backoff before retry n (from 1) is a uniform random duration in
	// [0, min(BackoffMax, BackoffBase·2^(n-1))] ("full jitter"), unless
	// the answer carried a Retry-After. Defaults: DefaultBackoffBase,
	// DefaultBackoffMax.
	BackoffBase, BackoffMax time.Duration
	// MaxAnswerBytes bounds an answer's body; 0 means
	// DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
}

// Client grades pairs with one model. It is safe for concurrent use; at
// most cfg.Concurrency requests are in flight at once (a slot is held
// for one attempt, not during backoff). It starts no goroutine.
type Client struct {
	cfg     *Config
	hdr     http.Header // the headers of every request (cloned per attempt)
	send    *httpcall.Sender
	observe func(Attempt)
	backoff httpcall.Backoff
}

// NewClient returns a client for the LLM cfg describes.
func NewClient(cfg *Config, opts ClientOptions) (*Client, error) {
	if cfg == nil || cfg.prompt == nil || cfg.url == "" {
		return nil, errors.New("new LLM client: want a Config from Parse or Load")
	}
	if opts.BackoffBase < 0 || opts.BackoffMax < 0 || opts.MaxAnswerBytes < 0 {
		return nil, errors.New("new LLM client: negative backoff or answer limit")
	}
	limiter := opts.Limiter
	if limiter == nil {
		limiter = NewLocalLimiter(cfg.Rate)
	}
	send, err := httpcall.NewSender(httpcall.SenderOptions{HTTP: opts.HTTP, Limiter: limiter, Concurrency: cfg.Concurrency,
		Timeout: cfg.Timeout, MaxBody: cmp.Or(opts.MaxAnswerBytes, DefaultMaxAnswerBytes)})
	if err != nil {
		return nil, fmt.Errorf("new LLM client: %w", err)
	}
	c := &Client{
		cfg:     cfg,
		send:    send,
		observe: opts.Observe,
		backoff: httpcall.Backoff{Base: cmp.Or(opts.BackoffBase, DefaultBackoffBase), Max: cmp.Or(opts.BackoffMax, DefaultBackoffMax)},
	}
	c.hdr = c.header()
	return c, nil
}

// Close releases the idle connections of the client's own transport.
// The client stays usable.
func (c *Client) Close() { c.send.Close() }

// Config returns the LLM file the client follows.
func (c *Client) Config() *Config { return c.cfg }

// Judge grades one pair. It sends the prompt and reads the grade from the
// answer (ParseGrade); an answer without a grade on the scale is asked
// once more, with the answer and a reminder appended to the
// conversation. Each request is retried as the file says. Errors:
//   - a *GradeError: both answers held no grade — a failed judgment, to
//     count and name, never a grade;
//   - a *CallError: a request got no usable answer; IsJobFatal tells
//     whether the job should stop (wrong model, endpoint or key, quota
//     spent) or count the pair as failed;
//   - a *schema.InputError wrapping ErrTemplate: the prompt template
//     failed for this pair (job-fatal);
//   - ctx's error when ctx ends, or the Limiter's error.
//
// On error the Judgment has Grade NoGrade and still counts the attempts
// made and the tokens used.
func (c *Client) Judge(ctx context.Context, p Pair) (Judgment, error) {
	j := Judgment{QueryID: p.QueryID, DocID: p.DocID, Grade: NoGrade, Model: c.cfg.Model, PromptSHA256: c.cfg.PromptSHA256}
	msgs, err := c.cfg.messages(p)
	if err != nil {
		key, tl, msg := templateFault(err)
		return j, &schema.InputError{File: c.cfg.File, Line: int64(c.position(key).FileLine(tl)), Field: key,
			Err: fmt.Errorf("%w for query %q document %q: %s", ErrTemplate, p.QueryID, p.DocID, c.cfg.Redact(msg))}
	}
	ans, err := c.ask(ctx, p, msgs, 1)
	j.add(ans, 1)
	if err != nil {
		return j, err
	}
	if c.grade(&j, ans) == nil {
		return j, nil
	}
	msgs = append(msgs, message{"assistant", ans.content}, message{"user", reminder(c.cfg.MaxGrade)})
	ans, err = c.ask(ctx, p, msgs, 2)
	j.add(ans, 2)
	if err != nil {
		return j, err
	}
	gerr := c.grade(&j, ans)
	if gerr == nil {
		return j, nil
	}
	return j, &GradeError{QueryID: p.QueryID, DocID: p.DocID, FinishReason: ans.finish, Err: gerr,
		Answer: httpcall.Excerpt([]byte(ans.content), ExcerptBytes, c.cfg.redact)}
}

// add counts the attempts, tokens and time of one ask.
func (j *Judgment) add(a answer, ask int) {
	j.Asks = ask
	j.Attempts += a.attempts
	j.Usage = j.Usage.Add(a.usage)
	j.Latency += a.latency
	if a.model != "" {
		j.ServedModel = a.model
	}
}

// grade reads the grade of an answer into j.
func (c *Client) grade(j *Judgment, a answer) error {
	g, reason, err := ParseGrade(a.content, c.cfg.MaxGrade)
	if err != nil {
		return err
	}
	j.Grade, j.Reason = g, c.cfg.Redact(reason)
	return nil
}

// position returns where a template key's text starts in the file.
func (c *Client) position(key string) keyfile.Position {
	if pos, ok := c.cfg.positions[key]; ok {
		return pos
	}
	return keyfile.Position{Line: 1}
}
