package fanout

import (
	"context"
	"sync"
)

// Each calls do(ctx, i) for every i in [0,n) that skip does not skip (skip
// may be nil), on at most limit goroutines at once (at least one). The
// first error a call returns cancels the context the calls get and stops
// the handing out of items; Each waits for the calls under way and
// returns that error, or the cause of ctx's end when ctx ends first, or
// nil.
func Each(ctx context.Context, n, limit int, skip func(i int) bool, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(max(limit, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := do(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for i := range n {
		if skip != nil && skip(i) {
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}
