package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/judging"
	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/shard"
)

// Task is one shard part to score, as the queue delivers it. Methods are
// called from one goroutine at a time, except InProgress, which may run
// concurrently with Payload.
type Task interface {
	// Job and ID name the task ("000003-0001" within a job).
	Job() string
	ID() string
	// Deliveries is 1 on the first delivery.
	Deliveries() int
	// Header returns a task header, "" if absent.
	Header(key string) string
	// Payload returns the shard bytes after checking their digest; a
	// mismatch or a missing object is an error wrapping shard.ErrCorrupt.
	Payload(ctx context.Context) ([]byte, error)
	// InProgress tells the queue the task is still being worked on.
	InProgress(ctx context.Context) error
	// Ack marks the task done and waits for the queue to confirm.
	Ack(ctx context.Context) error
	// Nak hands the task back for redelivery after delay.
	Nak(ctx context.Context, delay time.Duration) error
	// Term drops the task for good.
	Term(ctx context.Context, reason string) error
}

// ErrSourceClosed is returned by TaskSource.Next when the source will
// deliver no more tasks.
var ErrSourceClosed = errors.New("worker: task source closed")

// TaskSource delivers tasks.
type TaskSource interface {
	// Next blocks until a task is available, ctx is done or the source is
	// closed (ErrSourceClosed). It is called from one goroutine.
	Next(ctx context.Context) (Task, error)
}

// Failure is a failed attempt at a task.
type Failure struct {
	Worker     string
	Reason     string
	Deliveries int
	// Final means the task will not be retried: the job must fail.
	Final bool
}

// ResultStore keeps partial results and failure reports. Methods may be
// called concurrently.
type ResultStore interface {
	// PublishPartial stores data as the task's result unless one is stored
	// already; then it returns the stored bytes (and no error).
	PublishPartial(ctx context.Context, t Task, data []byte) (existing []byte, err error)
	// ReportFailure records a failed attempt.
	ReportFailure(ctx context.Context, t Task, f Failure) error
}

// Config configures a worker.
type Config struct {
	// ID names the worker in reports and logs (default host-pid).
	ID string
	// Concurrency is the number of tasks scored at once (default
	// GOMAXPROCS).
	Concurrency int
	// Heartbeat is the InProgress interval; keep it below a third of the
	// queue's ack wait (default 10s).
	Heartbeat time.Duration
	// MaxDeliver is the queue's delivery limit, so the worker knows a last
	// attempt (default 5).
	MaxDeliver int
	// NakDelay is the delay before a failed task is redelivered (default
	// 2s).
	NakDelay time.Duration
	// Logger receives structured logs.
	Logger zerolog.Logger
	// Fault injects failures for fault-tolerance tests; nil in production.
	Fault *FaultPlan
	// Metrics, if set, receives what the worker does, for monitoring.
	Metrics Metrics
}

// Metrics receives what a worker does, for monitoring (package
// internal/telemetry exports it as Prometheus metrics). Methods are called
// from the task goroutines, concurrently, and must return quickly.
type Metrics interface {
	// TaskStarted is called when a task is taken: its kind (KindOf) and
	// its delivery count (1 the first time).
	TaskStarted(kind string, delivery int)
	// TaskFinished is called once per task taken, when it is settled,
	// with one of the Outcome constants, the time since it was taken and
	// the number of queries it scored, or pairs it judged (0 unless done
	// or duplicate).
	TaskFinished(kind, outcome string, took time.Duration, queries int)
	// RetrieverAttempt is called for every HTTP attempt at the retriever
	// under test.
	RetrieverAttempt(a retriever.Attempt)
	// LLMAttempt is called for every HTTP attempt at the LLM judge.
	LLMAttempt(a llm.Attempt)
}

// Outcomes of a task, for Metrics.TaskFinished.
const (
	OutcomeDone      = "done"      // result stored, task acknowledged
	OutcomeDuplicate = "duplicate" // the stored result has the same bytes: acknowledged
	OutcomeFailed    = "failed"    // attempt failed, handed back for a retry
	OutcomeFinal     = "final"     // failed for good (corrupt, or the last delivery): the job fails
	OutcomeMismatch  = "mismatch"  // determinism check failed: the job fails
	OutcomeReleased  = "released"  // handed back unscored while the worker stops
)

// KindOf is the task's kind: its HeaderKind, KindScore when absent.
func KindOf(t Task) string {
	if k := t.Header(shard.HeaderKind); k != "" {
		return k
	}
	return shard.KindScore
}

// SettleTimeout bounds how long a stopping worker takes to store, ack or
// hand back a task it holds: with the scoring of the tasks in flight, the
// drain time after SIGTERM.
const SettleTimeout = 30 * time.Second

// Default values of Config.
const (
	DefaultHeartbeat  = 10 * time.Second
	DefaultMaxDeliver = 5
	DefaultNakDelay   = 2 * time.Second
)

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		ID:          host + "-" + strconv.Itoa(os.Getpid()),
		Concurrency: runtime.GOMAXPROCS(0),
		Heartbeat:   DefaultHeartbeat,
		MaxDeliver:  DefaultMaxDeliver,
		NakDelay:    DefaultNakDelay,
		Logger:      zerolog.Nop(),
	}
}

// Validate checks the configuration, naming the field and value.
func (c Config) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("worker config: ID is empty")
	case c.Concurrency < 1:
		return fmt.Errorf("worker config: Concurrency %d, want at least 1", c.Concurrency)
	case c.Heartbeat <= 0:
		return fmt.Errorf("worker config: Heartbeat %s, want > 0", c.Heartbeat)
	case c.MaxDeliver < 1:
		return fmt.Errorf("worker config: MaxDeliver %d, want at least 1", c.MaxDeliver)
	case c.NakDelay < 0:
		return fmt.Errorf("worker config: NakDelay %s, want >= 0", c.NakDelay)
	}
	return nil
}

// Run takes tasks from src and scores them until ctx is done or src is
// closed. On return every task taken has been acknowledged, handed back or
// terminated, and every goroutine started has exited. It returns nil on
// a clean stop (ctx cancelled or source closed).
func Run(ctx context.Context, cfg Config, src TaskSource, store ResultStore) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger.With().Str("component", "worker").Str("worker", cfg.ID).Logger()
	slots := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select { // reserve a slot before taking a task
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		t, err := src.Next(ctx)
		if err != nil {
			<-slots
			if errors.Is(err, ErrSourceClosed) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("take task: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			observe(cfg.Metrics, t, func() string { return handle(ctx, cfg, log, t, store) })
		}()
	}
}

// observe runs handle for a task and reports it to m, if set.
func observe(m Metrics, t Task, handle func() (outcome string)) {
	if m == nil {
		handle()
		return
	}
	kind := KindOf(t)
	m.TaskStarted(kind, t.Deliveries())
	start := time.Now()
	outcome := handle()
	queries := 0
	if outcome == OutcomeDone || outcome == OutcomeDuplicate {
		queries, _ = strconv.Atoi(t.Header(shard.HeaderQueries))
	}
	m.TaskFinished(kind, outcome, time.Since(start), queries)
}

// handle scores one task and settles it with the queue, and returns how
// (an Outcome). Settling uses a context that outlives cancellation, so a
// worker asked to stop still acks or hands back what it holds.
func handle(ctx context.Context, cfg Config, log zerolog.Logger, t Task, store ResultStore) string {
	log = log.With().Str("job", t.Job()).Str("task", t.ID()).Int("delivery", t.Deliveries()).Logger()
	settle, cancelSettle := context.WithTimeout(context.WithoutCancel(ctx), SettleTimeout)
	defer cancelSettle()
	start := time.Now()

	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		tick := time.NewTicker(cfg.Heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-tick.C:
				if err := t.InProgress(hbCtx); err != nil && hbCtx.Err() == nil {
					log.Debug().Err(err).Msg("progress report failed")
				}
			}
		}
	}()
	result, err := work(ctx, cfg, t, store)
	stopHeartbeat()
	hb.Wait()

	if err == nil {
		var dup bool
		dup, err = publish(settle, cfg, log, t, store, result)
		if err == nil && cfg.Fault.scoreTwice() {
			// A second scoring of the same task, as a redelivery would
			// produce (possibly altered, to prove the check).
			_, err = publish(settle, cfg, log, t, store, cfg.Fault.second(result))
		}
		if errors.Is(err, errMismatch) {
			return OutcomeMismatch // reported and terminated
		}
		if err == nil {
			cfg.Fault.afterPublish(t)
			if aerr := t.Ack(settle); aerr != nil {
				// Harmless: the task comes back, the stored partial wins.
				log.Warn().Err(aerr).Msg("ack failed; the task will be redelivered and deduplicated")
			}
			log.Debug().Dur("took", time.Since(start)).Bool("duplicate", dup).Msg("task done")
			if dup {
				return OutcomeDuplicate
			}
			return OutcomeDone
		}
	}

	corrupt := errors.Is(err, shard.ErrCorrupt) || errors.Is(err, retrieval.ErrCorrupt) || errors.Is(err, retrieval.ErrConfig) ||
		errors.Is(err, judging.ErrCorrupt) || errors.Is(err, judging.ErrConfig)
	if ctx.Err() != nil && !corrupt {
		// Stopping: hand the task back at once, without counting it as a
		// failure.
		_ = t.Nak(settle, 0)
		return OutcomeReleased
	}
	final := corrupt || t.Deliveries() >= cfg.MaxDeliver
	f := Failure{Worker: cfg.ID, Reason: err.Error(), Deliveries: t.Deliveries(), Final: final}
	log.Warn().Err(err).Bool("final", final).Msg("task failed")
	if rerr := store.ReportFailure(settle, t, f); rerr != nil {
		log.Error().Err(rerr).Msg("report failure")
	}
	if corrupt {
		_ = t.Term(settle, err.Error())
		return OutcomeFinal
	}
	_ = t.Nak(settle, cfg.NakDelay)
	if final {
		return OutcomeFinal
	}
	return OutcomeFailed
}

var errMismatch = errors.New("worker: result differs from the stored one")

// publish stores a result. If the task already has one (a redelivery, a
// late ack, a duplicate publish), it compares the bytes: equal means the
// duplicate is dropped (dup is true); different is a determinism failure,
// reported as final and the task terminated (errMismatch).
func publish(ctx context.Context, cfg Config, log zerolog.Logger, t Task, store ResultStore, result []byte) (dup bool, err error) {
	existing, err := store.PublishPartial(ctx, t, result)
	if err != nil {
		return false, err
	}
	if existing == nil {
		return false, nil
	}
	if bytes.Equal(existing, result) {
		cfg.Fault.sawDuplicate()
		return true, nil
	}
	f := Failure{Worker: cfg.ID, Deliveries: t.Deliveries(), Final: true,
		Reason: "determinism check failed: this worker's result differs from the one stored for the task"}
	log.Error().Msg(f.Reason)
	if rerr := store.ReportFailure(ctx, t, f); rerr != nil {
		return false, fmt.Errorf("report determinism failure: %w", rerr)
	}
	_ = t.Term(ctx, f.Reason)
	return false, errMismatch
}

// work does what the task's kind asks: score a shard part, or retrieve and
// score gold queries.
func work(ctx context.Context, cfg Config, t Task, store ResultStore) ([]byte, error) {
	switch kind := t.Header(shard.HeaderKind); kind {
	case "", shard.KindScore:
		return score(ctx, cfg, t)
	case shard.KindRetrieve:
		if err := cfg.Fault.duringScore(ctx, t); err != nil {
			return nil, err
		}
		return retrieve(ctx, t, store, cfg.Metrics)
	case shard.KindJudge:
		if err := cfg.Fault.duringScore(ctx, t); err != nil {
			return nil, err
		}
		return judge(ctx, t, store, cfg.Metrics)
	default:
		return nil, fmt.Errorf("%w: unknown task kind %q (a newer coordinator?)", shard.ErrCorrupt, kind)
	}
}

// score decodes and scores a task's payload.
func score(ctx context.Context, cfg Config, t Task) ([]byte, error) {
	mc, perQuery, err := TaskConfig(t.Header)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", shard.ErrCorrupt, err)
	}
	payload, err := t.Payload(ctx)
	if err != nil {
		return nil, err
	}
	if err := cfg.Fault.duringScore(ctx, t); err != nil {
		return nil, err
	}
	recs, err := shard.Decode(payload)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	sc, put, err := scorerFor(t, mc)
	if err != nil {
		return nil, err
	}
	defer put()
	res, err := sc.Score(recs, perQuery)
	if err != nil {
		return nil, fmt.Errorf("score task: %w", err)
	}
	return res.MarshalBinary()
}

// scorerFor takes a scorer for the task's scoring configuration from the
// pool; put returns it.
func scorerFor(t Task, mc metric.Config) (*metric.Scorer, func(), error) {
	key := t.Header(shard.HeaderMeasures) + "|" + t.Header(shard.HeaderRelLevel) + "|" + t.Header(shard.HeaderPaired) +
		"|" + t.Header(shard.HeaderPairing) + "|" + t.Header(shard.HeaderCurve) + "|" + t.Header(shard.HeaderJudgedOnly)
	pool, _ := scorers.LoadOrStore(key, &sync.Pool{})
	sc, _ := pool.(*sync.Pool).Get().(*metric.Scorer)
	if sc == nil {
		var err error
		if sc, err = metric.NewScorer(mc); err != nil {
			return nil, nil, err
		}
	}
	return sc, func() { pool.(*sync.Pool).Put(sc) }, nil
}

// scorers pools metric scorers per scoring configuration: reusing one
// (its kernel scratch and partial sums) avoids allocating a large partial
// for every task.
var scorers sync.Map // string -> *sync.Pool of *metric.Scorer

// TaskConfig reads the scoring configuration from task headers.
func TaskConfig(header func(string) string) (metric.Config, bool, error) {
	ms, err := metric.ParseList([]string{header(shard.HeaderMeasures)})
	if err != nil {
		return metric.Config{}, false, fmt.Errorf("task header %s: %w", shard.HeaderMeasures, err)
	}
	level, err := strconv.ParseInt(header(shard.HeaderRelLevel), 10, 32)
	if err != nil {
		return metric.Config{}, false, fmt.Errorf("task header %s: %w", shard.HeaderRelLevel, err)
	}
	cfg := metric.Config{Measures: ms, RelLevel: int32(level), Paired: header(shard.HeaderPaired) == "1",
		JudgedOnly: header(shard.HeaderJudgedOnly) == "1"}
	if c := header(shard.HeaderCurve); c != "" {
		if cfg.CurveDepth, err = strconv.Atoi(c); err != nil {
			return metric.Config{}, false, fmt.Errorf("task header %s: %w", shard.HeaderCurve, err)
		}
	}
	if p := header(shard.HeaderPairing); p != "" {
		if cfg.Pairing, err = metric.ParsePairing(p, ms); err != nil {
			return metric.Config{}, false, fmt.Errorf("task header %s: %w", shard.HeaderPairing, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return metric.Config{}, false, err
	}
	return cfg, header(shard.HeaderPerQuery) == "1", nil
}
