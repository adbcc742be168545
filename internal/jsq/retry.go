package jsq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Retry policy of control-plane calls. A JetStream server that restarts,
// a cluster electing a stream leader or a connection being re-established
// makes requests time out or find no responder for a few seconds; a job
// must ride that out instead of failing.
const (
	// retryFirstWait is the wait after the first failed attempt; each
	// further failure doubles it up to retryMaxWait.
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = 5 * time.Second
	// attemptTimeout bounds one attempt (JetStream's own default for a
	// request without a deadline), so a request lost in a restart is
	// retried instead of waiting for the caller's deadline.
	attemptTimeout = 5 * time.Second
	// retryLogEvery rate-limits the warnings of a call that keeps failing.
	retryLogEvery = 10 * time.Second
)

// retry runs op until it succeeds, fails with an error retrying cannot fix
// (see transient), or ctx is done. Each attempt runs under its own timeout
// (attempt) within ctx. Between attempts it waits with capped exponential
// backoff. When ctx ends first, the error wraps both the last failure and
// ctx's error. what names the call in logs.
func (c *Conn) retry(ctx context.Context, what string, attempt time.Duration, op func(ctx context.Context) error) error {
	wait := retryFirstWait
	var logged time.Time
	for n := 1; ; n++ {
		started := time.Now()
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := op(actx)
		cancel()
		if err == nil {
			if n > 1 {
				c.log.Info().Str("call", what).Int("attempts", n).Msg("call succeeded after retrying")
			}
			return nil
		}
		if !c.transient(ctx, err, started) {
			return err
		}
		c.retries.Add(1)
		if time.Since(logged) >= retryLogEvery {
			c.log.Warn().Err(err).Str("call", what).Int("consecutive_errors", n).Dur("next_wait", wait).
				Msg("jetstream call failed; retrying")
			logged = time.Now()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, retryMaxWait)
	}
}

// Retries is the number of control-plane attempts that failed transiently
// and were retried since Connect.
func (c *Conn) Retries() int64 { return c.retries.Load() }

// transient reports whether err may go away by itself: a timeout, no
// responders (a stream without a leader, a server restarting), a lost
// connection, or a JetStream 503 — except 10077 "maximum messages per
// subject exceeded", which is a definite answer ("already there") that
// arrives as a 503 too. Nothing is transient once ctx is done, or when
// the server reported a permission violation since the attempt started at
// since (which requests only show as timeouts: retrying would spin until
// the deadline). An older violation (another call, denied once) does not
// make later failures permanent.
func (c *Conn) transient(ctx context.Context, err error, since time.Time) bool {
	if ctx.Err() != nil || isSubjectFull(err) || c.permissionDenied(since) {
		return false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout), errors.Is(err, jetstream.ErrServerShutdown):
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

// permissionDenied reports whether the server rejected one of this
// connection's operations for lack of permission since the given time.
func (c *Conn) permissionDenied(since time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asyncErr != nil && errors.Is(c.asyncErr, nats.ErrPermissionViolation) && !c.asyncAt.Before(since)
}
