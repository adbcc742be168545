package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/synth"
)

// BenchmarkRunEmbedded times `evalgate run` as a user runs it (embedded
// server, in-process connections) on 20,000 queries × 100 results with 2
// and 8 worker slots. With the nats.go Messages iterator the 8-slot job
// stalled at random for the 5 s pull expiry; both should take about as
// long as each other.
func BenchmarkRunEmbedded(b *testing.B) {
	dir := b.TempDir()
	gold, runFile := synth.Paths(dir, schema.FormatTREC)
	opts := synth.Options{Queries: 20000, Depth: 100, Seed: 3, Format: schema.FormatTREC}
	if err := synth.Write(context.Background(), opts, gold, runFile); err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{2, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				args := []string{"evalgate", "run", "--gold", gold, "--run", runFile, "--workers", strconv.Itoa(workers),
					"--shards", "64", "--progress", "off", "-f", "json"}
				if code := run(args, io.Discard, io.Discard); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}
