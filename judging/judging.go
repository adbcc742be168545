package judging

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/evalgate/evalgate/internal/fanout"
	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/retrieval"
)

// Pair is one (query, document) pair of a judge task.
type Pair struct {
	QueryID string `json:"query_id"`
	Query   string `json:"query"`
	DocID   string `json:"doc_id"`
	Title   string `json:"title,omitempty"`
	Passage string `json:"passage"`
	// PassageSHA256 identifies the passage's content (title and text),
	// for the cache key.
	PassageSHA256 string `json:"passage_sha256"`
	// HumanGrade is set on a pair re-judged to measure agreement: the gold
	// set's grade.
	HumanGrade *int `json:"human_grade,omitempty"`
}

// Task is the payload of a judge task.
type Task struct {
	// LLMFile names the LLM file; LLM is its content as written (each
	// worker reads ${VAR} from its own environment).
	LLMFile string `json:"llm_file"`
	LLM     string `json:"llm"`
	Pairs   []Pair `json:"pairs"`
}

const taskVersion = 1

type taskEnvelope struct {
	Version int `json:"version"`
	Task
}

// ErrCorrupt marks a payload or stored record that cannot be decoded.
var ErrCorrupt = errors.New("judging: corrupt data")

// ErrConfig marks a failure every later request of the job would share (a
// model the server does not serve, a refused key, a spent quota, a failing
// prompt template, an LLM file this worker cannot read): the job stops.
var ErrConfig = errors.New("judging: the LLM file does not work")

// MarshalBinary encodes the task.
func (t *Task) MarshalBinary() ([]byte, error) {
	return json.Marshal(taskEnvelope{Version: taskVersion, Task: *t})
}

// UnmarshalBinary decodes a task.
func (t *Task) UnmarshalBinary(b []byte) error {
	var e taskEnvelope
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("%w: decode judge task: %v", ErrCorrupt, err)
	}
	if e.Version != taskVersion {
		return fmt.Errorf("%w: judge task version %d, this build reads %d", ErrCorrupt, e.Version, taskVersion)
	}
	*t = e.Task
	return nil
}

// Record is what is stored of one pair: its judgment or its failure.
type Record struct {
	QueryID      string `json:"query_id"`
	DocID        string `json:"doc_id"`
	Grade        int    `json:"grade"` // llm.NoGrade for a failure
	Reason       string `json:"reason,omitempty"`
	Model        string `json:"model"`
	PromptSHA256 string `json:"prompt_sha256"`
	ServedModel  string `json:"served_model,omitempty"`
	// Tokens billed for this pair's judgment in this job: none when it
	// came from the cache.
	PromptTokens     int   `json:"prompt_tokens,omitempty"`
	CompletionTokens int   `json:"completion_tokens,omitempty"`
	Cached           bool  `json:"cached,omitempty"`
	Attempts         int   `json:"attempts,omitempty"`
	LatencyNS        int64 `json:"latency_ns,omitempty"`
	// Error is set for a failed judgment: why (redacted).
	Error string `json:"error,omitempty"`
}

// Failed reports whether the pair got no grade.
func (r *Record) Failed() bool { return r.Error != "" }

func decodeRecord(b []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: decode stored judgment: %v", ErrCorrupt, err)
	}
	return &r, nil
}

// Key is the cache key of a judgment: the hex SHA-256 of the model, the
// prompt's hash, the query text and the passage's hash.
func Key(model, promptSHA256, query, passageSHA256 string) string {
	h := sha256.New()
	for _, s := range []string{model, promptSHA256, query, passageSHA256} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Cache keeps judgments across jobs. Methods may be called concurrently.
type Cache interface {
	// Get returns the judgment cached under key, if any.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Put caches data under key unless a judgment is cached there
	// already (first writer wins).
	Put(ctx context.Context, key string, data []byte) error
}

// Env is what running a task needs besides the task.
type Env struct {
	Client  *llm.Client
	Answers retrieval.Answers // the task's stored outcomes, first writer wins
	Cache   Cache             // nil: no cache across jobs
	// Asked, if set, is called for each pair sent to the model (not for
	// one whose outcome was stored or cached).
	Asked func()
}

// Run runs a judge task and returns the encoded Result.
func Run(ctx context.Context, t *Task, env Env) ([]byte, error) {
	stored, err := env.Answers.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load stored judgments: %w", err)
	}
	recs := make([]*Record, len(t.Pairs))
	for n, data := range stored {
		if n < 0 || n >= len(recs) {
			return nil, fmt.Errorf("%w: stored judgment for pair %d of a task of %d", ErrCorrupt, n, len(recs))
		}
		if recs[n], err = decodeRecord(data); err != nil {
			return nil, err
		}
	}
	if err := judgeMissing(ctx, t, env, recs); err != nil {
		return nil, err
	}
	res := &Result{Records: make([]Record, len(recs))}
	for n, r := range recs {
		p := &t.Pairs[n]
		if r.QueryID != p.QueryID || r.DocID != p.DocID {
			return nil, fmt.Errorf("%w: the stored judgment of pair %d is for %q/%q, not %q/%q", ErrCorrupt, n, r.QueryID, r.DocID, p.QueryID, p.DocID)
		}
		res.Records[n] = *r
	}
	return json.Marshal(res)
}

// judgeMissing fills the records of the pairs without one, at most the
// LLM file's concurrency at once.
func judgeMissing(ctx context.Context, t *Task, env Env, recs []*Record) error {
	return fanout.Each(ctx, len(recs), env.Client.Config().Concurrency,
		func(n int) bool { return recs[n] != nil },
		func(ctx context.Context, n int) error {
			rec, err := judgeOne(ctx, t, env, n)
			if err == nil {
				recs[n] = rec
			}
			return err
		})
}

// judgeOne finds pair n's outcome in the cache or asks the model, and
// stores it for the task; the record returned is the stored one.
func judgeOne(ctx context.Context, t *Task, env Env, n int) (*Record, error) {
	p := &t.Pairs[n]
	cfg := env.Client.Config()
	key := Key(cfg.Model, cfg.PromptSHA256, p.Query, p.PassageSHA256)
	rec, err := cached(ctx, env.Cache, key, p)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		if env.Asked != nil {
			env.Asked()
		}
		j, err := env.Client.Judge(ctx, llm.Pair{QueryID: p.QueryID, Query: p.Query, DocID: p.DocID, Title: p.Title, Passage: p.Passage})
		switch {
		case llm.IsJobFatal(err):
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		rec = recordOf(j, err)
		if err == nil && env.Cache != nil {
			c := *rec
			c.PromptTokens, c.CompletionTokens, c.Attempts, c.LatencyNS = 0, 0, 0, 0
			data, _ := json.Marshal(c)
			if err := env.Cache.Put(ctx, key, data); err != nil {
				return nil, fmt.Errorf("cache the judgment of %q/%q: %w", p.QueryID, p.DocID, err)
			}
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	kept, err := env.Answers.Store(ctx, n, data)
	if err != nil {
		return nil, fmt.Errorf("store the judgment of %q/%q: %w", p.QueryID, p.DocID, err)
	}
	return decodeRecord(kept)
}

// cached returns the cached judgment of a pair, marked as cached, or nil.
func cached(ctx context.Context, c Cache, key string, p *Pair) (*Record, error) {
	if c == nil {
		return nil, nil
	}
	data, ok, err := c.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read the judgment cache: %w", err)
	}
	if !ok {
		return nil, nil
	}
	r, err := decodeRecord(data)
	if err != nil || r.Failed() {
		return nil, nil // a broken entry is asked again
	}
	// The cache is by content: the same text under another id is the same
	// judgment.
	r.QueryID, r.DocID, r.Cached = p.QueryID, p.DocID, true
	r.PromptTokens, r.CompletionTokens, r.Attempts, r.LatencyNS = 0, 0, 0, 0
	return r, nil
}

// recordOf turns the client's judgment or error into a record.
func recordOf(j llm.Judgment, err error) *Record {
	r := &Record{QueryID: j.QueryID, DocID: j.DocID, Grade: j.Grade, Reason: j.Reason, Model: j.Model, PromptSHA256: j.PromptSHA256,
		ServedModel: j.ServedModel, PromptTokens: j.Usage.Prompt, CompletionTokens: j.Usage.Completion, Attempts: j.Attempts,
		LatencyNS: int64(j.Latency)}
	if err != nil {
		r.Grade, r.Reason, r.Error = llm.NoGrade, "", err.Error()
	}
	return r
}
