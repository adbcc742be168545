package telemetry

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/retriever"
)

// Outcomes of a task as the worker reports them (worker.Outcome*).
const (
	outcomeDone      = "done"
	outcomeDuplicate = "duplicate"
	outcomeFailed    = "failed"
	outcomeFinal     = "final"
	outcomeMismatch  = "mismatch"
	outcomeReleased  = "released"
)

// WorkerMetrics are the metrics of a worker's tasks and of the services
// they ask (the retriever under test, an LLM judge). It implements
// worker.Metrics.
type WorkerMetrics struct {
	slots       prometheus.Gauge
	inFlight    *prometheus.GaugeVec
	taken       *prometheus.CounterVec
	redelivered *prometheus.CounterVec
	done        *prometheus.CounterVec
	duplicates  *prometheus.CounterVec
	failed      *prometheus.CounterVec
	mismatches  *prometheus.CounterVec
	released    *prometheus.CounterVec
	queries     *prometheus.CounterVec
	duration    *prometheus.HistogramVec

	retrieverSeconds     *prometheus.HistogramVec
	retrieverRateLimited *prometheus.CounterVec
	retrieverRetries     *prometheus.CounterVec

	llmSeconds     *prometheus.HistogramVec
	llmRateLimited prometheus.Counter
	llmRetries     prometheus.Counter
	llmTokens      *prometheus.CounterVec
}

// Worker registers the worker metrics (once; later calls return the same)
// and sets the number of task slots.
func (m *Metrics) Worker(slots int) *WorkerMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.worker != nil {
		m.worker.slots.Set(float64(slots))
		return m.worker
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "worker", Name: name, Help: help}, labels)
	}
	w := &WorkerMetrics{
		slots: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "worker", Name: "slots",
			Help: "Tasks the worker runs at once (--concurrency)."}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "worker", Name: "tasks_in_flight",
			Help: "Tasks the worker holds now, by kind."}, []string{"kind"}),
		taken:       counter("tasks_taken_total", "Tasks taken from the queue, by kind (redeliveries included).", "kind"),
		redelivered: counter("tasks_redelivered_total", "Tasks taken that had been delivered before (a worker crashed, stalled past the ack wait, or failed), by kind.", "kind"),
		done:        counter("tasks_done_total", "Tasks whose result this worker stored, or found stored with the same bytes, and acknowledged, by kind.", "kind"),
		duplicates:  counter("tasks_duplicate_total", "Tasks done whose result was already stored with the same bytes (scored twice: a redelivery or a late ack), by kind; included in tasks_done_total.", "kind"),
		failed:      counter("tasks_failed_total", "Failed attempts at tasks, by kind; final=\"true\": the task will not be retried and its job fails (corrupt payload, last delivery, determinism mismatch).", "kind", "final"),
		mismatches:  counter("determinism_failures_total", "Tasks whose result differed from the one stored for them: a determinism failure, which fails the job; included in tasks_failed_total{final=\"true\"}.", "kind"),
		released:    counter("tasks_released_total", "Tasks handed back unscored because the worker was stopping (SIGTERM), by kind.", "kind"),
		queries:     counter("queries_scored_total", "Queries in the tasks done (pairs graded, for judge tasks), by kind.", "kind"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "worker", Name: "task_duration_seconds",
			Help: "Time from taking a task to settling it with the queue, by kind.", Buckets: taskBuckets}, []string{"kind"}),

		retrieverSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "retriever", Name: "request_duration_seconds",
			Help:    "HTTP attempts at the retriever under test, from sending the request to the answer read, by step (embed, search) and status class (2xx to 5xx, error: no answer).",
			Buckets: requestBuckets}, []string{"step", "class"}),
		retrieverRateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "retriever", Name: "rate_limited_total",
			Help: "Answers HTTP 429 (too many requests) from the retriever under test, by step."}, []string{"step"}),
		retrieverRetries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "retriever", Name: "retries_total",
			Help: "Attempts at the retriever under test that were followed by a retry, by step."}, []string{"step"}),

		llmSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: "llm", Name: "request_duration_seconds",
			Help:    "HTTP attempts at the LLM judge, from sending the request to the answer read, by status class (2xx to 5xx, error: no answer).",
			Buckets: llmBuckets}, []string{"class"}),
		llmRateLimited: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "llm", Name: "rate_limited_total",
			Help: "Answers HTTP 429 (too many requests) from the LLM judge."}),
		llmRetries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "llm", Name: "retries_total",
			Help: "Attempts at the LLM judge that were followed by a retry."}),
		llmTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "llm", Name: "tokens_total",
			Help: "Tokens the LLM judge reported using, by type (prompt, completion)."}, []string{"type"}),
	}
	m.register(w.slots, w.inFlight, w.taken, w.redelivered, w.done, w.duplicates, w.failed, w.mismatches, w.released,
		w.queries, w.duration, w.retrieverSeconds, w.retrieverRateLimited, w.retrieverRetries,
		w.llmSeconds, w.llmRateLimited, w.llmRetries, w.llmTokens)
	// Every series a kind can have exists from the start, at 0: a rate
	// over a counter that appears with its first event misses that event.
	for _, k := range Kinds {
		w.inFlight.WithLabelValues(k)
		for _, c := range []*prometheus.CounterVec{w.taken, w.redelivered, w.done, w.duplicates, w.mismatches, w.released, w.queries} {
			c.WithLabelValues(k)
		}
		w.failed.WithLabelValues(k, "false")
		w.failed.WithLabelValues(k, "true")
	}
	for _, step := range []retriever.Step{retriever.StepEmbed, retriever.StepSearch} {
		w.retrieverRateLimited.WithLabelValues(string(step))
		w.retrieverRetries.WithLabelValues(string(step))
	}
	w.llmTokens.WithLabelValues("prompt")
	w.llmTokens.WithLabelValues("completion")
	w.slots.Set(float64(slots))
	m.worker = w
	return w
}

// TaskStarted counts a task taken (worker.Metrics).
func (w *WorkerMetrics) TaskStarted(kind string, delivery int) {
	kind = kindLabel(kind)
	w.taken.WithLabelValues(kind).Inc()
	if delivery > 1 {
		w.redelivered.WithLabelValues(kind).Inc()
	}
	w.inFlight.WithLabelValues(kind).Inc()
}

// TaskFinished counts a task settled (worker.Metrics).
func (w *WorkerMetrics) TaskFinished(kind, outcome string, took time.Duration, queries int) {
	kind = kindLabel(kind)
	w.inFlight.WithLabelValues(kind).Dec()
	w.duration.WithLabelValues(kind).Observe(took.Seconds())
	switch outcome {
	case outcomeDuplicate:
		w.duplicates.WithLabelValues(kind).Inc()
		fallthrough
	case outcomeDone:
		w.done.WithLabelValues(kind).Inc()
		w.queries.WithLabelValues(kind).Add(float64(queries))
	case outcomeFailed:
		w.failed.WithLabelValues(kind, "false").Inc()
	case outcomeMismatch:
		w.mismatches.WithLabelValues(kind).Inc()
		fallthrough
	case outcomeFinal:
		w.failed.WithLabelValues(kind, "true").Inc()
	case outcomeReleased:
		w.released.WithLabelValues(kind).Inc()
	}
}

// RetrieverAttempt records one HTTP attempt at the retriever under test
// (worker.Metrics; retriever.ClientOptions.Observe).
func (w *WorkerMetrics) RetrieverAttempt(a retriever.Attempt) {
	step := string(a.Step)
	if a.Step != retriever.StepEmbed {
		step = string(retriever.StepSearch)
	}
	w.retrieverSeconds.WithLabelValues(step, a.Class()).Observe(a.Elapsed.Seconds())
	if a.RateLimited {
		w.retrieverRateLimited.WithLabelValues(step).Inc()
	}
	if a.Retry {
		w.retrieverRetries.WithLabelValues(step).Inc()
	}
}

// LLMAttempt records one HTTP attempt at the LLM judge and the tokens its
// answer reported (worker.Metrics; llm.ClientOptions.Observe).
func (w *WorkerMetrics) LLMAttempt(a llm.Attempt) {
	w.llmSeconds.WithLabelValues(statusClass(a.Status)).Observe(a.Elapsed.Seconds())
	if a.RateLimited {
		w.llmRateLimited.Inc()
	}
	if a.Retry {
		w.llmRetries.Inc()
	}
	w.llmTokens.WithLabelValues("prompt").Add(float64(max(a.Usage.Prompt, 0)))
	w.llmTokens.WithLabelValues("completion").Add(float64(max(a.Usage.Completion, 0)))
}

// statusClass is "2xx" … "5xx", or "error" for no answer (0) or a status
// outside 100–599, as retriever.Attempt.Class.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "error"
	}
	return strconv.Itoa(status/100) + "xx"
}
