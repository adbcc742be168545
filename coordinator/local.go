package coordinator

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/perquery"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/schema"
)

// Score evaluates a job in this process: the reference evaluation. With
// Job.Fill, it evaluates the job a second time with the judgments filled
// into the gold set (Summary.Filled).
func Score(ctx context.Context, job Job) (*Outcome, error) {
	out, recs, err := score(ctx, job)
	if err != nil || job.Fill == nil {
		return out, err
	}
	if err := scoreFilled(ctx, job, out, recs); err != nil {
		return nil, err
	}
	return out, nil
}

// score evaluates a job once; for a live retrieval it also returns the
// answers' records in gold order.
func score(ctx context.Context, job Job) (*Outcome, []*retrieval.Record, error) {
	start := time.Now()
	if err := job.Validate(); err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	var fill fillCounts
	gold, err := loadGold(ctx, &job, &fill)
	if err != nil {
		return nil, nil, err
	}
	job.Logger.Info().Int("queries", gold.NumQueries()).Dur("took", time.Since(t0)).Msg("gold set loaded")
	// Loading leaves the collector's next goal at twice its transient
	// peak; a run that allocates little (a columnar file read into
	// recycled memory) would grow the heap to it before the next
	// collection. One collection now sets the goal from what stays live.
	runtime.GC()
	base, err := loadBaseline(ctx, &job, gold)
	if err != nil {
		return nil, nil, err
	}
	if job.Retriever != nil {
		return scoreLive(ctx, &job, gold, base, start)
	}
	job.Ingest.Baseline = base
	res, partial, err := scoreRun(ctx, &job, gold, false)
	if errors.Is(err, ingest.ErrRunNotGrouped) {
		job.Logger.Info().Str("run", job.Run.Path).
			Msg("the run lists some queries' documents in several places; reading it again through temporary files")
		res, partial, err = scoreRun(ctx, &job, gold, true)
	}
	if err != nil {
		return nil, nil, err
	}
	cfg := job.Ingest
	if cfg.Parallelism <= 0 {
		cfg = ingestDefaults(cfg)
	}
	o := outcome{goldDigest: gold.Digest(), gold: gold, run: res.Stats, runDigest: digestString(res.RunDigest), partial: partial}
	if base != nil {
		o.base, o.baseDigest = &base.Result.Stats, digestString(base.Result.RunDigest)
	}
	s, err := buildSummary(&job, o, execution("local", cfg.Parallelism, 0, "", start))
	if err != nil {
		return nil, nil, err
	}
	return &Outcome{Summary: s, Partial: partial, Stats: res.Stats, fill: fill}, nil, nil
}

func ingestDefaults(c ingest.Config) ingest.Config {
	// The joiner applies the same default; repeat it for the summary.
	if c.Parallelism <= 0 {
		c.Parallelism = defaultParallelism()
	}
	return c
}

// scoreRun joins and scores the run once: streamed, or regrouped through
// spill files (for a run whose queries are interleaved).
func scoreRun(ctx context.Context, job *Job, gold *ingest.Gold, spilled bool) (*ingest.Result, *metric.Partial, error) {
	opts := job.Read
	opts.Format = job.Run.Format
	opts.ReuseMemory = true // the join keeps nothing of a released batch
	opts.SkipRanks = job.Ingest.RankBy == ingest.RankByScore
	r, err := schema.Open(ctx, job.Run.Path, schema.RoleRun, opts)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()

	var pq perquery.Writer
	if job.PerQuery != nil {
		if pq, err = job.PerQuery(); err != nil {
			return nil, nil, err
		}
		defer func() {
			if pq != nil {
				pq.Abort()
			}
		}()
	}
	cfg := ingestDefaults(job.Ingest)
	kernels := make([]*metric.Kernel, cfg.Parallelism)
	partials := make([]*metric.Partial, cfg.Parallelism)
	for i := range kernels {
		if kernels[i], err = metric.NewKernel(job.Metric); err != nil {
			return nil, nil, err
		}
		partials[i] = metric.NewPartialFor(job.Metric)
	}
	nm := len(job.Metric.Measures)
	handlers := ingest.Handlers{
		Process: func(w int, u *ingest.Unit) error {
			rec := u.Rows.Record()
			defer rec.Release()
			v, err := schema.ViewShardBatch(rec)
			if err != nil {
				return err
			}
			var collect func(int, []float64)
			if pq != nil {
				u.Scores = make([]float64, 0, v.Rows*nm)
				collect = func(_ int, vals []float64) { u.Scores = append(u.Scores, vals...) }
			}
			return kernels[w].Score(v, partials[w], collect)
		},
	}
	if pq != nil {
		handlers.Commit = func(u *ingest.Unit) error {
			for i, gi := range u.Gold {
				if err := pq.Write(gold.QueryID(gi), u.Scores[i*nm:(i+1)*nm]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	j := ingest.NewJoiner(gold, cfg)
	var res *ingest.Result
	if spilled {
		res, err = j.JoinSpilled(ctx, r, handlers)
	} else {
		res, err = j.Join(ctx, r, handlers)
	}
	if err != nil {
		return nil, nil, err
	}
	total := metric.NewPartialFor(job.Metric)
	for _, p := range partials {
		if err := total.Merge(p); err != nil {
			return nil, nil, err
		}
	}
	if pq != nil {
		if err := pq.Commit(); err != nil {
			return nil, nil, err
		}
		pq = nil
	}
	return res, total, nil
}
