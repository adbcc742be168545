package jsq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Connected reports whether the connection to NATS is up (not
// reconnecting, not closed).
func (c *Conn) Connected() bool { return c.nc != nil && c.nc.IsConnected() }

// QueueStats is the state of the work queue and of evalgate's streams.
type QueueStats struct {
	// Of the workers' consumer on EVALGATE_TASKS:
	Pending     uint64 // tasks not yet delivered
	AckPending  uint64 // tasks delivered and not yet acknowledged
	Redelivered uint64 // tasks held that had been delivered before
	Waiting     uint64 // pull requests waiting for a task
	// Streams maps each evalgate stream that exists (buckets included, by
	// their stream names) to its size.
	Streams map[string]StreamStats
}

// StreamStats is the size of a stream.
type StreamStats struct {
	Messages, Bytes uint64
}

// QueueStats reads the workers' consumer and the size of every evalgate
// stream that exists, without retrying (it is for monitoring: a failure
// is reported as one).
func (c *Conn) QueueStats(ctx context.Context) (QueueStats, error) {
	var qs QueueStats
	cons, err := c.js.Consumer(ctx, StreamTasks, ConsumerWorkers)
	if err != nil {
		return qs, fmt.Errorf("read consumer %s: %w", ConsumerWorkers, c.explain(err))
	}
	info := cons.CachedInfo() // just read by Consumer
	qs.Pending, qs.AckPending = info.NumPending, uint64(max(info.NumAckPending, 0))
	qs.Redelivered, qs.Waiting = uint64(max(info.NumRedelivered, 0)), uint64(max(info.NumWaiting, 0))
	qs.Streams = map[string]StreamStats{}
	for _, name := range evalgateStreams {
		s, err := c.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return qs, fmt.Errorf("read stream %s: %w", name, c.explain(err))
		}
		st := s.CachedInfo().State
		qs.Streams[name] = StreamStats{Messages: st.Msgs, Bytes: st.Bytes}
	}
	return qs, nil
}
