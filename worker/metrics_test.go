package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/internal/mock"
	"github.com/evalgate/evalgate/shard"
	"github.com/evalgate/evalgate/worker"
)

// observed records what a worker reported to its Metrics.
type observed struct {
	mu     sync.Mutex
	events []string
}

func (o *observed) metrics() *mock.WorkerMetrics {
	return &mock.WorkerMetrics{
		TaskStartedFunc: func(kind string, delivery int) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.events = append(o.events, fmt.Sprintf("start %s %d", kind, delivery))
		},
		TaskFinishedFunc: func(kind, outcome string, took time.Duration, queries int) {
			o.mu.Lock()
			defer o.mu.Unlock()
			if took <= 0 {
				o.events = append(o.events, "no duration")
			}
			o.events = append(o.events, fmt.Sprintf("finish %s %s %d", kind, outcome, queries))
		},
	}
}

// TestMetricsSeeEveryOutcome: each way a task is settled reaches Metrics
// once, with the task's kind, its delivery and, for a result stored or
// equal to the stored one, its queries.
func TestMetricsSeeEveryOutcome(t *testing.T) {
	var first outcome
	runOne(t, newTask(&first, payload(t), nil, 1), recordingStore(&first, nil))
	stored := first.stored[0]
	outage := errors.New("object store unavailable")
	for _, c := range []struct {
		name       string
		data       []byte
		err        error
		deliveries int
		existing   []byte
		kind       string
		want       string
	}{
		{"stored", payload(t), nil, 1, nil, "", "finish score done 2"},
		{"stored, kind named", payload(t), nil, 1, nil, shard.KindScore, "finish score done 2"},
		{"equal duplicate", payload(t), nil, 2, stored, "", "finish score duplicate 2"},
		{"different duplicate", payload(t), nil, 2, []byte("EGR1 other"), "", "finish score mismatch 0"},
		{"corrupt", []byte("not arrow"), nil, 1, nil, "", "finish score final 0"},
		{"transient", nil, outage, 1, nil, "", "finish score failed 0"},
		{"transient, last delivery", nil, outage, 3, nil, "", "finish score final 0"},
		{"unknown kind", payload(t), nil, 1, nil, "from-the-future", "finish from-the-future final 0"},
	} {
		var o outcome
		var seen observed
		task := newTask(&o, c.data, c.err, c.deliveries)
		hdr := task.HeaderFunc
		task.HeaderFunc = func(k string) string {
			switch k {
			case shard.HeaderQueries:
				return "2"
			case shard.HeaderKind:
				return c.kind
			}
			return hdr(k)
		}
		runObserved(t, context.Background(), task, recordingStore(&o, c.existing), seen.metrics())
		kind := c.kind
		if kind == "" {
			kind = shard.KindScore
		}
		want := []string{fmt.Sprintf("start %s %d", kind, c.deliveries), c.want}
		if fmt.Sprint(seen.events) != fmt.Sprint(want) {
			t.Errorf("%s: reported %q, want %q", c.name, seen.events, want)
		}
	}
}

// TestMetricsSeeReleasedTask: a task handed back by a stopping worker is
// reported as released.
func TestMetricsSeeReleasedTask(t *testing.T) {
	var o outcome
	var seen observed
	ctx, cancel := context.WithCancel(context.Background())
	task := newTask(&o, nil, nil, 1)
	task.PayloadFunc = func(ctx context.Context) ([]byte, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	runObserved(t, ctx, task, recordingStore(&o, nil), seen.metrics())
	if want := "[start score 1 finish score released 0]"; fmt.Sprint(seen.events) != want {
		t.Fatalf("reported %q, want %s", seen.events, want)
	}
}

// runObserved runs a worker reporting to m over a single task, until the
// task is settled.
func runObserved(t *testing.T, ctx context.Context, task worker.Task, store *mock.ResultStore, m worker.Metrics) {
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
	cfg.Metrics = m
	if err := worker.Run(ctx, cfg, src, store); err != nil {
		t.Fatal(err)
	}
}
