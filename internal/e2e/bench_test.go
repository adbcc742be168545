package e2e

import (
	"context"
	"fmt"
	"strings"
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
	"github.com/evalgate/evalgate/synth"
	"github.com/evalgate/evalgate/worker"
)

// kernelBoundMeasures makes scoring dominate everything else a worker
// does: R@k and P@k for every k from 1 to 100.
func kernelBoundMeasures() []metric.Measure {
	var names []string
	for k := 1; k <= 100; k++ {
		names = append(names, fmt.Sprintf("R@%d,P@%d", k, k))
	}
	ms, err := metric.ParseList([]string{strings.Join(names, ",")})
	if err != nil {
		panic(err)
	}
	return ms
}

// benchQueries is the size of the kernel-bound job.
const benchQueries = 100000

// BenchmarkWorkerScaling publishes a kernel-bound job (100,000 queries ×
// 100 results, 200 measures, each query in three groups: overall and two
// tags) and then times 1 or 2 workers (one slot each) draining it through
// the embedded JetStream server. The ratio of the two is the scale-out
// factor on this machine's two cores.
func BenchmarkWorkerScaling(b *testing.B) {
	dir := b.TempDir()
	gold, run := synth.Paths(dir, schema.FormatArrow)
	if err := synth.Write(context.Background(), synth.Options{Queries: benchQueries, Depth: 100, Seed: 1, Format: schema.FormatArrow, Tags: true}, gold, run); err != nil {
		b.Fatal(err)
	}
	measures := kernelBoundMeasures()
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				srv, err := embedded.Start(embedded.Options{StoreDir: b.TempDir(), Listen: "127.0.0.1:-1"})
				if err != nil {
					b.Fatal(err)
				}
				conn, err := jsq.Connect(context.Background(), jsq.Options{URL: srv.ClientURL()})
				if err != nil {
					b.Fatal(err)
				}
				if err := conn.EnsureTopology(context.Background(), jsq.Topology{}); err != nil {
					b.Fatal(err)
				}
				published := make(chan struct{})
				var once sync.Once
				job := coordinator.Job{
					Gold: coordinator.Input{Path: gold}, Run: coordinator.Input{Path: run},
					Metric: metric.Config{Measures: measures, RelLevel: 1}, Ingest: ingest.Config{RelLevel: 1},
					Logger: zerolog.Nop(),
				}
				done := make(chan error, 1)
				go func() {
					_, err := coordinator.RunDistributed(context.Background(), job, conn, coordinator.DistOptions{
						Shards: 16, PartBytes: 256 << 10,
						Progress: func(p coordinator.Progress) {
							if p.Tasks > 0 {
								once.Do(func() { close(published) })
							}
						}})
					done <- err
				}()
				<-published
				b.StartTimer()
				start := time.Now()
				ctx, stop := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				for w := 0; w < workers; w++ {
					wc, err := jsq.Connect(ctx, jsq.Options{URL: srv.ClientURL()})
					if err != nil {
						b.Fatal(err)
					}
					cons, err := wc.Consumer(ctx)
					if err != nil {
						b.Fatal(err)
					}
					cfg := worker.DefaultConfig()
					cfg.Concurrency = 1
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer wc.Close()
						_ = worker.Run(ctx, cfg, cons, wc)
					}()
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				elapsed := time.Since(start)
				b.StopTimer()
				stop()
				wg.Wait()
				conn.Close()
				srv.Shutdown()
				b.ReportMetric(benchQueries/elapsed.Seconds(), "queries/s")
				b.StartTimer()
			}
		})
	}
}
