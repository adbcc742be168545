package e2e

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/perquery"
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

// TestInterleavedRunSameBits: a run that lists a query's documents in
// several places goes through the queue (regrouped through spill files)
// with the same summary and per-query file as `score` gives, whether the
// interleaving shows at once (a shuffled run) or only at the end, after
// tasks were published and scored (the abandoned tasks' results must not
// count).
func TestInterleavedRunSameBits(t *testing.T) {
	gold, grouped := genData(t, 3000, schema.FormatTREC, false)
	data, err := os.ReadFile(grouped)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1] // the empty piece after the last newline
	shuffled := slices.Clone(lines)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// The first line moved to the end: the first query shows up again
	// after every other one.
	late := append(slices.Clone(lines[1:]), lines[0])
	groupedOut, err := coordinator.Score(context.Background(), newJob(t, gold, grouped))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]string{"shuffled": shuffled, "interleaved at the end": late, "shuffled, in Arrow IPC": shuffled} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			run := filepath.Join(dir, "run.trec")
			if err := os.WriteFile(run, []byte(strings.Join(content, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(name, "Arrow") {
				// Query ids run-end encoded, a run of one row or a few.
				run = convertRun(t, run, filepath.Join(dir, "run.arrow"))
			}
			job := func(perQuery string) coordinator.Job {
				j := newJob(t, gold, run)
				j.Ingest.SpillDir = dir
				j.PerQuery = func() (perquery.Writer, error) { return perquery.Create(perQuery, j.Metric.Measures) }
				return j
			}
			local, err := coordinator.Score(context.Background(), job(filepath.Join(dir, "local.tsv")))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(local.Summary.Measures, groupedOut.Summary.Measures) {
				t.Fatalf("score of the interleaved run: %v, of the grouped one %v", local.Summary.Measures, groupedOut.Summary.Measures)
			}
			s := startServer(t)
			startWorkers(t, s, 2, nil)
			q := connect(t, s, "coordinator")
			var direct atomic.Int64
			out, err := coordinator.RunDistributed(context.Background(), job(filepath.Join(dir, "dist.tsv")), q,
				coordinator.DistOptions{Shards: 7, PartBytes: 16 << 10, AfterPublish: func(task string, _ bool) {
					if !strings.Contains(task, "-r") {
						direct.Add(1)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := comparable(t, out.Summary), comparable(t, local.Summary); got != want {
				t.Fatalf("distributed summary differs from score's:\n%s\nwant\n%s", got, want)
			}
			a, _ := os.ReadFile(filepath.Join(dir, "local.tsv"))
			b, _ := os.ReadFile(filepath.Join(dir, "dist.tsv"))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Fatalf("per-query files differ (%d and %d bytes)", len(a), len(b))
			}
			m, err := q.GetManifest(context.Background(), out.Summary.Execution.Job)
			if err != nil {
				t.Fatal(err)
			}
			if !m.Regrouped {
				t.Fatal("the manifest does not say the run was regrouped")
			}
			if name == "interleaved at the end" && direct.Load() == 0 {
				t.Fatal("no task was published before the interleaving showed: the test lost its point")
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "evalgate-spill-*")); len(left) > 0 {
				t.Fatalf("spill files left behind: %v", left)
			}
		})
	}
}

// convertRun converts the run in to out, an Arrow IPC file, as `evalgate
// convert` does, and returns out.
func convertRun(t *testing.T, in, out string) string {
	t.Helper()
	r, err := schema.Open(context.Background(), in, schema.RoleRun, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := schema.Convert(context.Background(), r, f, out, schema.FormatArrow, schema.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// judgedOnly makes a job score bpref as well, at relevance level 2 (grade
// 1 documents are then judged non-relevant), cut at depth 30 and with the
// unjudged documents dropped (--judged-only).
func judgedOnly(j coordinator.Job) coordinator.Job {
	j.Metric.Measures = append(slices.Clone(j.Metric.Measures), metric.Measure{Kind: metric.KindBpref})
	j.Metric.RelLevel, j.Ingest.RelLevel = 2, 2
	j.Metric.JudgedOnly, j.Ingest.JudgedOnly = true, true
	j.Ingest.Depth = 30
	return j
}

// TestJudgedOnlyBprefSameBits: bpref with --judged-only, paired with a
// baseline run and its statistics on bpref, gives the same summary with 1
// and 4 workers as in one process, and it records the option and the
// unjudged documents dropped.
func TestJudgedOnlyBprefSameBits(t *testing.T) {
	dir := t.TempDir()
	gold, base := synth.Paths(dir, schema.FormatJSONL)
	if err := synth.Write(context.Background(), synth.Options{Queries: 1500, Depth: 50, Seed: 8, Format: schema.FormatJSONL, Tags: true, RecallRate: 0.8}, gold, base); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run.jsonl")
	if err := synth.Write(context.Background(), synth.Options{Queries: 1500, Depth: 50, Seed: 8, Format: schema.FormatJSONL, Tags: true, RecallRate: 0.6},
		filepath.Join(t.TempDir(), "gold.jsonl"), run); err != nil {
		t.Fatal(err)
	}
	job := func() coordinator.Job {
		j := judgedOnly(newJob(t, gold, run))
		j.Baseline = coordinator.Input{Path: base}
		j.Metric.Paired = true
		j.Metric.Pairing = &metric.Pairing{Measures: []int{4, len(j.Metric.Measures) - 1}, Replicates: 300, Permutations: 300, Seed: 3, TopK: 5,
			Groups: []string{"category=legal"}}
		return j
	}
	ref, err := coordinator.Score(context.Background(), job())
	if err != nil {
		t.Fatal(err)
	}
	s := ref.Summary
	bpref := s.Measures[len(s.Measures)-1]
	if !s.Config.JudgedOnly || s.Counts.UnjudgedDropped == 0 || bpref.Name != "Bpref" || bpref.Value <= 0 || bpref.Value >= 1 {
		t.Fatalf("config %+v, counts %+v, %+v", s.Config, s.Counts, bpref)
	}
	want := comparable(t, s)
	for _, c := range []struct{ workers, shards int }{{1, 3}, {4, 64}} {
		srv := startServer(t)
		startWorkers(t, srv, c.workers, nil)
		out, err := coordinator.RunDistributed(context.Background(), job(), connect(t, srv, "coordinator"),
			coordinator.DistOptions{Shards: c.shards, PartBytes: 32 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := comparable(t, out.Summary); got != want {
			t.Fatalf("%d workers, %d shards: summary differs from score's:\n%s\nwant\n%s", c.workers, c.shards, got, want)
		}
	}
}
