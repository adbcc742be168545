package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// CoordinatorMetrics are the metrics of a coordinator (`run`): what it
// read and published, and how far its job is. It implements
// coordinator.Metrics.
type CoordinatorMetrics struct {
	ingested       prometheus.Counter
	published      prometheus.Counter
	publishedBytes prometheus.Counter
	tasks          prometheus.Gauge
	tasksDone      prometheus.Gauge
	queriesDone    prometheus.Gauge
	workers        prometheus.Gauge
}

// Coordinator registers the coordinator metrics (once; later calls return
// the same).
func (m *Metrics) Coordinator() *CoordinatorMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.coordinator != nil {
		return m.coordinator
	}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: Namespace, Subsystem: "coordinator", Name: name, Help: help}
	}
	c := &CoordinatorMetrics{
		ingested:       prometheus.NewCounter(prometheus.CounterOpts(opts("ingested_bytes_total", "Bytes of input files (gold set, run, baseline run) read in full."))),
		published:      prometheus.NewCounter(prometheus.CounterOpts(opts("tasks_published_total", "Tasks the queue enqueued."))),
		publishedBytes: prometheus.NewCounter(prometheus.CounterOpts(opts("published_bytes_total", "Bytes of the payloads of the tasks enqueued."))),
		tasks:          prometheus.NewGauge(prometheus.GaugeOpts(opts("job_tasks", "Tasks of the running job; 0 until all are published."))),
		tasksDone:      prometheus.NewGauge(prometheus.GaugeOpts(opts("job_tasks_done", "Tasks of the running job with a stored result."))),
		queriesDone:    prometheus.NewGauge(prometheus.GaugeOpts(opts("job_queries_done", "Queries of the running job scored."))),
		workers:        prometheus.NewGauge(prometheus.GaugeOpts(opts("workers", "Workers seen (with a recent heartbeat) by the running job."))),
	}
	m.register(c.ingested, c.published, c.publishedBytes, c.tasks, c.tasksDone, c.queriesDone, c.workers)
	m.coordinator = c
	return c
}

// InputRead counts an input file read in full (coordinator.Metrics).
func (c *CoordinatorMetrics) InputRead(bytes int64) { c.ingested.Add(float64(max(bytes, 0))) }

// TaskPublished counts a task enqueued (coordinator.Metrics).
func (c *CoordinatorMetrics) TaskPublished(bytes int) {
	c.published.Inc()
	c.publishedBytes.Add(float64(max(bytes, 0)))
}

// Progress sets the job gauges from the coordinator's progress report.
func (c *CoordinatorMetrics) Progress(tasks, tasksDone int, queriesDone int64, workers int) {
	c.tasks.Set(float64(tasks))
	c.tasksDone.Set(float64(tasksDone))
	c.queriesDone.Set(float64(queriesDone))
	c.workers.Set(float64(workers))
}
