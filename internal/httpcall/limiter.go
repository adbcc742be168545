package httpcall

import (
	"context"
	"sync"
	"time"
)

// Limiter spaces requests out. A client calls Wait before every attempt,
// after it has taken its concurrency slot, so that a request is sent as
// soon as Wait returns. Wait must be safe for concurrent use, and return
// ctx's error promptly when ctx ends.
type Limiter interface {
	Wait(ctx context.Context) error
}

// LocalLimiter is an in-process Limiter: a GCRA (a token bucket holding
// one token) that spaces requests exactly 1/rate apart, so that no
// one-second window holds more than rate requests (rate+1 when both ends
// of a closed window fall on a request). Idle time earns no burst. A Wait
// cancelled by its context keeps its slot: the limiter errs on the slow
// side.
type LocalLimiter struct {
	interval time.Duration // 0: unlimited
	mu       struct {
		sync.Mutex
		next time.Time // earliest time the next request may go
	}
}

var _ Limiter = (*LocalLimiter)(nil)

// NewLocalLimiter returns a limiter of rate requests per second; 0 (or
// less) means unlimited.
func NewLocalLimiter(rate float64) *LocalLimiter {
	l := &LocalLimiter{}
	if rate > 0 {
		l.interval = max(time.Duration(float64(time.Second)/rate), 1)
	}
	return l
}

// Wait blocks until the caller's slot comes, or ctx ends.
func (l *LocalLimiter) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.interval == 0 {
		return nil
	}
	now := time.Now()
	l.mu.Lock()
	slot := l.mu.next
	if slot.Before(now) {
		slot = now
	}
	l.mu.next = slot.Add(l.interval)
	l.mu.Unlock()
	return Sleep(ctx, slot.Sub(now))
}
