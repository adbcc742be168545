package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/synth"
)

// TestSameBitsAnyWorkersAndShards runs the distributed evaluation with 1,
// 2 and 8 workers and 1, 7 and 256 shards: every summary must equal the
// single-process one byte for byte.
func TestSameBitsAnyWorkersAndShards(t *testing.T) {
	gold, run := genData(t, 3000, schema.FormatJSONL, true)
	want := reference(t, newJob(t, gold, run))
	for _, c := range []struct{ workers, shards int }{{1, 1}, {2, 7}, {8, 256}} {
		s := startServer(t)
		startWorkers(t, s, c.workers, nil)
		q := connect(t, s, "coordinator")
		out, err := coordinator.RunDistributed(context.Background(), newJob(t, gold, run), q,
			coordinator.DistOptions{Shards: c.shards, PartBytes: 64 << 10})
		if err != nil {
			t.Fatalf("%d workers, %d shards: %v", c.workers, c.shards, err)
		}
		if got := comparable(t, out.Summary); got != want {
			t.Fatalf("%d workers, %d shards: summary differs from score's:\n%s\nwant\n%s", c.workers, c.shards, got, want)
		}
	}
}

// TestPairedBootstrapSameBits: a run compared with a baseline run in the
// same job gives the same bootstrap intervals, p-values, most regressed
// queries and recall curves with 1 and 8 workers as in one process.
func TestPairedBootstrapSameBits(t *testing.T) {
	dir := t.TempDir()
	gold, base := synth.Paths(dir, schema.FormatJSONL)
	if err := synth.Write(context.Background(), synth.Options{Queries: 2500, Depth: 50, Seed: 5, Format: schema.FormatJSONL, Tags: true, RecallRate: 0.8}, gold, base); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run.jsonl")
	if err := synth.Write(context.Background(), synth.Options{Queries: 2500, Depth: 50, Seed: 5, Format: schema.FormatJSONL, Tags: true, RecallRate: 0.7},
		filepath.Join(t.TempDir(), "gold.jsonl"), run); err != nil {
		t.Fatal(err)
	}
	job := func() coordinator.Job {
		j := newJob(t, gold, run)
		j.Baseline = coordinator.Input{Path: base}
		j.Metric.Paired, j.Metric.CurveDepth = true, 100
		j.Metric.Pairing = &metric.Pairing{Measures: []int{1, 4, 5}, Replicates: 500, Permutations: 500, Seed: 3, TopK: 10,
			Groups: []string{"category=legal", "difficulty=hard"}}
		return j
	}
	want := reference(t, job())
	if !strings.Contains(want, `"ci_low"`) || !strings.Contains(want, `"regressed_queries": [`) ||
		!strings.Contains(want, `"tag": "difficulty"`) {
		t.Fatalf("reference summary lacks the comparison:\n%s", want)
	}
	for _, c := range []struct{ workers, shards int }{{1, 7}, {8, 256}} {
		s := startServer(t)
		startWorkers(t, s, c.workers, nil)
		out, err := coordinator.RunDistributed(context.Background(), job(), connect(t, s, "coordinator"),
			coordinator.DistOptions{Shards: c.shards, PartBytes: 32 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := comparable(t, out.Summary); got != want {
			t.Fatalf("%d workers, %d shards: paired summary differs from score's:\n%s\nwant\n%s", c.workers, c.shards, got, want)
		}
	}
}

// TestCoordinatorBufferBounded: the rows the coordinator holds while it
// cuts tasks never exceed its buffer budget, however many shards there
// are. With 32 shards, 1 MiB parts and a 256 KiB budget, the run (about
// 1.2 MB of rows) would wait whole in the buffers until the end of the
// input; instead parts are published early (more tasks than shards), and
// the summary has the same bits.
func TestCoordinatorBufferBounded(t *testing.T) {
	gold, run := genData(t, 4000, schema.FormatJSONL, true)
	want := reference(t, newJob(t, gold, run))
	s := startServer(t)
	startWorkers(t, s, 2, nil)
	const budget = 256 << 10
	var peak, steps atomic.Int64
	opts := coordinator.DistOptions{Shards: 32, PartBytes: 1 << 20, BufferBytes: budget,
		OnBuffered: func(n int) {
			steps.Add(1)
			if int64(n) > peak.Load() {
				peak.Store(int64(n))
			}
		}}
	q := connect(t, s, "coordinator")
	out, err := coordinator.RunDistributed(context.Background(), newJob(t, gold, run), q, opts)
	if err != nil {
		t.Fatal(err)
	}
	if steps.Load() == 0 {
		t.Fatal("the buffer hook was never called")
	}
	if p := peak.Load(); p > budget {
		t.Fatalf("the coordinator buffered %d bytes of rows, budget %d", p, budget)
	}
	m, err := q.GetManifest(context.Background(), out.Summary.Execution.Job)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tasks <= opts.Shards {
		t.Fatalf("%d tasks for %d shards: no part was published early", m.Tasks, opts.Shards)
	}
	t.Logf("%d tasks, peak %d bytes buffered over %d steps", m.Tasks, peak.Load(), steps.Load())
	// The execution block names the workers whose results were merged
	// (not a count sampled every 2 s, which read 0 for short jobs).
	if ex := out.Summary.Execution; ex.Workers < 1 || ex.Workers > 2 || ex.Shards != opts.Shards {
		t.Fatalf("execution: %d workers, %d shards; want 1 or 2 workers, %d shards", ex.Workers, ex.Shards, opts.Shards)
	}
	if got := comparable(t, out.Summary); got != want {
		t.Fatalf("summary with a bounded buffer differs from score's:\n%s\nwant\n%s", got, want)
	}
}
