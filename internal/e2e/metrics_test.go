package e2e

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/schema"
)

// coordinatorCounts is a coordinator.Metrics that adds up what it is told.
type coordinatorCounts struct {
	mu             sync.Mutex
	inputBytes     int64
	published      int
	publishedBytes int
}

func (c *coordinatorCounts) InputRead(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inputBytes += n
}

func (c *coordinatorCounts) TaskPublished(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.published++
	c.publishedBytes += n
}

// TestCoordinatorMetrics: the coordinator reports the inputs it read in
// full (gold set, run and baseline run, by size) and every task it
// enqueued, with its payload's size.
func TestCoordinatorMetrics(t *testing.T) {
	gold, run := genData(t, 1200, schema.FormatJSONL, false)
	s := startServer(t)
	startWorkers(t, s, 1, nil)
	q := connect(t, s, "coordinator")
	var counts coordinatorCounts
	var mu sync.Mutex
	enqueued := 0
	job := newJob(t, gold, run)
	job.Baseline = coordinator.Input{Path: run}
	job.Metric.Paired = true
	_, err := coordinator.RunDistributed(context.Background(), job, q, coordinator.DistOptions{Shards: 3, PartBytes: 32 << 10,
		Metrics: &counts, AfterPublish: func(_ string, ok bool) {
			mu.Lock()
			defer mu.Unlock()
			if ok {
				enqueued++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if want := size(gold) + 2*size(run); counts.inputBytes != want {
		t.Errorf("input bytes %d, want %d (gold, run, baseline run)", counts.inputBytes, want)
	}
	if counts.published != enqueued || enqueued < 3 {
		t.Errorf("%d tasks reported published, %d enqueued (want at least one per shard)", counts.published, enqueued)
	}
	if counts.publishedBytes < counts.published*1024 {
		t.Errorf("%d bytes published in %d tasks: payload sizes not reported", counts.publishedBytes, counts.published)
	}
}
