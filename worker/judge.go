package worker

import (
	"context"
	"fmt"
	"os"

	"github.com/evalgate/evalgate/judging"
	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/shard"
)

var llmClients = newClientCache[*llm.Client]()

// llmClient returns the client of job for the LLM file of t, parsing the
// file with this worker's environment the first time. The client reports
// its attempts to m (if set) of the worker that made it.
func llmClient(job string, t *judging.Task, live LiveStore, m Metrics) (*llm.Client, error) {
	cfg, err := llm.Parse(t.LLMFile, []byte(t.LLM), os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: this worker cannot read the LLM file: %w", judging.ErrConfig, err)
	}
	return llmClients.get(job+"|"+cfg.Digest(), func() (*llm.Client, error) {
		opts := llm.ClientOptions{}
		if m != nil {
			opts.Observe = m.LLMAttempt
		}
		if cfg.Rate > 0 {
			if opts.Limiter, err = live.JobLimiter(job, "llm", cfg.Rate); err != nil {
				return nil, err
			}
		}
		c, err := llm.NewClient(cfg, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", judging.ErrConfig, err)
		}
		return c, nil
	})
}

// judge runs a judge task: the task's pairs without a stored outcome are
// looked up in the judgment cache, or graded by the model.
func judge(ctx context.Context, t Task, store ResultStore, m Metrics) ([]byte, error) {
	live, ok := store.(LiveStore)
	if !ok {
		return nil, fmt.Errorf("%w: this worker's queue cannot run judge tasks", shard.ErrCorrupt)
	}
	payload, err := t.Payload(ctx)
	if err != nil {
		return nil, err
	}
	var task judging.Task
	if err := task.UnmarshalBinary(payload); err != nil {
		return nil, err
	}
	client, err := llmClient(t.Job(), &task, live, m)
	if err != nil {
		return nil, err
	}
	return judging.Run(ctx, &task, judging.Env{Client: client, Answers: live.TaskAnswers(t.Job(), t.ID()), Cache: live.JudgmentCache()})
}
