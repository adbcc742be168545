package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/schema"
)

// liveBenchQueries is the size of the live retrieval benchmark.
const liveBenchQueries = 10000

// BenchmarkLiveRetrieval times a live retrieval of 10,000 gold queries
// against a search service that answers each in 20 ms (100 hits), with the
// retriever file's concurrency at 4 requests per worker, through the
// embedded JetStream server with 1, 2 and 4 `evalgate worker` processes,
// and with 4 workers under a job-wide rate of 300 requests/s. It reports
// queries per second, the workers' own CPU time per query (user + system,
// read from the processes: evalgate's overhead, next to the 20 ms the
// retriever takes) and the latency p50 the summary measured.
//
//	go test ./internal/e2e -run '^$' -bench LiveRetrieval -benchtime 1x
func BenchmarkLiveRetrieval(b *testing.B) {
	gold, run := genData(b, liveBenchQueries, schema.FormatJSONL, false)
	srv := newRunSearch(b, gold, run)
	srv.delay = 20 * time.Millisecond
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, c := range []struct {
		workers int
		rate    int
	}{{1, 0}, {2, 0}, {4, 0}, {4, 300}} {
		name := fmt.Sprintf("workers=%d", c.workers)
		extra := ""
		if c.rate > 0 {
			name += fmt.Sprintf("/rate=%d", c.rate)
			extra = fmt.Sprintf("rate: %d\n", c.rate)
		}
		file := retrieverFile(b, ts.URL, extra)
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			var p50 float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := startServer(b)
				q := connect(b, s, "coordinator")
				var procs []*exec.Cmd
				for range c.workers {
					procs = append(procs, liveWorkerProc(b, s.ClientURL(), 2))
				}
				job := liveJob(b, gold, file, retrieval.Budget{})
				b.StartTimer()
				out, err := coordinator.RunDistributed(context.Background(), job, q, coordinator.DistOptions{Shards: 16})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				p50 = out.Summary.Retrieval.Latency.P50
				for _, p := range procs {
					_ = p.Process.Signal(syscall.SIGTERM)
					_ = p.Wait()
					cpu += p.ProcessState.UserTime() + p.ProcessState.SystemTime()
				}
				s.Shutdown()
			}
			queries := float64(b.N * liveBenchQueries)
			b.ReportMetric(queries/b.Elapsed().Seconds(), "queries/s")
			b.ReportMetric(float64(cpu.Microseconds())/queries, "worker-cpu-µs/query")
			b.ReportMetric(p50, "p50-ms")
		})
	}
}

// BenchmarkJudge times judge jobs of 400 pairs against an OpenAI-compatible
// server that answers each in 200 ms, with 1 and 4 `evalgate worker`
// processes (the LLM file's concurrency 4 per worker, no rate limit), and
// reports pairs graded per second. Each round uses a fresh server store, so
// nothing comes from the cache.
//
//	go test ./internal/e2e -run '^$' -bench Judge -benchtime 1x
func BenchmarkJudge(b *testing.B) {
	gold, run := genData(b, 80, schema.FormatJSONL, false)
	srv := &chatServer{perPair: map[string]int{}, delay: 200 * time.Millisecond}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	job := judgeFixture(b, gold, run, ts.URL, nil)
	job.Judge.Rejudge, job.Judge.Depth, job.Judge.PairsPerTask = 0, 5, 8
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var pairs int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := startServer(b)
				q := connect(b, s, "coordinator")
				var procs []*exec.Cmd
				for range workers {
					procs = append(procs, liveWorkerProc(b, s.ClientURL(), 2))
				}
				b.StartTimer()
				out, err := coordinator.RunDistributed(context.Background(), job, q, coordinator.DistOptions{Shards: 8})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				pairs += len(out.Judge.Judgments)
				for _, p := range procs {
					_ = p.Process.Signal(syscall.SIGTERM)
					_ = p.Wait()
				}
				s.Shutdown()
			}
			b.ReportMetric(float64(pairs)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
