package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// maxInWindow is the largest number of instants in any window [t, t+w).
func maxInWindow(ts []time.Time, w time.Duration) int {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// TestRateLimiterAcrossConnections: three connections (three workers'
// worth) with eight callers each share one schedule: no one-second window
// holds more than the rate (plus one per connection for rounding), and the
// callers are not starved.
func TestRateLimiterAcrossConnections(t *testing.T) {
	s := startServer(t)
	const rate = 40.0
	const run = 2500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for c := 0; c < 3; c++ {
		l, err := connect(t, s, "limiter").RateLimiter("job-1.retriever", rate)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for l.Wait(ctx) == nil {
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if most := maxInWindow(starts, time.Second); most > int(rate)+3 {
		t.Fatalf("%d requests in one second, rate %v", most, rate)
	}
	if len(starts) < int(rate) {
		t.Fatalf("%d requests in %s at rate %v: the limiter starves its callers", len(starts), run, rate)
	}
	t.Logf("%d requests in %s; at most %d in a second", len(starts), run, maxInWindow(starts, time.Second))
	if _, err := connect(t, s, "limiter").RateLimiter("job-1.retriever", 0); err == nil {
		t.Fatal("rate 0 accepted")
	}
}
