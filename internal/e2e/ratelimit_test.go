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

// TestRateLimiterBusyCallers: three connections whose two callers each
// spend 30 ms on every request (a slow service) could send 200 requests a
// second together, so a job rate of 100 is what they should get. A
// connection that reserved instants its busy callers cannot use would let
// them go by unused while the others wait, and the job would run well
// below its rate.
func TestRateLimiterBusyCallers(t *testing.T) {
	s := startServer(t)
	const rate = 100.0
	const run = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for c := 0; c < 3; c++ {
		l, err := connect(t, s, "limiter").RateLimiter("job-2.retriever", rate)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for l.Wait(ctx) == nil {
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
					time.Sleep(30 * time.Millisecond)
				}
			}()
		}
	}
	wg.Wait()
	if most := maxInWindow(starts, time.Second); most > int(rate)+3 {
		t.Fatalf("%d requests in one second, rate %v", most, rate)
	}
	// Less than 85% of the rate: instants went by unused.
	if want := int(0.85 * rate * run.Seconds()); len(starts) < want {
		t.Fatalf("%d requests in %s at rate %v by callers that could send twice as many: want at least %d", len(starts), run, rate, want)
	}
	t.Logf("%d requests in %s; at most %d in a second", len(starts), run, maxInWindow(starts, time.Second))
}
