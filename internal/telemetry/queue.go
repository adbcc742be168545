package telemetry

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Connection is a process's connection to NATS, as jsq.Conn reports it.
type Connection interface {
	// Connected reports whether the connection is up now.
	Connected() bool
	// Retries counts the JetStream calls retried since the connection was
	// made (the server restarting, a stream electing a leader).
	Retries() int64
}

// connections are the NATS connections of a process.
type connections struct {
	mu   sync.Mutex
	list []Connection
}

func (cs *connections) connected() float64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.list {
		if !c.Connected() {
			return 0
		}
	}
	return 1
}

func (cs *connections) retries() float64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var n int64
	for _, c := range cs.list {
		n += c.Retries()
	}
	return float64(n)
}

// Connection adds a NATS connection to evalgate_nats_connected (1 while
// every connection added is up) and evalgate_nats_retries_total.
func (m *Metrics) Connection(c Connection) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = &connections{}
		m.register(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "nats", Name: "connected",
				Help: "1 while the process's connections to NATS are up, 0 while one is reconnecting."}, m.conns.connected),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "nats", Name: "retries_total",
				Help: "JetStream calls retried after a transient failure (a server restarting, a stream electing a leader, a lost connection)."}, m.conns.retries),
		)
	}
	m.conns.mu.Lock()
	m.conns.list = append(m.conns.list, c)
	m.conns.mu.Unlock()
}

// QueueStats is the state of the work queue and the evalgate streams.
type QueueStats struct {
	// Of the workers' consumer on EVALGATE_TASKS:
	Pending     uint64 // tasks not yet delivered
	AckPending  uint64 // tasks delivered and not yet acknowledged (held by workers)
	Redelivered uint64 // tasks held that had been delivered before
	Waiting     uint64 // pull requests waiting: idle worker slots
	// Streams maps each evalgate stream (buckets included, by their
	// stream names) to its messages and bytes.
	Streams map[string]StreamStats
}

// StreamStats is the size of one stream.
type StreamStats struct {
	Messages, Bytes uint64
}

// queueTimeout bounds one reading of the queue's state during a scrape.
const queueTimeout = 3 * time.Second

// Queue registers the queue gauges, read by stats at every scrape (once;
// later calls are ignored). A failed reading sets evalgate_queue_up to 0
// and leaves the other queue gauges out of that scrape.
func (m *Metrics) Queue(stats func(ctx context.Context) (QueueStats, error)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.queue {
		return
	}
	m.queue = true
	m.register(&queueCollector{stats: stats})
}

var (
	queueUp = prometheus.NewDesc(Namespace+"_queue_up",
		"1 when the last scrape read the queue's state from JetStream, else 0.", nil, nil)
	queuePending = prometheus.NewDesc(Namespace+"_queue_tasks_pending",
		"Tasks in EVALGATE_TASKS not yet delivered to a worker (the workers consumer's pending count).", nil, nil)
	queueAckPending = prometheus.NewDesc(Namespace+"_queue_tasks_ack_pending",
		"Tasks delivered to workers and not yet acknowledged: being worked on, or held by a worker that died until the ack wait ends.", nil, nil)
	queueRedelivered = prometheus.NewDesc(Namespace+"_queue_tasks_redelivered",
		"Tasks held by workers that had been delivered before.", nil, nil)
	queueWaiting = prometheus.NewDesc(Namespace+"_queue_pulls_waiting",
		"Pull requests waiting for a task: idle worker slots.", nil, nil)
	streamMessages = prometheus.NewDesc(Namespace+"_stream_messages",
		"Messages in an evalgate stream (a bucket's stream included).", []string{"stream"}, nil)
	streamBytes = prometheus.NewDesc(Namespace+"_stream_bytes",
		"Bytes in an evalgate stream (a bucket's stream included).", []string{"stream"}, nil)
)

// queueCollector reads the queue's state at every scrape.
type queueCollector struct {
	stats func(ctx context.Context) (QueueStats, error)
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueUp, queuePending, queueAckPending, queueRedelivered, queueWaiting, streamMessages, streamBytes} {
		ch <- d
	}
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
	defer cancel()
	s, err := q.stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(queueUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(queueUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(queuePending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(queueAckPending, prometheus.GaugeValue, float64(s.AckPending))
	ch <- prometheus.MustNewConstMetric(queueRedelivered, prometheus.GaugeValue, float64(s.Redelivered))
	ch <- prometheus.MustNewConstMetric(queueWaiting, prometheus.GaugeValue, float64(s.Waiting))
	for name, st := range s.Streams {
		ch <- prometheus.MustNewConstMetric(streamMessages, prometheus.GaugeValue, float64(st.Messages), name)
		ch <- prometheus.MustNewConstMetric(streamBytes, prometheus.GaugeValue, float64(st.Bytes), name)
	}
}
