package jsq

import (
	"slices"
)

// Role is what a NATS user of evalgate does; each has its own user and
// permissions (see Permissions).
type Role string

// The roles, and the user names ServerConfig gives them.
const (
	// RoleWorker takes tasks, reads their payloads, stores results,
	// failures, answers and judgments, shares the rate limits, and sends
	// heartbeats: `evalgate worker`.
	RoleWorker Role = "worker"
	// RoleCoordinator creates the streams, consumer and buckets, publishes
	// jobs and reads their results: `evalgate run --nats`, which may run
	// workers in its process too, so it may do what a worker does.
	RoleCoordinator Role = "coordinator"
	// RoleStatus reads jobs, workers and history: `evalgate status`,
	// `evalgate history`.
	RoleStatus Role = "status"
)

// Roles lists every role.
var Roles = []Role{RoleCoordinator, RoleWorker, RoleStatus}

// Account is the NATS account ServerConfig puts evalgate's users in.
const Account = "EVALGATE"

// Streams of the buckets, as JetStream names them.
const (
	kvStream  = "KV_"
	objStream = "OBJ_"
)

// Permissions are a NATS user's allow lists: the subjects it may publish
// to (JetStream API requests, acknowledgements, messages) and subscribe to
// (replies, deliveries). Everything else is denied.
type Permissions struct {
	Publish   []string
	Subscribe []string
}

// RolePermissions returns what role r may do: exactly the JetStream API
// requests, acknowledgements and subjects this package's calls make for
// that role, each named by stream, so nothing else in the account is
// reachable. Notably a worker cannot purge, delete or create streams or
// the workers consumer, nor publish tasks; status cannot write at all.
//
// Reading a bucket (the object store's payloads, a KV bucket's keys)
// takes an ephemeral ordered consumer on the bucket's stream, so a role
// that reads one may create and delete consumers on that stream (never on
// EVALGATE_TASKS) and answer its flow control.
func RolePermissions(r Role) Permissions {
	var p permissionSet
	p.pub(api("INFO")) // account info: Connect checks JetStream
	p.sub("_INBOX.>")  // replies and deliveries
	switch r {
	case RoleWorker:
		p.worker()
	case RoleCoordinator:
		p.worker()
		p.coordinator()
	case RoleStatus:
		p.status()
	}
	return Permissions{Publish: p.publish, Subscribe: p.subscribe}
}

type permissionSet struct{ publish, subscribe []string }

func (p *permissionSet) pub(subjects ...string) {
	for _, s := range subjects {
		if !slices.Contains(p.publish, s) {
			p.publish = append(p.publish, s)
		}
	}
}

func (p *permissionSet) sub(subjects ...string) {
	for _, s := range subjects {
		if !slices.Contains(p.subscribe, s) {
			p.subscribe = append(p.subscribe, s)
		}
	}
}

func api(request string) string { return "$JS.API." + request }

// readStream lets p look a stream up and read its messages by subject.
func (p *permissionSet) readStream(stream string) {
	p.pub(api("STREAM.INFO."+stream), api("STREAM.MSG.GET."+stream), api("DIRECT.GET."+stream), api("DIRECT.GET."+stream+".>"))
}

// readBucket lets p read a KV bucket or an object store through its stream:
// lookups, direct gets, and the ordered consumers that list keys and read
// objects (created, deleted, flow-controlled).
func (p *permissionSet) readBucket(stream string) {
	p.readStream(stream)
	p.pub(api("CONSUMER.CREATE."+stream), api("CONSUMER.CREATE."+stream+".>"), api("CONSUMER.DELETE."+stream+".>"),
		api("CONSUMER.INFO."+stream+".>"), api("CONSUMER.MSG.NEXT."+stream+".>"), "$JS.FC."+stream+".>")
}

// watchStream lets p read a stream with an ordered consumer (pulled).
func (p *permissionSet) watchStream(stream string) {
	p.readStream(stream)
	p.pub(api("CONSUMER.CREATE."+stream+".>"), api("CONSUMER.DELETE."+stream+".>"), api("CONSUMER.INFO."+stream+".>"),
		api("CONSUMER.MSG.NEXT."+stream+".>"))
}

func (p *permissionSet) worker() {
	// Tasks: bind the consumer, pull, acknowledge (ack, nak, term,
	// progress).
	p.pub(api("CONSUMER.INFO."+StreamTasks+"."+ConsumerWorkers), api("CONSUMER.MSG.NEXT."+StreamTasks+"."+ConsumerWorkers),
		"$JS.ACK."+StreamTasks+"."+ConsumerWorkers+".>")
	// Payloads too large to travel inline.
	p.readBucket(objStream + BucketShards)
	// Results, failures, answers and judgments: store, and read the one
	// stored first.
	p.pub(prefixPartial+">", prefixFail+">", prefixDead+">", prefixAnswer+">", prefixJudgment+">")
	p.readStream(StreamPartials)
	p.readStream(StreamAnswers)
	p.readStream(StreamJudgments)
	// Heartbeats and the shared rate limits.
	p.readStream(kvStream + BucketWorkers)
	p.readStream(kvStream + BucketLimits)
	p.pub("$KV."+BucketWorkers+".>", "$KV."+BucketLimits+".>")
}

// evalgateStreams are every stream evalgate creates, buckets included.
var evalgateStreams = []string{
	StreamTasks, StreamPartials, StreamDLQ, StreamAdvisories, StreamAnswers, StreamJudgments,
	kvStream + BucketJobs, kvStream + BucketWorkers, kvStream + BucketLimits,
	objStream + BucketShards, objStream + BucketHistory,
}

func (p *permissionSet) coordinator() {
	for _, s := range evalgateStreams {
		p.pub(api("STREAM.CREATE."+s), api("STREAM.INFO."+s))
	}
	p.pub(api("CONSUMER.CREATE."+StreamTasks+"."+ConsumerWorkers), api("CONSUMER.DURABLE.CREATE."+StreamTasks+"."+ConsumerWorkers))
	// Tasks: publish, look up, purge a finished job's.
	p.pub(prefixTask+">", api("STREAM.PURGE."+StreamTasks))
	p.readStream(StreamTasks)
	// Payload objects and history: write, list, delete (a purge of the
	// object's chunks).
	p.pub("$O."+BucketShards+".>", api("STREAM.PURGE."+objStream+BucketShards))
	p.readBucket(objStream + BucketHistory)
	p.pub("$O."+BucketHistory+".>", api("STREAM.PURGE."+objStream+BucketHistory))
	// Manifests, and the list of workers.
	p.readBucket(kvStream + BucketJobs)
	p.pub("$KV." + BucketJobs + ".>")
	p.readBucket(kvStream + BucketWorkers)
	// Results, final failures, advisories, answers, judgments: watched.
	for _, s := range []string{StreamPartials, StreamDLQ, StreamAdvisories, StreamAnswers, StreamJudgments} {
		p.watchStream(s)
	}
}

// status reads: evalgate status and history, and the nats CLI's
// inspection commands (stream and consumer lists and info, stream get and
// view, kv ls and get, object ls). It may create consumers only where
// reading needs one, never on EVALGATE_TASKS: it cannot take a task.
func (p *permissionSet) status() {
	p.pub(api("STREAM.NAMES"), api("STREAM.LIST"))
	for _, s := range append(slices.Clone(evalgateStreams), StreamJudgments) {
		p.pub(api("STREAM.INFO."+s), api("CONSUMER.NAMES."+s), api("CONSUMER.LIST."+s), api("CONSUMER.INFO."+s+".>"))
		if s != StreamTasks {
			p.readBucket(s)
		}
	}
	p.readStream(StreamTasks)
}
