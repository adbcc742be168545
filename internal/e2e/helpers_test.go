package e2e

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
	"github.com/evalgate/evalgate/synth"
	"github.com/evalgate/evalgate/worker"
)

// testTopology makes crash detection fast.
var testTopology = jsq.Topology{AckWait: 2 * time.Second, MaxDeliver: 3, MaxAckPending: 64}

func logger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// startServer starts an embedded JetStream server listening on loopback.
func startServer(t testing.TB) *embedded.Server {
	t.Helper()
	s, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t testing.TB, s *embedded.Server, name string) *jsq.Conn {
	t.Helper()
	c, err := jsq.Connect(context.Background(), jsq.Options{URL: s.ClientURL(), Name: name, Logger: logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.EnsureTopology(context.Background(), testTopology); err != nil {
		t.Fatal(err)
	}
	return c
}

// startWorkers runs n in-process workers until the test ends or stop is
// called; stop returns once they have settled every task they held.
func startWorkers(t *testing.T, s *embedded.Server, n int, plan *worker.FaultPlan) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	for i := 0; i < n; i++ {
		c := connect(t, s, "worker")
		cons, err := c.Consumer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg := worker.DefaultConfig()
		cfg.ID = "w" + string(rune('0'+i))
		cfg.Concurrency = 2
		cfg.Heartbeat = cons.AckWait() / 3
		cfg.MaxDeliver = cons.MaxDeliver()
		cfg.NakDelay = 100 * time.Millisecond
		cfg.Logger = logger(t)
		cfg.Fault = plan
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.Heartbeat(ctx, jsq.WorkerInfo{ID: cfg.ID, Concurrency: cfg.Concurrency, Started: time.Now()}, time.Second)
		}()
		go func() {
			defer wg.Done()
			if err := worker.Run(ctx, cfg, cons, c); err != nil {
				t.Errorf("worker: %v", err)
			}
		}()
	}
	return stop
}

var testMeasures, _ = metric.ParseList([]string{"R@1,R@5,R@10,P@5,RR,nDCG@10,nDCG(gain=exp)@10,AP,Success@5,Rprec,Judged@10,NumQ,NumRel,NumRet,NumRelRet"})

func genData(t testing.TB, queries int, f schema.Format, tags bool) (string, string) {
	t.Helper()
	gold, run := synth.Paths(t.TempDir(), f)
	if err := synth.Write(context.Background(), synth.Options{Queries: queries, Depth: 50, Seed: 21, Format: f, Tags: tags}, gold, run); err != nil {
		t.Fatal(err)
	}
	return gold, run
}

func newJob(t testing.TB, gold, run string) coordinator.Job {
	return coordinator.Job{
		Gold:   coordinator.Input{Path: gold},
		Run:    coordinator.Input{Path: run},
		Metric: metric.Config{Measures: testMeasures, RelLevel: 1, CurveDepth: 100}, // as the CLI scores
		Ingest: ingest.Config{RelLevel: 1},
		Logger: logger(t),
	}
}

// comparable renders a summary without its execution block.
func comparable(t *testing.T, s *summary.Summary) string {
	t.Helper()
	var b bytes.Buffer
	if err := s.Comparable().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// reference scores the job in one process.
func reference(t *testing.T, job coordinator.Job) string {
	t.Helper()
	out, err := coordinator.Score(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return comparable(t, out.Summary)
}

func metricNames() []string { return metric.Names(testMeasures) }

// waitFor polls cond every 20ms until it holds, failing the test if it
// does not within timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobResult is what RunDistributed returned, for jobs run in a goroutine.
type jobResult struct {
	out *coordinator.Outcome
	err error
}

// runAsync runs a distributed job in a goroutine.
func runAsync(ctx context.Context, job coordinator.Job, q coordinator.Queue, o coordinator.DistOptions) <-chan jobResult {
	done := make(chan jobResult, 1)
	go func() {
		out, err := coordinator.RunDistributed(ctx, job, q, o)
		done <- jobResult{out, err}
	}()
	return done
}
