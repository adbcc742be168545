package telemetry

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/retriever"
)

type fakeConn struct {
	up      bool
	retries int64
}

func (c fakeConn) Connected() bool { return c.up }
func (c fakeConn) Retries() int64  { return c.retries }

// everything returns a registry with every group registered and every
// method called, so that every series a process can export is there.
func everything(t *testing.T) *Metrics {
	t.Helper()
	m := New(Build{Version: "v0.0.0-test"})
	w := m.Worker(4)
	for _, kind := range append([]string{"bogus kind from a newer coordinator"}, Kinds...) {
		for _, outcome := range []string{outcomeDone, outcomeDuplicate, outcomeFailed, outcomeFinal, outcomeMismatch, outcomeReleased} {
			w.TaskStarted(kind, 2)
			w.TaskFinished(kind, outcome, time.Second, 3)
		}
	}
	for _, a := range []retriever.Attempt{
		{Step: retriever.StepSearch, Status: 200, Elapsed: 20 * time.Millisecond},
		{Step: retriever.StepEmbed, Status: 429, Elapsed: time.Millisecond, RateLimited: true, Retry: true},
		{Step: retriever.StepSearch, Status: 0, Err: errors.New("timeout"), Elapsed: time.Second, Retry: true},
		{Step: "from-the-future", Status: 503, Elapsed: time.Second},
	} {
		w.RetrieverAttempt(a)
	}
	w.LLMAttempt(llm.Attempt{Status: 200, Elapsed: 3 * time.Second, Usage: llm.Usage{Prompt: 1200, Completion: 40, Total: 1240}})
	w.LLMAttempt(llm.Attempt{Status: 429, Elapsed: time.Second, RateLimited: true, Retry: true})
	w.LLMAttempt(llm.Attempt{Elapsed: time.Minute, Err: errors.New("timeout"), Retry: true})
	c := m.Coordinator()
	c.InputRead(1 << 20)
	c.TaskPublished(4096)
	c.Progress(10, 4, 200, 2)
	m.Connection(fakeConn{up: true, retries: 2})
	m.Queue(func(context.Context) (QueueStats, error) {
		return QueueStats{Pending: 3, AckPending: 2, Redelivered: 1, Waiting: 5, Streams: map[string]StreamStats{
			"EVALGATE_TASKS": {5, 5 << 10}, "KV_evalgate-jobs": {2, 900}, "OBJ_evalgate-shards": {8, 8 << 20}}}, nil
	})
	return m
}

// allowedLabels are the only label names evalgate's metrics may have, each
// with the pattern of its values: fixed, small sets, so that no metric
// grows with jobs, queries, tasks or workers.
var allowedLabels = map[string]*regexp.Regexp{
	"kind":      regexp.MustCompile(`^(score|retrieve|judge|other)$`),
	"final":     regexp.MustCompile(`^(true|false)$`),
	"step":      regexp.MustCompile(`^(embed|search)$`),
	"class":     regexp.MustCompile(`^([1-5]xx|error)$`),
	"type":      regexp.MustCompile(`^(prompt|completion)$`),
	"stream":    regexp.MustCompile(`^(EVALGATE_[A-Z]+|KV_evalgate-[a-z]+|OBJ_evalgate-[a-z]+)$`),
	"version":   regexp.MustCompile(`.`), // evalgate_build_info: one series
	"revision":  regexp.MustCompile(`.`),
	"goversion": regexp.MustCompile(`^go`),
}

// unitWords name a quantity that must be given in its base unit, last in
// the name (before _total).
var badUnits = regexp.MustCompile(`_(ms|milliseconds|microseconds|nanoseconds|minutes|hours|days|kb|mb|gb|kilobytes|megabytes|percent)(_|$)`)

// TestRegistryLint checks every metric evalgate exports against the
// Prometheus naming conventions (promlint) and the project's rules: the
// evalgate_ prefix, _total on counters and only there, durations in
// _seconds, sizes in _bytes, help text, and only low-cardinality labels.
func TestRegistryLint(t *testing.T) {
	m := everything(t)
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var own []*dto.MetricFamily
	for _, f := range families {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue // the standard runtime and process collectors
		}
		own = append(own, f)
		if !strings.HasPrefix(name, Namespace+"_") {
			t.Errorf("%s: not in the %s_ namespace", name, Namespace)
		}
		typ := f.GetType()
		if counter := typ == dto.MetricType_COUNTER; counter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: a %s; counters, and only counters, end in _total", name, typ)
		}
		base := strings.TrimSuffix(name, "_total")
		if typ == dto.MetricType_HISTOGRAM && !strings.HasSuffix(base, "_seconds") {
			t.Errorf("%s: evalgate's histograms are durations, in seconds", name)
		}
		if strings.Contains(base, "duration") || strings.Contains(base, "latency") || strings.Contains(base, "_time") {
			if !strings.HasSuffix(base, "_seconds") {
				t.Errorf("%s: a duration must be in seconds, named _seconds", name)
			}
		}
		if strings.Contains(base, "bytes") && !strings.HasSuffix(base, "_bytes") {
			t.Errorf("%s: a size must be in bytes, named _bytes (before _total)", name)
		}
		if badUnits.MatchString(name) {
			t.Errorf("%s: not a base unit (seconds, bytes)", name)
		}
		if help := f.GetHelp(); len(help) < 10 || !strings.HasSuffix(help, ".") {
			t.Errorf("%s: help %q: say what it counts, as a sentence", name, help)
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				pattern, ok := allowedLabels[l.GetName()]
				if !ok {
					t.Errorf("%s: label %q is not an allowed low-cardinality label", name, l.GetName())
					continue
				}
				if !pattern.MatchString(l.GetValue()) {
					t.Errorf("%s: label %s=%q outside its fixed set %s", name, l.GetName(), l.GetValue(), pattern)
				}
			}
		}
	}
	problems, err := promlint.NewWithMetricFamilies(own).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	// Every metric registered was exported above, so none escaped the
	// lint for want of an observation.
	descs := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range m.own {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		descs[d.String()] = true
	}
	if len(own) != len(descs) || len(own) < 30 {
		t.Errorf("%d metric families exported, %d described: a metric was not exercised by this test", len(own), len(descs))
	}
}

// TestWorkerCounts: each outcome moves the counters it documents, and the
// in-flight gauge comes back to 0.
func TestWorkerCounts(t *testing.T) {
	m := New(Build{})
	w := m.Worker(2)
	for _, o := range []string{outcomeDone, outcomeDuplicate, outcomeFailed, outcomeFinal, outcomeMismatch, outcomeReleased} {
		w.TaskStarted("score", 1)
		w.TaskFinished("score", o, time.Second, 5)
	}
	w.TaskStarted("retrieve", 3)
	if got := testutil.ToFloat64(w.inFlight.WithLabelValues("retrieve")); got != 1 {
		t.Errorf("retrieve tasks in flight %v, want 1", got)
	}
	w.TaskFinished("retrieve", outcomeDone, time.Second, 7)
	for name, c := range map[string]struct {
		got  prometheus.Collector
		want float64
	}{
		"taken score":           {w.taken.WithLabelValues("score"), 6},
		"redelivered score":     {w.redelivered.WithLabelValues("score"), 0},
		"redelivered retrieve":  {w.redelivered.WithLabelValues("retrieve"), 1},
		"done score":            {w.done.WithLabelValues("score"), 2},
		"duplicate score":       {w.duplicates.WithLabelValues("score"), 1},
		"failed score":          {w.failed.WithLabelValues("score", "false"), 1},
		"failed score, final":   {w.failed.WithLabelValues("score", "true"), 2},
		"determinism failures":  {w.mismatches.WithLabelValues("score"), 1},
		"released score":        {w.released.WithLabelValues("score"), 1},
		"queries score":         {w.queries.WithLabelValues("score"), 10},
		"queries retrieve":      {w.queries.WithLabelValues("retrieve"), 7},
		"in flight score":       {w.inFlight.WithLabelValues("score"), 0},
		"in flight retrieve":    {w.inFlight.WithLabelValues("retrieve"), 0},
		"slots":                 {w.slots, 2},
		"judge, never seen yet": {w.taken.WithLabelValues("judge"), 0},
	} {
		if got := testutil.ToFloat64(c.got); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(w.duration); n != 2 {
		t.Errorf("task duration: %d series, want 2 (score, retrieve)", n)
	}
}

// TestServiceCounts: retriever and LLM attempts land in their histograms
// by status class, with 429s and retries counted apart.
func TestServiceCounts(t *testing.T) {
	m := New(Build{})
	w := m.Worker(1)
	w.RetrieverAttempt(retriever.Attempt{Step: retriever.StepSearch, Status: 429, RateLimited: true, Retry: true, Elapsed: time.Millisecond})
	w.RetrieverAttempt(retriever.Attempt{Step: retriever.StepSearch, Status: 200, Elapsed: 30 * time.Millisecond})
	w.RetrieverAttempt(retriever.Attempt{Step: retriever.StepEmbed, Status: 0, Retry: true, Elapsed: time.Second})
	w.LLMAttempt(llm.Attempt{Status: 503, Elapsed: time.Second, Retry: true})
	w.LLMAttempt(llm.Attempt{Status: 200, Elapsed: time.Second, Usage: llm.Usage{Prompt: 100, Completion: 7}})
	w.LLMAttempt(llm.Attempt{Status: 200, Elapsed: time.Second, Usage: llm.Usage{Prompt: 50, Completion: -1}})
	for name, c := range map[string]struct {
		got  prometheus.Collector
		want float64
	}{
		"retriever 429s":    {w.retrieverRateLimited.WithLabelValues("search"), 1},
		"retriever retries": {w.retrieverRetries.WithLabelValues("search"), 1},
		"embed retries":     {w.retrieverRetries.WithLabelValues("embed"), 1},
		"llm retries":       {w.llmRetries, 1},
		"llm 429s":          {w.llmRateLimited, 0},
		"prompt tokens":     {w.llmTokens.WithLabelValues("prompt"), 150},
		"completion tokens": {w.llmTokens.WithLabelValues("completion"), 7},
	} {
		if got := testutil.ToFloat64(c.got); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(w.retrieverSeconds); n != 3 {
		t.Errorf("retriever histogram: %d series, want 3 (search 2xx, search 4xx, embed error)", n)
	}
	if n := testutil.CollectAndCount(w.llmSeconds); n != 2 {
		t.Errorf("llm histogram: %d series, want 2 (5xx, 2xx)", n)
	}
}

// TestQueueDown: a queue that cannot be read reports evalgate_queue_up 0
// and no stale gauges.
func TestQueueDown(t *testing.T) {
	m := New(Build{})
	m.Queue(func(context.Context) (QueueStats, error) { return QueueStats{}, errors.New("no responders") })
	const want = `
# HELP evalgate_queue_up 1 when the last scrape read the queue's state from JetStream, else 0.
# TYPE evalgate_queue_up gauge
evalgate_queue_up 0
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "evalgate_queue_up", "evalgate_queue_tasks_pending"); err != nil {
		t.Error(err)
	}
}

// TestConnections: evalgate_nats_connected is 1 only while every
// connection is up; retries add up.
func TestConnections(t *testing.T) {
	m := New(Build{})
	m.Connection(fakeConn{up: true, retries: 3})
	m.Connection(fakeConn{up: false, retries: 4})
	const want = `
# HELP evalgate_nats_connected 1 while the process's connections to NATS are up, 0 while one is reconnecting.
# TYPE evalgate_nats_connected gauge
evalgate_nats_connected 0
# HELP evalgate_nats_retries_total JetStream calls retried after a transient failure (a server restarting, a stream electing a leader, a lost connection).
# TYPE evalgate_nats_retries_total counter
evalgate_nats_retries_total 7
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "evalgate_nats_connected", "evalgate_nats_retries_total"); err != nil {
		t.Error(err)
	}
}
