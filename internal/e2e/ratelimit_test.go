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

// limiterStarts runs conns connections of callers each, sharing the
// schedule of key at rate, for run; each caller waits on its connection's
// limiter, then spends work on the request. It returns when every request
// started.
func limiterStarts(t *testing.T, key string, rate float64, conns, callers int, run, work time.Duration) []time.Time {
	t.Helper()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for c := 0; c < conns; c++ {
		l, err := connect(t, s, "limiter").RateLimiter(key, rate)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for l.Wait(ctx) == nil {
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
					time.Sleep(work)
				}
			}()
		}
	}
	wg.Wait()
	if _, err := connect(t, s, "limiter").RateLimiter(key, 0); err == nil {
		t.Fatal("rate 0 accepted")
	}
	return starts
}

// TestRateLimiterAcrossConnections: three connections (three workers'
// worth) with eight callers each share one schedule: no one-second window
// holds more than the rate (plus one per connection for rounding), and the
// callers are not starved.
func TestRateLimiterAcrossConnections(t *testing.T) {
	const rate = 40.0
	const run = 2500 * time.Millisecond
	starts := limiterStarts(t, "job-1.retriever", rate, 3, 8, run, 0)
	if most := maxInWindow(starts, time.Second); most > int(rate)+3 {
		t.Fatalf("%d requests in one second, rate %v", most, rate)
	}
	if len(starts) < int(rate) {
		t.Fatalf("%d requests in %s at rate %v: the limiter starves its callers", len(starts), run, rate)
	}
	t.Logf("%d requests in %s; at most %d in a second", len(starts), run, maxInWindow(starts, time.Second))
}

// TestRateLimiterBusyCallers: three connections whose two callers each
// spend 30 ms on every request (a slow service) could send 200 requests a
// second together, so a job rate of 100 is what they should get. A
// connection that reserved instants its busy callers cannot use would let
// them go by unused while the others wait, and the job would run well
// below its rate.
func TestRateLimiterBusyCallers(t *testing.T) {
	const rate = 100.0
	const run = 3 * time.Second
	starts := limiterStarts(t, "job-2.retriever", rate, 3, 2, run, 30*time.Millisecond)
	if most := maxInWindow(starts, time.Second); most > int(rate)+3 {
		t.Fatalf("%d requests in one second, rate %v", most, rate)
	}
	// Less than 85% of the rate: instants went by unused.
	if want := int(0.85 * rate * run.Seconds()); len(starts) < want {
		t.Fatalf("%d requests in %s at rate %v by callers that could send twice as many: want at least %d", len(starts), run, rate, want)
	}
	t.Logf("%d requests in %s; at most %d in a second", len(starts), run, maxInWindow(starts, time.Second))
}
