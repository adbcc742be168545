package retriever

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/evalgate/evalgate/internal/httpcall"
	"github.com/evalgate/evalgate/schema"
)

// Step names the request of a query an attempt or an error is about.
type Step string

// The steps of a query: an optional embeddings request, then the search.
const (
	StepEmbed  Step = "embed"
	StepSearch Step = "search"
)

// Defaults of ClientOptions.
const (
	DefaultBackoffBase    = 250 * time.Millisecond
	DefaultBackoffMax     = 10 * time.Second
	DefaultMaxAnswerBytes = 64 << 20
)

// Query is one gold query to send to the retriever.
type Query struct {
	ID   string
	Text string
	// Tags are the query's tags as the gold set gives them, "name=value";
	// templates see them as .Tags, a map of name to value.
	Tags []string
	// K is the number of hits wanted; 0 means the file's k.
	K int
}

// Answer is the retriever's answer to one query.
type Answer struct {
	QueryID string
	// Hits are the ranking: the answer's list order, at most K hits.
	Hits []Hit
	// Short is true when the answer held fewer than K hits (none is
	// fine too): a normal answer, reported, not an error.
	Short  bool
	Status int // HTTP status of the search answer used
	// Latency is the time of the attempt whose answer was used, from
	// sending the request to the answer read and parsed; with an embed:
	// section, the sum of that of both requests. Waits (concurrency
	// slot, rate limit, backoff) are excluded.
	Latency      time.Duration
	EmbedLatency time.Duration // the embeddings request's share of Latency
	Attempts     int           // every attempt made, both requests, retries included
}

// Attempt describes one HTTP attempt, for metrics.
type Attempt struct {
	QueryID string
	Step    Step
	Status  int           // 0 when no answer came
	Elapsed time.Duration // request sent to answer read and parsed, or to the failure
	// Err is why the attempt did not give a usable answer (redacted); nil
	// when it did.
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
	// that called Retrieve; it must be safe for concurrent use and quick.
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

// Client asks one retriever for the hits of queries. It is safe for
// concurrent use; at most cfg.Concurrency requests are in flight at once
// (a slot is held for one attempt, not during backoff). It starts no
// goroutine of its own.
type Client struct {
	cfg     *Config
	send    *httpcall.Sender
	observe func(Attempt)
	backoff httpcall.Backoff
}

// NewClient returns a client for the retriever cfg describes.
func NewClient(cfg *Config, opts ClientOptions) (*Client, error) {
	if cfg == nil || cfg.Concurrency < 1 {
		return nil, errors.New("new retriever client: want a Config from Parse or Load")
	}
	if opts.BackoffBase < 0 || opts.BackoffMax < 0 || opts.MaxAnswerBytes < 0 {
		return nil, errors.New("new retriever client: negative backoff or answer limit")
	}
	limiter := opts.Limiter
	if limiter == nil {
		limiter = NewLocalLimiter(cfg.Rate)
	}
	send, err := httpcall.NewSender(httpcall.SenderOptions{HTTP: opts.HTTP, Limiter: limiter, Concurrency: cfg.Concurrency,
		Timeout: cfg.Timeout, MaxBody: cmp.Or(opts.MaxAnswerBytes, DefaultMaxAnswerBytes)})
	if err != nil {
		return nil, fmt.Errorf("new retriever client: %w", err)
	}
	return &Client{
		cfg:     cfg,
		send:    send,
		observe: opts.Observe,
		backoff: httpcall.Backoff{Base: cmp.Or(opts.BackoffBase, DefaultBackoffBase), Max: cmp.Or(opts.BackoffMax, DefaultBackoffMax)},
	}, nil
}

// Close releases the idle connections of the client's own transport.
// The client stays usable.
func (c *Client) Close() { c.send.Close() }

// Config returns the retriever file the client follows.
func (c *Client) Config() *Config { return c.cfg }

// Retrieve asks the retriever for the hits of q, retrying as the file
// says. Errors:
//   - a *schema.InputError wrapping ErrAnswerShape or ErrTemplate: the file
//     does not fit the answers or the query; stop the job (exit 2);
//   - a *QueryError: this query got no usable answer;
//   - ctx's error when ctx ends, or the Limiter's error.
//
// On error the Answer still counts the attempts made.
func (c *Client) Retrieve(ctx context.Context, q Query) (Answer, error) {
	k := cmp.Or(q.K, c.cfg.K)
	data := queryData{Query: q.Text, QueryID: q.ID, K: k, Tags: tagMap(q.Tags)}
	ans := Answer{QueryID: q.ID}
	var search any = data
	if e := c.cfg.embed; e != nil {
		var vec []byte
		res, err := c.call(ctx, q.ID, e, data, func(root any) *shapeError {
			var se *shapeError
			vec, se = e.vectorAt(root)
			return se
		})
		ans.Attempts += res.attempts
		if err != nil {
			return ans, err
		}
		ans.EmbedLatency = res.latency
		search = vectorData{queryData: data, Vector: vec}
	}
	var hits []Hit
	res, err := c.call(ctx, q.ID, &c.cfg.search, search, func(root any) *shapeError {
		var se *shapeError
		hits, se = c.cfg.hitsAt(root, k)
		return se
	})
	ans.Attempts += res.attempts
	if err != nil {
		return ans, err
	}
	ans.Hits, ans.Short, ans.Status = hits, len(hits) < k, res.status
	ans.Latency = ans.EmbedLatency + res.latency
	return ans, nil
}

// Probe sends one query before a job starts, to find configuration
// problems early: besides Retrieve's errors, it turns an answer that
// shows the request itself is wrong — a 4xx other than 408 and 429, or a
// 2xx that is not JSON — into a *schema.InputError naming the url key.
// An answer without hits passes (the id path could not be checked).
func (c *Client) Probe(ctx context.Context, q Query) (Answer, error) {
	ans, err := c.Retrieve(ctx, q)
	var qe *QueryError
	if !errors.As(err, &qe) {
		return ans, err
	}
	clientErr := qe.Status >= 400 && qe.Status < 500 && qe.Status != http.StatusRequestTimeout && qe.Status != http.StatusTooManyRequests
	if !clientErr && !errors.Is(qe, ErrMalformedAnswer) {
		return ans, err
	}
	key := "url"
	if qe.Step == StepEmbed {
		key = "embed.url"
	}
	return ans, &schema.InputError{File: c.cfg.File, Line: int64(max(c.cfg.lines[key], 1)), Field: key,
		Err: fmt.Errorf("probe query %q: the request does not work: %w", q.ID, qe)}
}
