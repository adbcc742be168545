package telemetry

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/evalgate/evalgate/shard"
)

// Namespace prefixes every metric of evalgate's own.
const Namespace = "evalgate"

// Build describes the running binary, for evalgate_build_info.
type Build struct {
	Version string // e.g. "v1.4.0", or "dev"
	// Revision is the VCS revision; empty: read from the binary's build
	// information, "unknown" when it has none.
	Revision string
}

// Metrics is a process's registry. Its methods are safe for concurrent
// use.
type Metrics struct {
	reg *prometheus.Registry

	mu          sync.Mutex
	own         []prometheus.Collector // guarded by mu; evalgate's own, registered
	worker      *WorkerMetrics         // guarded by mu; nil until Worker
	coordinator *CoordinatorMetrics    // guarded by mu; nil until Coordinator
	conns       *connections           // guarded by mu; nil until Connection
	queue       bool                   // guarded by mu; Queue was called
}

// New returns a registry holding evalgate_build_info and the Go runtime
// and process collectors.
func New(b Build) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					b.Revision = s.Value
				}
			}
		}
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help:        "Always 1; the labels say which evalgate binary runs.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": runtime.Version()},
	})
	info.Set(1)
	m := &Metrics{reg: reg}
	m.register(info)
	return m
}

// register registers evalgate's own collectors. Called with mu held, or
// before m is shared.
func (m *Metrics) register(cs ...prometheus.Collector) {
	m.reg.MustRegister(cs...)
	m.own = append(m.own, cs...)
}

// Gatherer is the registry, for serving and tests.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Kinds of task: the values of the kind label. A kind outside this list
// is counted as "other", so that a malformed task cannot add series.
var Kinds = []string{shard.KindScore, shard.KindRetrieve, shard.KindJudge}

const otherKind = "other"

func kindLabel(kind string) string {
	for _, k := range Kinds {
		if k == kind {
			return k
		}
	}
	return otherKind
}

// Histogram buckets, in seconds.
var (
	// taskBuckets: 50 ms to about 7 minutes (a task is about 1 MiB of
	// rows, or a few dozen queries sent to a service).
	taskBuckets = prometheus.ExponentialBuckets(0.05, 2, 14)
	// requestBuckets: 5 ms to about 40 s (a search request).
	requestBuckets = prometheus.ExponentialBuckets(0.005, 2, 14)
	// llmBuckets: 100 ms to about 7 minutes (a model's answer).
	llmBuckets = prometheus.ExponentialBuckets(0.1, 2, 13)
)
