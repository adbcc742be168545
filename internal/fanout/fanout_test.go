package fanout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEachRunsEveryItemOnce checks that every item not skipped runs once,
// with at most limit at once.
func TestEachRunsEveryItemOnce(t *testing.T) {
	for _, limit := range []int{0, 1, 3, 100} {
		var ran [50]atomic.Int32
		var inFlight, most atomic.Int32
		err := Each(context.Background(), len(ran), limit, func(i int) bool { return i%7 == 0 }, func(_ context.Context, i int) error {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			ran[i].Add(1)
			inFlight.Add(-1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range ran {
			want := int32(1)
			if i%7 == 0 {
				want = 0 // skipped
			}
			if ran[i].Load() != want {
				t.Fatalf("limit %d: item %d ran %d times, want %d", limit, i, ran[i].Load(), want)
			}
		}
		if m := most.Load(); m > int32(max(limit, 1)) {
			t.Fatalf("limit %d: %d in flight at once", limit, m)
		}
	}
}

// TestEachStopsAtFirstError checks that the first error is returned, that
// the calls under way see their context cancelled, and that no item is
// handed out after it.
func TestEachStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	var ran []int
	err := Each(context.Background(), 1000, 2, nil, func(ctx context.Context, i int) error {
		mu.Lock()
		ran = append(ran, i)
		mu.Unlock()
		if i == 5 {
			return boom
		}
		if i > 5 {
			<-ctx.Done() // the failure cancels it
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
	if len(ran) > 10 {
		t.Fatalf("%d items ran after the failure", len(ran)-6)
	}
}

// TestEachCancelled checks that a cancelled context ends Each with its
// cause, and that nothing runs.
func TestEachCancelled(t *testing.T) {
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	var ran atomic.Int32
	err := Each(ctx, 10, 2, nil, func(context.Context, int) error { ran.Add(1); return nil })
	if !errors.Is(err, cause) {
		t.Fatalf("got %v, want %v", err, cause)
	}
	if ran.Load() > 2 {
		t.Fatalf("%d items ran after the cancellation", ran.Load())
	}
}
