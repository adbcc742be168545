package jsq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Names of the JetStream objects, stable across versions.
const (
	StreamTasks      = "EVALGATE_TASKS"
	StreamPartials   = "EVALGATE_PARTIALS"
	StreamDLQ        = "EVALGATE_DLQ"
	StreamAdvisories = "EVALGATE_ADVISORIES"
	ConsumerWorkers  = "workers"
	BucketJobs       = "evalgate-jobs"
	BucketWorkers    = "evalgate-workers"
	BucketShards     = "evalgate-shards"

	prefixTask    = "evalgate.task."
	prefixPartial = "evalgate.partial."
	prefixFail    = "evalgate.fail."
	prefixDead    = "evalgate.dlq."

	advisoryMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + StreamTasks + ".*"
	advisoryTerminated    = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + StreamTasks + ".*"
)

func taskSubject(job, task string) string    { return prefixTask + job + "." + task }
func partialSubject(job, task string) string { return prefixPartial + job + "." + task }
func failSubject(job, task string) string    { return prefixFail + job + "." + task }
func deadSubject(job, task string) string    { return prefixDead + job + "." + task }

// Topology configures the streams and the consumer.
type Topology struct {
	// AckWait bounds how long a crashed worker holds a task (default 30s).
	AckWait time.Duration
	// MaxDeliver bounds the attempts at a task (default 5).
	MaxDeliver int
	// MaxAckPending bounds the tasks out at once over all workers (default
	// 1024).
	MaxAckPending int
	// Replicas per stream: 1 on one server, 3 on a cluster (default 1).
	Replicas int
	// Retention of partials, failure records and manifests (default 7
	// days).
	Retention time.Duration
	// SyncAlways is recorded for information; fsync policy is a server
	// setting.
}

// DefaultTopology returns the production defaults.
func DefaultTopology() Topology {
	return Topology{AckWait: 30 * time.Second, MaxDeliver: 5, MaxAckPending: 1024, Replicas: 1, Retention: 7 * 24 * time.Hour}
}

func (t Topology) withDefaults() Topology {
	d := DefaultTopology()
	if t.AckWait <= 0 {
		t.AckWait = d.AckWait
	}
	if t.MaxDeliver <= 0 {
		t.MaxDeliver = d.MaxDeliver
	}
	if t.MaxAckPending <= 0 {
		t.MaxAckPending = d.MaxAckPending
	}
	if t.Replicas <= 0 {
		t.Replicas = d.Replicas
	}
	if t.Retention <= 0 {
		t.Retention = d.Retention
	}
	return t
}

// EnsureTopology creates whatever of the streams, consumer and buckets is
// missing (the rate limits' bucket included, so that workers never need to
// create anything). Existing objects are left as they are: the first to create them
// (usually `evalgate server` or the first coordinator) sets their limits.
func (c *Conn) EnsureTopology(ctx context.Context, t Topology) error {
	t = t.withDefaults()
	streams := []jetstream.StreamConfig{
		{
			Name: StreamTasks, Subjects: []string{prefixTask + ">"},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			Duplicates: 2 * time.Minute, Replicas: t.Replicas,
			Description: "evalgate tasks: one message per shard part, consumed by workers",
		},
		{
			Name: StreamPartials, Subjects: []string{prefixPartial + ">"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			Duplicates: 2 * time.Minute, MaxAge: t.Retention, Replicas: t.Replicas,
			Description: "evalgate partial results: the first result of a task wins",
		},
		{
			Name: StreamDLQ, Subjects: []string{prefixFail + ">", prefixDead + ">"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardOld,
			MaxAge: t.Retention, Replicas: t.Replicas,
			Description: "evalgate failures: last failed attempt and final failures per task",
		},
		{
			Name: StreamAnswers, Subjects: []string{prefixAnswer + ">"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			Duplicates: 2 * time.Minute, MaxAge: t.Retention, Replicas: t.Replicas,
			Description: "evalgate live retrieval answers: the first answer of a query wins",
		},
		{
			Name: StreamJudgments, Subjects: []string{prefixJudgment + ">"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			Duplicates: 2 * time.Minute, MaxAge: judgmentsRetention(t.Retention), Replicas: t.Replicas,
			Description: "evalgate LLM judgments, cached by model, prompt, query and passage: the first one wins",
		},
		{
			Name: StreamAdvisories, Subjects: []string{advisoryMaxDeliveries, advisoryTerminated},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxAge: t.Retention, Replicas: t.Replicas,
			Description: "JetStream advisories about evalgate tasks (max deliveries, terminated)",
		},
	}
	for _, sc := range streams {
		if _, err := c.js.Stream(ctx, sc.Name); err == nil {
			continue
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("look up stream %s: %w", sc.Name, c.explain(err))
		}
		if _, err := c.js.CreateStream(ctx, sc); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", sc.Name, c.explain(err))
		}
	}
	if _, err := c.js.Consumer(ctx, StreamTasks, ConsumerWorkers); errors.Is(err, jetstream.ErrConsumerNotFound) {
		_, err = c.js.CreateConsumer(ctx, StreamTasks, jetstream.ConsumerConfig{
			Durable:       ConsumerWorkers,
			Description:   "evalgate workers: pull, explicit ack",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       t.AckWait,
			MaxDeliver:    t.MaxDeliver,
			MaxAckPending: t.MaxAckPending,
			Replicas:      t.Replicas,
		})
		if err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
			return fmt.Errorf("create consumer %s: %w", ConsumerWorkers, c.explain(err))
		}
	} else if err != nil {
		return fmt.Errorf("look up consumer %s: %w", ConsumerWorkers, c.explain(err))
	}
	if _, err := c.js.KeyValue(ctx, BucketJobs); errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: BucketJobs, Description: "evalgate job manifests",
			TTL: t.Retention, Storage: jetstream.FileStorage, Replicas: t.Replicas})
		if err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("create bucket %s: %w", BucketJobs, c.explain(err))
		}
	} else if err != nil {
		return fmt.Errorf("look up bucket %s: %w", BucketJobs, c.explain(err))
	}
	if _, err := c.js.KeyValue(ctx, BucketWorkers); errors.Is(err, jetstream.ErrBucketNotFound) {
		if _, err := c.createWorkerRegistry(ctx, t.Replicas); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("look up bucket %s: %w", BucketWorkers, c.explain(err))
	}
	if _, err := c.limitsBucket(ctx, t.Replicas); err != nil {
		return fmt.Errorf("create bucket %s: %w", BucketLimits, c.explain(err))
	}
	if _, err := c.js.ObjectStore(ctx, BucketShards); errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = c.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: BucketShards, Description: "evalgate shard payloads too large to inline",
			TTL: t.Retention, Storage: jetstream.FileStorage, Replicas: t.Replicas})
		if err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("create object store %s: %w", BucketShards, c.explain(err))
		}
	} else if err != nil {
		return fmt.Errorf("look up object store %s: %w", BucketShards, c.explain(err))
	}
	return nil
}

// judgmentsRetention is how long cached judgments are kept: paid for,
// they outlive the jobs' records (ten times the retention, at least 90
// days).
func judgmentsRetention(retention time.Duration) time.Duration {
	return max(10*retention, 90*24*time.Hour)
}

// workerTTL is how long a worker heartbeat stays visible.
const workerTTL = 30 * time.Second

// createWorkerRegistry creates the worker heartbeat bucket, in file
// storage so that it survives a server restart (a memory bucket, as
// earlier versions made, vanishes with it; Heartbeat then recreates it
// here).
func (c *Conn) createWorkerRegistry(ctx context.Context, replicas int) (jetstream.KeyValue, error) {
	kv, err := c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: BucketWorkers, Description: "evalgate worker heartbeats",
		TTL: workerTTL, Storage: jetstream.FileStorage, Replicas: replicas})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = c.js.KeyValue(ctx, BucketWorkers)
	}
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", BucketWorkers, c.explain(err))
	}
	return kv, nil
}

// WaitTopology waits until the work stream and consumer exist (a worker
// started before any coordinator or server created them), checking every
// second.
func (c *Conn) WaitTopology(ctx context.Context, notify func()) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	first := true
	for {
		_, err := c.js.Consumer(ctx, StreamTasks, ConsumerWorkers)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("look up consumer %s: %w", ConsumerWorkers, c.explain(err))
		}
		if first && notify != nil {
			notify()
			first = false
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
