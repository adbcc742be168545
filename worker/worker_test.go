package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/internal/mock"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/shard"
	"github.com/evalgate/evalgate/worker"
)

// outcome records how a task was settled.
type outcome struct {
	mu       sync.Mutex
	acked    bool
	nakDelay time.Duration
	naked    bool
	termed   string
	failures []worker.Failure
	stored   [][]byte
}

func payload(t *testing.T) []byte {
	t.Helper()
	var r shard.Rows
	r.Append(0, "q1", []string{"category=a"}, []int32{2, 1}, []uint32{0, 3, 1})
	r.Append(1, "q2", nil, []int32{1}, []uint32{5, 0})
	b, err := shard.Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newTask returns a fake task whose settlement is recorded in o.
func newTask(o *outcome, data []byte, payloadErr error, deliveries int) *mock.Task {
	hdr := map[string]string{shard.HeaderMeasures: "RR,R@2", shard.HeaderRelLevel: "1"}
	return &mock.Task{
		JobFunc:        func() string { return "job" },
		IDFunc:         func() string { return "000001-0000" },
		DeliveriesFunc: func() int { return deliveries },
		HeaderFunc:     func(k string) string { return hdr[k] },
		PayloadFunc:    func(context.Context) ([]byte, error) { return data, payloadErr },
		InProgressFunc: func(context.Context) error { return nil },
		AckFunc: func(context.Context) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.acked = true
			return nil
		},
		NakFunc: func(_ context.Context, d time.Duration) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.naked, o.nakDelay = true, d
			return nil
		},
		TermFunc: func(_ context.Context, r string) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.termed = r
			return nil
		},
	}
}

// runOne runs a worker over a single task and returns once it is settled.
func runOne(t *testing.T, task worker.Task, store *mock.ResultStore) {
	t.Helper()
	delivered := false
	src := &mock.TaskSource{NextFunc: func(ctx context.Context) (worker.Task, error) {
		if !delivered {
			delivered = true
			return task, nil
		}
		return nil, worker.ErrSourceClosed
	}}
	cfg := worker.DefaultConfig()
	cfg.Concurrency, cfg.MaxDeliver, cfg.NakDelay = 1, 3, 5*time.Second
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t))
	if err := worker.Run(context.Background(), cfg, src, store); err != nil {
		t.Fatal(err)
	}
}

func recordingStore(o *outcome, existing []byte) *mock.ResultStore {
	return &mock.ResultStore{
		PublishPartialFunc: func(_ context.Context, _ worker.Task, data []byte) ([]byte, error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.stored = append(o.stored, data)
			return existing, nil
		},
		ReportFailureFunc: func(_ context.Context, _ worker.Task, f worker.Failure) error {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.failures = append(o.failures, f)
			return nil
		},
	}
}

func TestScoresStoresAndAcks(t *testing.T) {
	var o outcome
	runOne(t, newTask(&o, payload(t), nil, 1), recordingStore(&o, nil))
	if !o.acked || o.naked || o.termed != "" || len(o.failures) != 0 || len(o.stored) != 1 {
		t.Fatalf("outcome %+v", &o)
	}
	var res metric.ShardResult
	if err := res.UnmarshalBinary(o.stored[0]); err != nil {
		t.Fatal(err)
	}
	vals := res.Partial.Reduce()[0].Values
	// q1: first relevant at rank 1 (RR 1), 1 of 2 relevant in top 2;
	// q2: first relevant at rank 2 (RR 0.5), 1 of 1 in top 2.
	if vals[0].Value != 0.75 || vals[1].Value != 0.75 {
		t.Fatalf("RR, R@2 = %v, %v", vals[0].Value, vals[1].Value)
	}
}

func TestEqualDuplicateIsAcked(t *testing.T) {
	var first outcome
	runOne(t, newTask(&first, payload(t), nil, 1), recordingStore(&first, nil))
	var o outcome
	runOne(t, newTask(&o, payload(t), nil, 2), recordingStore(&o, first.stored[0]))
	if !o.acked || len(o.failures) != 0 || o.termed != "" {
		t.Fatalf("a duplicate equal to the stored result must be acked quietly: %+v", &o)
	}
}

func TestDifferentDuplicateFailsTheJob(t *testing.T) {
	var o outcome
	runOne(t, newTask(&o, payload(t), nil, 2), recordingStore(&o, []byte("EGR1 something else")))
	if o.acked || o.termed == "" || len(o.failures) != 1 || !o.failures[0].Final ||
		!strings.Contains(o.failures[0].Reason, "determinism check failed") {
		t.Fatalf("a differing result must be a final determinism failure: %+v", &o)
	}
}

func TestCorruptPayloadIsTerminated(t *testing.T) {
	for name, c := range map[string]struct {
		data []byte
		err  error
	}{
		"digest mismatch": {nil, errors.Join(shard.ErrCorrupt, errors.New("payload digest differs"))},
		"garbage":         {[]byte("not arrow"), nil},
	} {
		var o outcome
		runOne(t, newTask(&o, c.data, c.err, 1), recordingStore(&o, nil))
		if o.termed == "" || o.acked || o.naked || len(o.failures) != 1 || !o.failures[0].Final {
			t.Fatalf("%s: a corrupt payload must be terminated with a final failure: %+v", name, &o)
		}
	}
}

func TestTransientErrorIsRetriedThenFinal(t *testing.T) {
	outage := errors.New("object store unavailable")
	var o outcome
	runOne(t, newTask(&o, nil, outage, 1), recordingStore(&o, nil))
	if !o.naked || o.nakDelay != 5*time.Second || o.termed != "" || len(o.failures) != 1 || o.failures[0].Final {
		t.Fatalf("a transient error must be naked with the delay and reported as not final: %+v", &o)
	}
	var last outcome
	runOne(t, newTask(&last, nil, outage, 3), recordingStore(&last, nil))
	if !last.naked || len(last.failures) != 1 || !last.failures[0].Final || last.failures[0].Deliveries != 3 {
		t.Fatalf("the last allowed delivery must be reported as final: %+v", &last)
	}
}

func TestStoppedWorkerHandsTasksBack(t *testing.T) {
	var o outcome
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	task := newTask(&o, nil, nil, 1)
	task.PayloadFunc = func(ctx context.Context) ([]byte, error) {
		close(block)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	delivered := false
	src := &mock.TaskSource{NextFunc: func(ctx context.Context) (worker.Task, error) {
		if !delivered {
			delivered = true
			return task, nil
		}
		<-ctx.Done()
		return nil, worker.ErrSourceClosed
	}}
	cfg := worker.DefaultConfig()
	cfg.Concurrency = 1
	go func() { <-block; cancel() }()
	if err := worker.Run(ctx, cfg, src, recordingStore(&o, nil)); err != nil {
		t.Fatal(err)
	}
	if !o.naked || o.nakDelay != 0 || len(o.failures) != 0 || o.acked {
		t.Fatalf("a stopping worker must hand its task back at once, not count a failure: %+v", &o)
	}
}

func TestHeartbeatsWhileScoring(t *testing.T) {
	var o outcome
	var beats sync.WaitGroup
	beats.Add(2)
	var once1, once2 sync.Once
	n := 0
	task := newTask(&o, payload(t), nil, 1)
	slow := make(chan struct{})
	task.InProgressFunc = func(context.Context) error {
		n++
		if n == 1 {
			once1.Do(beats.Done)
		}
		if n == 2 {
			once2.Do(func() { beats.Done(); close(slow) })
		}
		return nil
	}
	data := task.PayloadFunc
	task.PayloadFunc = func(ctx context.Context) ([]byte, error) {
		<-slow // scoring "takes" two heartbeats
		return data(ctx)
	}
	delivered := false
	src := &mock.TaskSource{NextFunc: func(ctx context.Context) (worker.Task, error) {
		if !delivered {
			delivered = true
			return task, nil
		}
		return nil, worker.ErrSourceClosed
	}}
	cfg := worker.DefaultConfig()
	cfg.Concurrency, cfg.Heartbeat = 1, time.Millisecond
	if err := worker.Run(context.Background(), cfg, src, recordingStore(&o, nil)); err != nil {
		t.Fatal(err)
	}
	beats.Wait()
	if !o.acked {
		t.Fatal("task not acked")
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := worker.DefaultConfig()
	cfg.Concurrency = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Concurrency 0") {
		t.Fatalf("Validate = %v", err)
	}
	if _, err := worker.ParseFaultPlan("kill-during-score=x"); err == nil {
		t.Fatal("bad fault plan accepted")
	}
	p, err := worker.ParseFaultPlan("fail-task=000001-0000,fail-reason=boom,slow-task=000002-0000:1s")
	if err != nil || p.FailTask != "000001-0000" || p.SlowFor != time.Second {
		t.Fatalf("plan %+v, %v", p, err)
	}
}
