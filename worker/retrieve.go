package worker

import (
	"context"
	"fmt"
	"os"

	"github.com/evalgate/evalgate/judging"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/shard"
)

// LiveStore is what retrieve tasks need of the queue besides a
// ResultStore: where the task's answers are kept (first writer wins), and
// the rate limit every worker of a job shares. A store that lacks it runs
// score tasks only.
type LiveStore interface {
	// TaskAnswers returns the answer store of a task.
	TaskAnswers(job, task string) retrieval.Answers
	// JobLimiter returns the limiter of a job's requests to one service.
	JobLimiter(job, service string, rate float64) (retriever.Limiter, error)
	// JudgmentCache returns the cache of LLM judgments across jobs.
	JudgmentCache() judging.Cache
}

var retrieverClients = newClientCache[*retriever.Client]()

// retrieverClient returns the client of job for the retriever file of t,
// parsing the file with this worker's environment the first time. The
// client reports its attempts to m (if set) of the worker that made it.
func retrieverClient(job string, t *retrieval.Task, live LiveStore, m Metrics) (*retriever.Client, error) {
	cfg, err := retriever.Parse(t.RetrieverFile, []byte(t.Retriever), os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: this worker cannot read the retriever file: %w", retrieval.ErrConfig, err)
	}
	return retrieverClients.get(job+"|"+cfg.Digest(), func() (*retriever.Client, error) {
		opts := retriever.ClientOptions{}
		if m != nil {
			opts.Observe = m.RetrieverAttempt
		}
		if cfg.Rate > 0 {
			if opts.Limiter, err = live.JobLimiter(job, "retriever", cfg.Rate); err != nil {
				return nil, err
			}
		}
		c, err := retriever.NewClient(cfg, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", retrieval.ErrConfig, err)
		}
		return c, nil
	})
}

// retrieve runs a retrieve task: the retriever is asked for the task's
// gold queries (those without a stored answer), and the answers scored.
func retrieve(ctx context.Context, t Task, store ResultStore, m Metrics) ([]byte, error) {
	live, ok := store.(LiveStore)
	if !ok {
		return nil, fmt.Errorf("%w: this worker's queue cannot run retrieve tasks", shard.ErrCorrupt)
	}
	mc, perQuery, err := TaskConfig(t.Header)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", shard.ErrCorrupt, err)
	}
	payload, err := t.Payload(ctx)
	if err != nil {
		return nil, err
	}
	var task retrieval.Task
	if err := task.UnmarshalBinary(payload); err != nil {
		return nil, err
	}
	client, err := retrieverClient(t.Job(), &task, live, m)
	if err != nil {
		return nil, err
	}
	sc, put, err := scorerFor(t, mc)
	if err != nil {
		return nil, err
	}
	defer put()
	return retrieval.Run(ctx, &task, retrieval.Env{Client: client, Answers: live.TaskAnswers(t.Job(), t.ID()), Scorer: sc,
		PerQuery: perQuery})
}
