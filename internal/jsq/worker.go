package jsq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/evalgate/evalgate/shard"
	"github.com/evalgate/evalgate/worker"
)

// Headers of task and result messages.
const (
	HeaderJob    = "Evalgate-Job"
	HeaderTask   = "Evalgate-Task"
	HeaderDigest = "Evalgate-Digest" // hex SHA-256 of the payload
	HeaderObject = "Evalgate-Object" // object name when the payload is in the object store
	HeaderSize   = "Evalgate-Size"   // payload bytes
	HeaderWorker = "Evalgate-Worker"
)

// Consumer delivers tasks to a worker: the durable pull consumer, pulled
// one message at a time and only when the worker has a free slot.
//
// Each Next sends its own pull request for one message. The nats.go
// Messages iterator (PullMaxMessages(1)) was used before: with an
// in-process connection and several busy slots it left a pull request
// unanswered until its expiry while tasks were pending, so embedded jobs
// with 4 or more slots stalled in 5-second steps. A pull request per task
// has no such state to lose, and never prefetches.
type Consumer struct {
	c    *Conn
	cons jetstream.Consumer
	info *jetstream.ConsumerInfo

	stopped context.Context // done after Stop
	stop    context.CancelFunc
}

var (
	_ worker.TaskSource  = (*Consumer)(nil)
	_ worker.ResultStore = (*Conn)(nil)
	_ worker.LiveStore   = (*Conn)(nil)
)

// pullWait is how long one pull request waits at the server for a task
// before the worker asks again.
const pullWait = 5 * time.Second

// Consumer binds to the workers' consumer.
func (c *Conn) Consumer(ctx context.Context) (*Consumer, error) {
	cons, err := c.js.Consumer(ctx, StreamTasks, ConsumerWorkers)
	if err != nil {
		return nil, fmt.Errorf("bind consumer %s: %w", ConsumerWorkers, c.explain(err))
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read consumer %s: %w", ConsumerWorkers, c.explain(err))
	}
	stopped, stop := context.WithCancel(context.Background())
	return &Consumer{c: c, cons: cons, info: info, stopped: stopped, stop: stop}, nil
}

// AckWait is the consumer's ack wait; workers report progress well within.
func (cs *Consumer) AckWait() time.Duration { return cs.info.Config.AckWait }

// MaxDeliver is the consumer's delivery limit (-1: unlimited).
func (cs *Consumer) MaxDeliver() int { return cs.info.Config.MaxDeliver }

// Next waits for the next task. It returns worker.ErrSourceClosed after
// Stop or when ctx is done. A pull that fails (a server restart, a lost
// connection) is retried after a short, growing pause.
func (cs *Consumer) Next(ctx context.Context) (worker.Task, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(cs.stopped, cancel)()
	pause := 50 * time.Millisecond
	for {
		if ctx.Err() != nil {
			return nil, worker.ErrSourceClosed
		}
		pull, cancelPull := context.WithTimeout(ctx, pullWait)
		msg, err := cs.cons.Next(jetstream.FetchContext(pull))
		cancelPull()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil, worker.ErrSourceClosed
		case errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
			continue // no task within pullWait: ask again
		default:
			cs.c.log.Debug().Err(err).Dur("pause", pause).Msg("pull failed; retrying")
			select {
			case <-ctx.Done():
				return nil, worker.ErrSourceClosed
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 50 * time.Millisecond
		t, err := newTask(cs.c, msg)
		if err != nil {
			// Not an evalgate task (or a mangled one): drop it for good.
			cs.c.log.Warn().Err(err).Str("subject", msg.Subject()).Msg("dropping malformed task message")
			_ = msg.TermWithReason(err.Error())
			continue
		}
		return t, nil
	}
}

// Stop stops pulling. Tasks already taken stay valid.
func (cs *Consumer) Stop() { cs.stop() }

// task is one delivered task message.
type task struct {
	c    *Conn
	msg  jetstream.Msg
	job  string
	id   string
	meta *jetstream.MsgMetadata
}

func newTask(c *Conn, msg jetstream.Msg) (*task, error) {
	rest, ok := strings.CutPrefix(msg.Subject(), prefixTask)
	job, id, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || job == "" || id == "" {
		return nil, fmt.Errorf("subject %q is not %s<job>.<task>", msg.Subject(), prefixTask)
	}
	meta, err := msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("read task metadata: %w", err)
	}
	return &task{c: c, msg: msg, job: job, id: id, meta: meta}, nil
}

func (t *task) Job() string              { return t.job }
func (t *task) ID() string               { return t.id }
func (t *task) Deliveries() int          { return int(t.meta.NumDelivered) }
func (t *task) Header(key string) string { return t.msg.Headers().Get(key) }

func (t *task) Payload(ctx context.Context) ([]byte, error) {
	h := t.msg.Headers()
	var data []byte
	if name := h.Get(HeaderObject); name != "" {
		obs, err := t.c.objects(ctx)
		if err != nil {
			return nil, err
		}
		data, err = obs.GetBytes(ctx, name)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("%w: payload object %s is gone", shard.ErrCorrupt, name)
		}
		if errors.Is(err, jetstream.ErrDigestMismatch) {
			// The object's chunks do not hash to the digest stored with
			// them: fetching it again returns the same bytes.
			return nil, fmt.Errorf("%w: payload object %s: %v", shard.ErrCorrupt, name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("fetch payload object %s: %w", name, t.c.explain(err))
		}
	} else {
		data = t.msg.Data()
	}
	if want, got := h.Get(HeaderDigest), shard.Digest(data); want != got {
		return nil, fmt.Errorf("%w: payload digest %s, want %s", shard.ErrCorrupt, got, want)
	}
	return data, nil
}

func (t *task) InProgress(context.Context) error { return t.msg.InProgress() }

func (t *task) Ack(ctx context.Context) error {
	if err := t.msg.DoubleAck(ctx); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		return fmt.Errorf("ack task %s: %w", t.id, err)
	}
	return nil
}

func (t *task) Nak(_ context.Context, delay time.Duration) error {
	if delay <= 0 {
		return t.msg.Nak()
	}
	return t.msg.NakWithDelay(delay)
}

func (t *task) Term(_ context.Context, reason string) error { return t.msg.TermWithReason(reason) }

// errCodeMaxMsgsPerSubject is the JetStream error code for "maximum
// messages per subject exceeded": with DiscardNewPerSubject, the subject
// already holds a message. It arrives with HTTP status 503, which must not
// be mistaken for an outage.
const errCodeMaxMsgsPerSubject = 10077

func isSubjectFull(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeMaxMsgsPerSubject
}

// PublishPartial stores a task's result unless one is stored already, in
// which case it returns the stored bytes. The stream keeps one message per
// subject and rejects later ones (that holds across server restarts); a
// repeat within the dedup window is reported as a duplicate instead. Both
// mean "a result is stored": the caller compares it with its own. Failures
// a server restart causes are retried with backoff until ctx is done (a
// retry of a publish that was stored comes back as a duplicate of our own
// result, which then compares equal).
func (c *Conn) PublishPartial(ctx context.Context, t worker.Task, data []byte) ([]byte, error) {
	subj := partialSubject(t.Job(), t.ID())
	msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	msg.Header.Set(HeaderJob, t.Job())
	msg.Header.Set(HeaderTask, t.ID())
	msg.Header.Set(HeaderWorker, c.name)
	msg.Header.Set(shard.HeaderQueries, t.Header(shard.HeaderQueries))
	stored := false
	err := c.retry(ctx, "publish partial", attemptTimeout, func(ctx context.Context) error {
		ack, err := c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(t.Job()+"/"+t.ID()))
		switch {
		case err == nil:
			stored = !ack.Duplicate
			return nil
		case isSubjectFull(err):
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("publish partial of %s: %w", t.ID(), c.explain(err))
	}
	if stored {
		return nil, nil
	}
	var existing []byte
	err = c.retry(ctx, "read stored partial", attemptTimeout, func(ctx context.Context) error {
		stream, err := c.js.Stream(ctx, StreamPartials)
		if err != nil {
			return err
		}
		raw, err := stream.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			return err
		}
		existing = raw.Data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read stored partial of %s: %w", t.ID(), c.explain(err))
	}
	return existing, nil
}

// failureRecord is what the DLQ stream holds.
type failureRecord struct {
	Job        string    `json:"job"`
	Task       string    `json:"task"`
	Worker     string    `json:"worker"`
	Reason     string    `json:"reason"`
	Deliveries int       `json:"deliveries"`
	Final      bool      `json:"final"`
	At         time.Time `json:"at"`
}

// ReportFailure records a failed attempt; a final one also goes to the
// dead-letter subject the coordinator watches. Failures a server restart
// causes are retried with backoff until ctx is done.
func (c *Conn) ReportFailure(ctx context.Context, t worker.Task, f worker.Failure) error {
	rec, _ := json.Marshal(failureRecord{Job: t.Job(), Task: t.ID(), Worker: f.Worker, Reason: f.Reason,
		Deliveries: f.Deliveries, Final: f.Final, At: time.Now().UTC()})
	publish := func(subject string) error {
		return c.retry(ctx, "record failure", attemptTimeout, func(ctx context.Context) error {
			_, err := c.js.Publish(ctx, subject, rec)
			return err
		})
	}
	if err := publish(failSubject(t.Job(), t.ID())); err != nil {
		return fmt.Errorf("record failure of %s: %w", t.ID(), c.explain(err))
	}
	if f.Final {
		if err := publish(deadSubject(t.Job(), t.ID())); err != nil {
			return fmt.Errorf("record final failure of %s: %w", t.ID(), c.explain(err))
		}
	}
	return nil
}

// WorkerInfo is a worker's heartbeat.
type WorkerInfo struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Concurrency int       `json:"concurrency"`
	Started     time.Time `json:"started"`
	Seen        time.Time `json:"seen"`
}

// Heartbeat publishes w every interval until ctx is done, so `evalgate
// status` and waiting coordinators see the worker. Entries expire after
// 30 seconds without a heartbeat. If the registry bucket is missing (a
// server restart lost a memory bucket made by an earlier version, or
// someone deleted it), Heartbeat creates it again, with the replicas of
// the task stream.
func (c *Conn) Heartbeat(ctx context.Context, w WorkerInfo, interval time.Duration) {
	key := strings.NewReplacer(".", "_", " ", "_", "*", "_", ">", "_").Replace(w.ID)
	var kv jetstream.KeyValue
	failures := 0
	beat := func() error {
		if kv == nil {
			var err error
			if kv, err = c.openWorkerRegistry(ctx); err != nil {
				return err
			}
		}
		w.Seen = time.Now().UTC()
		b, _ := json.Marshal(w)
		_, err := kv.Put(ctx, key, b)
		if err != nil {
			kv = nil // look the bucket up again: it may be gone
		}
		return err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := beat(); err != nil && ctx.Err() == nil {
			failures++
			if failures == 1 || failures%30 == 0 {
				c.log.Warn().Err(err).Int("consecutive_errors", failures).Msg("worker heartbeat failed")
			}
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			if kv != nil {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_ = kv.Delete(dctx, key)
				cancel()
			}
			return
		case <-tick.C:
		}
	}
}

// openWorkerRegistry opens the heartbeat bucket, creating it if it is
// missing.
func (c *Conn) openWorkerRegistry(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := c.js.KeyValue(ctx, BucketWorkers)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		replicas := 1
		if s, err := c.js.Stream(ctx, StreamTasks); err == nil {
			replicas = s.CachedInfo().Config.Replicas
		}
		return c.createWorkerRegistry(ctx, replicas)
	}
	if err != nil {
		return nil, fmt.Errorf("open worker registry: %w", c.explain(err))
	}
	return kv, nil
}

// Workers lists the workers seen in the last 30 seconds. A missing
// registry (lost in a server restart, and not yet recreated by a worker's
// heartbeat) means no worker is seen.
func (c *Conn) Workers(ctx context.Context) ([]WorkerInfo, error) {
	var out []WorkerInfo
	err := c.retry(ctx, "list workers", attemptTimeout, func(ctx context.Context) error {
		out = out[:0]
		kv, err := c.js.KeyValue(ctx, BucketWorkers)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		lister, err := kv.ListKeys(ctx)
		if err != nil {
			return err
		}
		for key := range lister.Keys() {
			e, err := kv.Get(ctx, key)
			if err != nil {
				continue // expired meanwhile
			}
			var w WorkerInfo
			if json.Unmarshal(e.Value(), &w) == nil && time.Since(w.Seen) < workerTTL {
				out = append(out, w)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", c.explain(err))
	}
	return out, nil
}

// objects opens the object store once it is needed; a failure is retried
// at the next call (it may be transient).
func (c *Conn) objects(ctx context.Context) (jetstream.ObjectStore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.obs != nil {
		return c.obs, nil
	}
	obs, err := c.js.ObjectStore(ctx, BucketShards)
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w", BucketShards, c.explain(err))
	}
	c.obs = obs
	return obs, nil
}

// itoa is strconv.Itoa, for headers.
func itoa(n int) string { return strconv.Itoa(n) }
