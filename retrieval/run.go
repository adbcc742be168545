package retrieval

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v16/arrow"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/internal/fanout"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/shard"
)

// Answers stores one task's answers, first writer wins. Methods may be
// called concurrently.
type Answers interface {
	// Load returns the records stored for the task's queries, by index in
	// the task.
	Load(ctx context.Context) (map[int][]byte, error)
	// Store stores the record of query n unless one is stored already,
	// and returns the record that is stored (data, or the earlier one).
	Store(ctx context.Context, n int, data []byte) ([]byte, error)
}

// Env is what running a task needs besides the task.
type Env struct {
	// Client asks the retriever the task's file describes.
	Client *retriever.Client
	// Answers stores the task's answers.
	Answers Answers
	// Scorer scores the rows (not shared with a concurrent Run).
	Scorer *metric.Scorer
	// PerQuery asks for every query's values in the result.
	PerQuery bool
	// Asked, if set, is called for each query sent to the retriever (not
	// for one whose answer was stored already).
	Asked func()
}

// ErrConfig marks a failure no retry can fix: the retriever's answers do
// not fit its file (no hit list, a hit without an id), or a template fails
// for a query. The job stops, naming the file's key.
var ErrConfig = errors.New("retrieval: the retriever file does not fit the retriever")

// Run runs a retrieve task: it reads the stored answers, asks the
// retriever for the other queries (storing each answer as it arrives),
// scores every query and returns the encoded Result. Two runs of one task
// give the same bytes: everything comes from the stored answers.
func Run(ctx context.Context, t *Task, env Env) ([]byte, error) {
	stored, err := env.Answers.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load stored answers: %w", err)
	}
	recs := make([]*Record, len(t.Queries))
	for n, data := range stored {
		if n < 0 || n >= len(recs) {
			return nil, fmt.Errorf("%w: stored answer for query %d of a task of %d", ErrCorrupt, n, len(recs))
		}
		if recs[n], err = DecodeRecord(data); err != nil {
			return nil, err
		}
	}
	if err := ask(ctx, t, env, recs); err != nil {
		return nil, err
	}
	return score(t, env, recs)
}

// ask fills the records of the queries without one, with at most the
// retriever's concurrency of them in flight (the client bounds the
// process's requests across tasks too).
func ask(ctx context.Context, t *Task, env Env, recs []*Record) error {
	return fanout.Each(ctx, len(recs), env.Client.Config().Concurrency,
		func(n int) bool { return recs[n] != nil },
		func(ctx context.Context, n int) error {
			rec, err := askOne(ctx, t, env, n)
			if err == nil {
				recs[n] = rec
			}
			return err
		})
}

// askOne asks for query n and stores the outcome; the record returned is
// the stored one (another attempt at the task may have stored first).
func askOne(ctx context.Context, t *Task, env Env, n int) (*Record, error) {
	q := &t.Queries[n]
	if env.Asked != nil {
		env.Asked()
	}
	a, err := env.Client.Retrieve(ctx, retriever.Query{ID: q.ID, Text: q.Text, Tags: q.Groups})
	var qerr *retriever.QueryError
	switch {
	case errors.As(err, &qerr):
	case schema.IsInvalidInput(err):
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	case err != nil:
		return nil, err // cancelled, or the rate limiter failed
	}
	data, err := recordOf(a, qerr).encode()
	if err != nil {
		return nil, err
	}
	kept, err := env.Answers.Store(ctx, n, data)
	if err != nil {
		return nil, fmt.Errorf("store the answer of query %q: %w", q.ID, err)
	}
	return DecodeRecord(kept)
}

// score builds the task's rows from the records and scores them.
func score(t *Task, env Env, recs []*Record) ([]byte, error) {
	res := &Result{}
	var rows shard.Rows
	var rk ingest.Ranker
	for n := range t.Queries {
		q, r := &t.Queries[n], recs[n]
		if r.QueryID != q.ID {
			return nil, fmt.Errorf("%w: the stored answer of query %d is for %q, not %q", ErrCorrupt, n, r.QueryID, q.ID)
		}
		seq, ids := res.count(t, q, r)
		if seq < 0 {
			continue // not scored (--skip-no-relevant, --only-run-queries)
		}
		rank := rk.Rank(q.ID, q.Judged, ids, t.Depth)
		if d := int64(len(rank.Duplicates)); d > 0 {
			res.Stats.DuplicateDocs += d
			res.Stats.QueriesWithDupes++
		}
		res.Stats.DepthTruncated += rank.Truncated
		if t.JudgedOnly {
			res.Stats.UnjudgedDropped += ingest.Unjudged(q.Grades, rank.IDs)
		}
		res.Digest = ingest.AddDigest(res.Digest, rank.Digest)
		if t.Paired {
			if len(q.Baseline) == 0 {
				res.Stats.BaselineMissing++
			}
			rows.AppendPair(seq, q.ID, q.Groups, q.Grades, rank.IDs, q.Baseline)
		} else {
			rows.Append(seq, q.ID, q.Groups, q.Grades, rank.IDs)
		}
	}
	if rows.Len() > 0 {
		rec := rows.Record()
		defer rec.Release()
		sr, err := env.Scorer.Score([]arrow.Record{rec}, env.PerQuery)
		if err != nil {
			return nil, fmt.Errorf("score task: %w", err)
		}
		if res.Score, err = sr.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	return res.MarshalBinary()
}
