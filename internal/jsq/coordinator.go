package jsq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/gate"
)

var (
	_ coordinator.Queue = (*Conn)(nil)
	_ gate.HistoryStore = (*History)(nil)
)

// inlineHeadroom is kept free below the server's max payload for headers
// and protocol overhead.
const inlineHeadroom = 16 << 10

// PublishTask enqueues a task: inline when it fits the server's max
// payload with headroom, else in the object store with a reference. It
// reports whether this call enqueued the task: not when the task's subject
// already holds a pending task (the stream keeps one message per task:
// error 10077), nor when the server reports the message as a duplicate of
// one stored within its dedup window (PubAck.Duplicate) — the queue has,
// or had, that task. The message id is <job>/<task> for the first
// publication and <job>/<task>/r<n> for re-publication n, so a task the
// queue lost is enqueued again even inside the dedup window. Failures a
// server restart or a lost connection cause are retried with backoff until
// ctx is done; a retry of a publication that was stored comes back as a
// duplicate, so a task may be enqueued although false is returned.
func (c *Conn) PublishTask(ctx context.Context, t coordinator.TaskSpec) (bool, error) {
	msg := &nats.Msg{Subject: taskSubject(t.Job, t.ID), Header: nats.Header{}}
	for k, v := range t.Headers {
		msg.Header.Set(k, v)
	}
	msg.Header.Set(HeaderJob, t.Job)
	msg.Header.Set(HeaderTask, t.ID)
	msg.Header.Set(HeaderDigest, t.Digest)
	msg.Header.Set(HeaderSize, itoa(len(t.Payload)))
	if int64(len(t.Payload)) <= c.MaxPayload()-inlineHeadroom {
		msg.Data = t.Payload
	} else {
		name := t.Job + "/" + t.ID
		err := c.retry(ctx, "store task payload", payloadTimeout(len(t.Payload)), func(ctx context.Context) error {
			obs, err := c.objects(ctx)
			if err != nil {
				return err
			}
			return c.putObject(ctx, obs, name, t.Payload)
		})
		if err != nil {
			return false, fmt.Errorf("store payload of task %s: %w", t.ID, c.explain(err))
		}
		msg.Header.Set(HeaderObject, name)
	}
	id := t.Job + "/" + t.ID
	if t.Republish > 0 {
		id += "/r" + itoa(t.Republish)
	}
	enqueued := false
	err := c.retry(ctx, "publish task", attemptTimeout, func(ctx context.Context) error {
		ack, err := c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id))
		if err == nil {
			enqueued = !ack.Duplicate
		}
		return err
	})
	switch {
	case isSubjectFull(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("publish task %s: %w", t.ID, c.explain(err))
	}
	return enqueued, nil
}

// Object chunks: the object store cuts objects into chunk messages of 128
// KiB by default, which a server with a smaller max_payload rejects
// ("maximum payload exceeded").
const (
	maxObjectChunk  = 128 << 10
	objectHeadroom  = 4 << 10 // below max_payload, for the chunk's protocol overhead
	objectDigestFmt = "SHA-256="
)

// objectChunk is the chunk size for objects on this connection's server:
// min(128 KiB, max_payload - 4 KiB), and at least half the max payload (a
// server with a tiny max payload).
func (c *Conn) objectChunk() int {
	mp := int(c.MaxPayload())
	return max(min(maxObjectChunk, mp-objectHeadroom), mp/2)
}

// putObject stores data as object name in chunks the server accepts. An
// object of that name with the same size and SHA-256 is left alone (a
// retried or repeated publication): replacing it would change its chunks
// under a worker reading them.
func (c *Conn) putObject(ctx context.Context, obs jetstream.ObjectStore, name string, data []byte) error {
	sum := sha256.Sum256(data)
	digest := objectDigestFmt + base64.URLEncoding.EncodeToString(sum[:])
	info, err := obs.GetInfo(ctx, name)
	switch {
	case err == nil && !info.Deleted && info.Size == uint64(len(data)) && info.Digest == digest:
		return nil
	case err != nil && !errors.Is(err, jetstream.ErrObjectNotFound):
		return err
	}
	_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: uint32(c.objectChunk())}},
		bytes.NewReader(data))
	return err
}

// payloadTimeout bounds one attempt at storing or fetching a payload of n
// bytes: the request timeout plus a second per MiB.
func payloadTimeout(n int) time.Duration {
	return attemptTimeout + time.Duration(n>>20)*time.Second
}

// TaskPending reports whether the task is in the work queue.
func (c *Conn) TaskPending(ctx context.Context, job, task string) (bool, error) {
	return c.hasMessage(ctx, StreamTasks, taskSubject(job, task))
}

// HasPartial reports whether the task's result is stored.
func (c *Conn) HasPartial(ctx context.Context, job, task string) (bool, error) {
	return c.hasMessage(ctx, StreamPartials, partialSubject(job, task))
}

func (c *Conn) hasMessage(ctx context.Context, stream, subject string) (bool, error) {
	found := false
	err := c.retry(ctx, "look up "+stream, attemptTimeout, func(ctx context.Context) error {
		s, err := c.js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("open stream %s: %w", stream, err)
		}
		_, err = s.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			found = false
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("look up %s: %w", subject, c.explain(err))
	}
	return found, nil
}

// PurgeJob removes the job's pending tasks (a failed job's tasks would
// otherwise keep workers busy; tasks that hit MaxDeliver stay in a work
// queue) and its payload objects. Results and failure records stay, for
// status and for resuming a finished job.
func (c *Conn) PurgeJob(ctx context.Context, job string) error {
	err := c.retry(ctx, "purge tasks", attemptTimeout, func(ctx context.Context) error {
		s, err := c.js.Stream(ctx, StreamTasks)
		if err != nil {
			return fmt.Errorf("open stream %s: %w", StreamTasks, err)
		}
		return s.Purge(ctx, jetstream.WithPurgeSubject(prefixTask+job+".>"))
	})
	if err != nil {
		return fmt.Errorf("purge tasks of job %s: %w", job, c.explain(err))
	}
	names, err := c.PayloadObjects(ctx, job)
	if err != nil {
		return err
	}
	for _, name := range names {
		err := c.retry(ctx, "delete payload", attemptTimeout, func(ctx context.Context) error {
			obs, err := c.objects(ctx)
			if err != nil {
				return err
			}
			if err := obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				return err
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("delete payload %s: %w", name, c.explain(err))
		}
	}
	return nil
}

// PayloadObjects lists the names of the job's task payloads in the object
// store.
func (c *Conn) PayloadObjects(ctx context.Context, job string) ([]string, error) {
	var names []string
	err := c.retry(ctx, "list payloads", attemptTimeout, func(ctx context.Context) error {
		obs, err := c.objects(ctx)
		if err != nil {
			return err
		}
		infos, err := obs.List(ctx)
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			return nil
		}
		if err != nil {
			return err
		}
		names = names[:0]
		for _, info := range infos {
			if strings.HasPrefix(info.Name, job+"/") {
				names = append(names, info.Name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list payload objects: %w", c.explain(err))
	}
	return names, nil
}

// PutManifest stores a job manifest, retrying while the server is
// unavailable.
func (c *Conn) PutManifest(ctx context.Context, m *coordinator.Manifest) error {
	m.Updated = time.Now().UTC()
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode manifest of job %s: %w", m.Job, err)
	}
	err = c.retry(ctx, "store manifest", attemptTimeout, func(ctx context.Context) error {
		kv, err := c.js.KeyValue(ctx, BucketJobs)
		if err != nil {
			return fmt.Errorf("open bucket %s: %w", BucketJobs, err)
		}
		_, err = kv.Put(ctx, m.Job, b)
		return err
	})
	if err != nil {
		return fmt.Errorf("store manifest of job %s: %w", m.Job, c.explain(err))
	}
	return nil
}

// GetManifest reads a job manifest.
func (c *Conn) GetManifest(ctx context.Context, job string) (*coordinator.Manifest, error) {
	var value []byte
	err := c.retry(ctx, "read manifest", attemptTimeout, func(ctx context.Context) error {
		kv, err := c.js.KeyValue(ctx, BucketJobs)
		if err != nil {
			return fmt.Errorf("open bucket %s: %w", BucketJobs, err)
		}
		e, err := kv.Get(ctx, job)
		if err != nil {
			return err
		}
		value = e.Value()
		return nil
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return nil, fmt.Errorf("%w: %s", coordinator.ErrJobNotFound, job)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest of job %s: %w", job, c.explain(err))
	}
	var m coordinator.Manifest
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, fmt.Errorf("decode manifest of job %s: %w", job, err)
	}
	return &m, nil
}

// ListManifests returns every job manifest, oldest first.
func (c *Conn) ListManifests(ctx context.Context) ([]*coordinator.Manifest, error) {
	var keys []string
	err := c.retry(ctx, "list jobs", attemptTimeout, func(ctx context.Context) error {
		kv, err := c.js.KeyValue(ctx, BucketJobs)
		if err != nil {
			return fmt.Errorf("open bucket %s: %w", BucketJobs, err)
		}
		lister, err := kv.ListKeys(ctx)
		if err != nil {
			return err
		}
		keys = keys[:0]
		for key := range lister.Keys() {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", c.explain(err))
	}
	var out []*coordinator.Manifest
	for _, key := range keys {
		m, err := c.GetManifest(ctx, key)
		if errors.Is(err, coordinator.ErrJobNotFound) {
			continue // expired meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// WorkerCount is the number of workers with a recent heartbeat.
func (c *Conn) WorkerCount(ctx context.Context) (int, error) {
	ws, err := c.Workers(ctx)
	return len(ws), err
}

// JobCounts counts a job's tasks by state, for status.
type JobCounts struct {
	Pending, Done, Failed int
}

// Counts counts the pending tasks, stored results and final failures of a
// job from the streams' per-subject counts.
func (c *Conn) Counts(ctx context.Context, job string) (JobCounts, error) {
	jt, err := c.Tasks(ctx, job)
	return JobCounts{Pending: len(jt.Pending), Done: len(jt.Done), Failed: len(jt.Failed)}, err
}

// JobTasks lists a job's task ids by state, each list sorted.
type JobTasks struct {
	Pending []string // in the work queue (waiting, held by a worker, or given up)
	Done    []string // with a stored result
	Failed  []string // with a final failure
}

// Tasks lists the job's pending tasks, stored results and final failures,
// reading the streams in that order.
func (c *Conn) Tasks(ctx context.Context, job string) (JobTasks, error) {
	var jt JobTasks
	for _, q := range []struct {
		stream, prefix string
		ids            *[]string
	}{
		{StreamTasks, prefixTask, &jt.Pending},
		{StreamPartials, prefixPartial, &jt.Done},
		{StreamDLQ, prefixDead, &jt.Failed},
	} {
		subjects, err := c.subjects(ctx, q.stream, q.prefix+job+".>")
		if err != nil {
			return jt, err
		}
		for subject := range subjects {
			*q.ids = append(*q.ids, taskOf(subject, q.prefix))
		}
		slices.Sort(*q.ids)
	}
	return jt, nil
}

// Settlement reports the job's tasks still in the work queue and its final
// failures, reading the queue first (see coordinator.Queue).
func (c *Conn) Settlement(ctx context.Context, job string) (coordinator.Settlement, error) {
	var st coordinator.Settlement
	pending, err := c.subjects(ctx, StreamTasks, prefixTask+job+".>")
	if err != nil {
		return st, err
	}
	for _, n := range pending {
		st.Pending += int(n)
	}
	dead, err := c.subjects(ctx, StreamDLQ, prefixDead+job+".>")
	if err != nil {
		return st, err
	}
	subjects := slices.Sorted(maps.Keys(dead))
	for _, subject := range subjects {
		var data []byte
		err := c.retry(ctx, "read failure record", attemptTimeout, func(ctx context.Context) error {
			s, err := c.js.Stream(ctx, StreamDLQ)
			if err != nil {
				return err
			}
			m, err := s.GetLastMsgForSubject(ctx, subject)
			if err != nil {
				return err
			}
			data = m.Data
			return nil
		})
		if err != nil {
			return st, fmt.Errorf("read failure record %s: %w", subject, c.explain(err))
		}
		st.Failures = append(st.Failures, failureEvent(taskOf(subject, prefixDead), data))
	}
	return st, nil
}

// subjects returns the message count per subject of a stream's subjects
// matching filter.
func (c *Conn) subjects(ctx context.Context, stream, filter string) (map[string]uint64, error) {
	var subjects map[string]uint64
	err := c.retry(ctx, "read stream "+stream, attemptTimeout, func(ctx context.Context) error {
		s, err := c.js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("open stream %s: %w", stream, err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return err
		}
		subjects = info.State.Subjects
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read stream %s: %w", stream, c.explain(err))
	}
	return subjects, nil
}

// Watch delivers the job's stored results, its final failures, and tasks
// the server gave up on after MaxDeliver (from the captured advisories,
// which cover a worker that crashed on its last attempt).
func (c *Conn) Watch(ctx context.Context, job string) (coordinator.Watcher, error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &watcher{c: c, job: job, events: make(chan coordinator.Event, 128), errs: make(chan error, 3), cancel: cancel}
	subs := []struct {
		stream string
		filter string
		handle func(jetstream.Msg) (coordinator.Event, bool)
	}{
		{StreamPartials, prefixPartial + job + ".>", w.partial},
		{StreamDLQ, prefixDead + job + ".>", w.dead},
		{StreamAdvisories, "", w.advisory},
	}
	for _, s := range subs {
		cfg := jetstream.OrderedConsumerConfig{}
		if s.filter != "" {
			cfg.FilterSubjects = []string{s.filter}
		}
		var it jetstream.MessagesContext
		err := c.retry(ctx, "watch "+s.stream, attemptTimeout, func(ctx context.Context) error {
			cons, err := c.js.OrderedConsumer(ctx, s.stream, cfg)
			if err != nil {
				return err
			}
			it, err = cons.Messages()
			return err
		})
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("watch %s: %w", s.stream, c.explain(err))
		}
		w.its = append(w.its, it)
		w.wg.Add(1)
		go func(it jetstream.MessagesContext, handle func(jetstream.Msg) (coordinator.Event, bool)) {
			defer w.wg.Done()
			for {
				msg, err := it.Next()
				if err != nil {
					if errors.Is(err, jetstream.ErrMsgIteratorClosed) || wctx.Err() != nil {
						return
					}
					continue // transient (server restart): the ordered consumer resumes
				}
				ev, ok := handle(msg)
				if !ok {
					continue
				}
				select {
				case w.events <- ev:
				case <-wctx.Done():
					return
				}
			}
		}(it, s.handle)
	}
	return w, nil
}

type watcher struct {
	c      *Conn
	job    string
	events chan coordinator.Event
	errs   chan error
	its    []jetstream.MessagesContext
	wg     sync.WaitGroup
	cancel context.CancelFunc
	once   sync.Once
}

func (w *watcher) Next(ctx context.Context) (coordinator.Event, error) {
	select {
	case ev := <-w.events:
		return ev, nil
	case err := <-w.errs:
		return coordinator.Event{}, err
	case <-ctx.Done():
		return coordinator.Event{}, ctx.Err()
	}
}

func (w *watcher) Stop() {
	w.once.Do(func() {
		w.cancel()
		for _, it := range w.its {
			it.Stop()
		}
		w.wg.Wait()
	})
}

func taskOf(subject, prefix string) string {
	rest := strings.TrimPrefix(subject, prefix)
	_, task, _ := strings.Cut(rest, ".")
	return task
}

func (w *watcher) partial(m jetstream.Msg) (coordinator.Event, bool) {
	return coordinator.Event{Task: taskOf(m.Subject(), prefixPartial), Partial: m.Data(), Worker: m.Headers().Get(HeaderWorker)}, true
}

func (w *watcher) dead(m jetstream.Msg) (coordinator.Event, bool) {
	return failureEvent(taskOf(m.Subject(), prefixDead), m.Data()), true
}

// failureEvent decodes a final failure record of a task.
func failureEvent(task string, data []byte) coordinator.Event {
	var f failureRecord
	if err := json.Unmarshal(data, &f); err != nil {
		return coordinator.Event{Task: task, Dead: true, Reason: "unreadable failure record"}
	}
	return coordinator.Event{Task: f.Task, Dead: true, Reason: f.Reason, Worker: f.Worker, Deliveries: f.Deliveries}
}

// advisory resolves a max-deliveries advisory to a task of this job. The
// task message stays in the work queue after MaxDeliver, so its sequence
// still names it; the last recorded attempt failure gives the reason.
func (w *watcher) advisory(m jetstream.Msg) (coordinator.Event, bool) {
	if !strings.Contains(m.Subject(), ".MAX_DELIVERIES.") {
		return coordinator.Event{}, false
	}
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries int    `json:"deliveries"`
	}
	if json.Unmarshal(m.Data(), &adv) != nil || adv.StreamSeq == 0 {
		return coordinator.Event{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := w.c.js.Stream(ctx, StreamTasks)
	if err != nil {
		return coordinator.Event{}, false
	}
	raw, err := s.GetMsg(ctx, adv.StreamSeq)
	if err != nil || !strings.HasPrefix(raw.Subject, prefixTask+w.job+".") {
		return coordinator.Event{}, false // another job's task, or already gone
	}
	task := taskOf(raw.Subject, prefixTask)
	ev := coordinator.Event{Task: task, Dead: true, Deliveries: adv.Deliveries,
		Reason: "delivered the maximum number of times without a result (workers crashed or timed out)"}
	if d, err := w.c.js.Stream(ctx, StreamDLQ); err == nil {
		if last, err := d.GetLastMsgForSubject(ctx, failSubject(w.job, task)); err == nil {
			var f failureRecord
			if json.Unmarshal(last.Data, &f) == nil {
				ev.Reason = "last error: " + f.Reason
				ev.Worker = f.Worker
			}
		}
	}
	return ev, true
}
