package jsq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BucketLimits holds the request schedules that keep live retrieval and
// judging within their rate across every worker of a job: one key per job
// and service.
const BucketLimits = "evalgate-limits"

// limitsTTL is how long an idle schedule is kept.
const limitsTTL = 24 * time.Hour

// RateLimiter lets at most Rate requests per second start across every
// process that shares its key, each request at its own instant, evenly
// spaced: in any window of one second at most Rate+1 start (and one more
// per process when clocks agree to within a request interval).
//
// The schedule is the key's value in BucketLimits: the first instant not
// yet handed out (Unix nanoseconds). A process reserves a few consecutive
// instants at a time by advancing it with compare-and-set, and hands them
// to its callers in order; two processes never hold the same instant, so
// their requests interleave without a burst. Instants are read on each
// process's own clock: keep worker clocks synchronised (NTP), or the skew
// adds up to Rate×skew requests to a window.
//
// A process reserves no more instants than it has callers waiting (and at
// most about 50 ms of the schedule): instants it could not use while its
// callers are busy would go by unused, and the job would run below its
// rate while other processes had requests to send. A process that stops
// with instants reserved, or has nothing to send when they come, leaves
// them unused (the job runs a little below its rate for at most one
// batch). Wait is safe for concurrent use.
type RateLimiter struct {
	c        *Conn
	key      string
	interval time.Duration // between two instants
	batch    int           // most instants reserved at once

	waiting atomic.Int64 // callers in Wait

	mu   sync.Mutex
	next time.Time // the next instant reserved and not handed out
	left int       // reserved instants not handed out
}

// RateLimiter returns the limiter of key (a job and its service, e.g.
// "20261124-131500-ab12cd34.retriever") at rate requests per second, which
// must be positive. Every process must pass the same rate for one key.
func (c *Conn) RateLimiter(key string, rate float64) (*RateLimiter, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate limiter %s: rate %v, want a positive number of requests per second", key, rate)
	}
	interval := time.Duration(float64(time.Second) / rate)
	// At most about 50 ms of the schedule per reservation: few key
	// updates, and a stopped worker wastes little.
	batch := max(1, int(rate/20))
	return &RateLimiter{c: c, key: key, interval: max(interval, 1), batch: batch}, nil
}

// Wait blocks until the caller's instant, or ctx is done.
func (l *RateLimiter) Wait(ctx context.Context) error {
	l.waiting.Add(1)
	l.mu.Lock()
	l.waiting.Add(-1)
	// An instant that went by unused (the process had nothing to send)
	// is dropped: sending on it now would add to the requests of the
	// instants other processes hold.
	for l.left > 0 && time.Since(l.next) > l.interval {
		l.next = l.next.Add(l.interval)
		l.left--
	}
	if l.left == 0 {
		// This caller and the ones queued behind it.
		n := min(l.batch, 1+int(l.waiting.Load()))
		start, err := l.reserve(ctx, n)
		if err != nil {
			l.mu.Unlock()
			return err
		}
		l.next, l.left = start, n
	}
	at := l.next
	l.next = l.next.Add(l.interval)
	l.left--
	l.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reserve takes the next n instants from the shared schedule and returns
// the first. Instants in the past are never handed out: an idle schedule
// restarts from now.
func (l *RateLimiter) reserve(ctx context.Context, n int) (time.Time, error) {
	var start time.Time
	err := l.c.retry(ctx, "reserve request instants", attemptTimeout, func(ctx context.Context) error {
		kv, err := l.c.limits(ctx)
		if err != nil {
			return err
		}
		for {
			var prev int64
			var rev uint64
			e, err := kv.Get(ctx, l.key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
			case err != nil:
				return err
			default:
				if prev, err = strconv.ParseInt(string(e.Value()), 10, 64); err != nil {
					return fmt.Errorf("read schedule %s: %w", l.key, err)
				}
				rev = e.Revision()
			}
			first := max(time.Now().UnixNano(), prev)
			end := strconv.FormatInt(first+int64(n)*int64(l.interval), 10)
			if rev == 0 {
				_, err = kv.Create(ctx, l.key, []byte(end))
			} else {
				_, err = kv.Update(ctx, l.key, []byte(end), rev)
			}
			if err == nil {
				start = time.Unix(0, first)
				return nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return err
			}
			// Another process reserved first: read its schedule again.
		}
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("reserve request instants of %s: %w", l.key, l.c.explain(err))
	}
	return start, nil
}

// limits opens the schedules' bucket, creating it when missing (in memory:
// a schedule is worth nothing after a server restart, which just restarts
// it from now). EnsureTopology creates it, so a worker whose user may not
// create buckets finds it there.
func (c *Conn) limits(ctx context.Context) (jetstream.KeyValue, error) {
	return c.limitsBucket(ctx, 1)
}

// limitsBucket opens the schedules' bucket, creating it with replicas when
// missing.
func (c *Conn) limitsBucket(ctx context.Context, replicas int) (jetstream.KeyValue, error) {
	kv, err := c.js.KeyValue(ctx, BucketLimits)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: BucketLimits,
			Description: "evalgate request schedules: the rate of live retrieval and judging across workers",
			TTL:         limitsTTL, Storage: jetstream.MemoryStorage, Replicas: replicas})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = c.js.KeyValue(ctx, BucketLimits)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", BucketLimits, err)
	}
	return kv, nil
}
