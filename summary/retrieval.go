package summary

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Retrieval describes a live retrieval: which retriever was asked, what it
// cost and how long it took to answer. Latencies are exact order
// statistics over every answered query (not estimates from a sketch), so
// the same latencies give the same figures whatever the worker count.
type Retrieval struct {
	// Retriever is the retriever file (its digest is of the file as
	// written, with ${VAR} references, never their values).
	Retriever Input `json:"retriever"`
	K         int   `json:"k"`
	// Queries were asked; Answered got an answer (possibly without hits);
	// Failed got none after every retry (they score 0 and are listed in
	// FailedQueries, which holds at most MaxListedFailures of them).
	Queries  int64 `json:"queries"`
	Answered int64 `json:"answered"`
	Failed   int64 `json:"failed_queries"`
	// Reused counts answers stored by an earlier attempt of the job (a
	// resumed coordinator, a redelivered task) and not asked again.
	Reused int64 `json:"reused_answers"`
	// Requests counts every HTTP request (embeddings requests included),
	// Retries those after a query's first attempt.
	Requests int64 `json:"requests"`
	Retries  int64 `json:"retries"`
	// Short counts answers with fewer than K hits, Empty those with none.
	Short int64 `json:"short_answers"`
	Empty int64 `json:"empty_answers"`
	// Latency is over every answered query: the time of the attempt whose
	// answer was used.
	Latency       Latency        `json:"latency_ms"`
	Histogram     []LatencyBin   `json:"latency_histogram"`
	Groups        []GroupLatency `json:"groups"`
	FailedQueries []FailedQuery  `json:"failed,omitempty"`
}

// MaxListedFailures bounds Retrieval.FailedQueries.
const MaxListedFailures = 100

// Latency summarises latencies in milliseconds. Percentiles are
// nearest-rank: P(p) is the smallest latency that at least p% of the
// queries did not exceed.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// LatencyBin counts the answers whose latency is below UpToMS (and at
// least the previous bin's bound).
type LatencyBin struct {
	UpToMS float64 `json:"up_to_ms"`
	Count  int64   `json:"count"`
}

// GroupLatency is the latency of one tag group's answered queries.
type GroupLatency struct {
	Tag      string  `json:"tag"`
	Value    string  `json:"value"`
	Answered int64   `json:"answered"`
	Failed   int64   `json:"failed_queries"`
	Latency  Latency `json:"latency_ms"`
}

// FailedQuery is a query that got no answer: the last error (the status
// and the first bytes of the answer, with secrets redacted).
type FailedQuery struct {
	QueryID string `json:"query_id"`
	Error   string `json:"error"`
}

// LatencyOf summarises latencies given in nanoseconds (sorted in place).
// It is the zero Latency for none.
func LatencyOf(ns []int64) Latency {
	if len(ns) == 0 {
		return Latency{}
	}
	slices.Sort(ns)
	sum := int64(0)
	for _, v := range ns {
		sum += v
	}
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(ns)))) - 1
		return ms(ns[max(i, 0)])
	}
	return Latency{P50: rank(50), P90: rank(90), P95: rank(95), P99: rank(99), Max: ms(ns[len(ns)-1]),
		Mean: float64(sum) / float64(len(ns)) / 1e6}
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// HistogramOf counts sorted latencies (nanoseconds) in bins whose bounds
// grow by a factor of about 1.5 from 0.1 ms, up to the largest, without
// the empty bins below the smallest; empty for none.
func HistogramOf(sorted []int64) []LatencyBin {
	if len(sorted) == 0 {
		return nil
	}
	var bins []LatencyBin
	i := 0
	for bound := 0.1; ; bound = math.Round(bound*150) / 100 {
		n := 0
		for i+n < len(sorted) && ms(sorted[i+n]) < bound {
			n++
		}
		bins = append(bins, LatencyBin{UpToMS: bound, Count: int64(n)})
		i += n
		if i == len(sorted) {
			break
		}
	}
	// Leading empty bins say nothing.
	for len(bins) > 1 && bins[0].Count == 0 {
		bins = bins[1:]
	}
	return bins
}

// LatencyMS returns a latency figure by gate name suffix ("p50", "p95",
// "p99", "p90", "max", "mean"); false when unknown.
func (l Latency) LatencyMS(which string) (float64, bool) {
	switch which {
	case "p50":
		return l.P50, true
	case "p90":
		return l.P90, true
	case "p95":
		return l.P95, true
	case "p99":
		return l.P99, true
	case "max":
		return l.Max, true
	case "mean":
		return l.Mean, true
	}
	return 0, false
}

// GroupLatency returns the latency of a tag group ("name=value"), or nil.
func (r *Retrieval) GroupLatency(tag string) *GroupLatency {
	if r == nil {
		return nil
	}
	for i := range r.Groups {
		if g := &r.Groups[i]; g.Tag+"="+g.Value == tag {
			return g
		}
	}
	return nil
}

// Line is the retrieval's costs in one sentence: "1500 queries answered,
// 2 failed; 1530 requests (30 retries)".
func (r *Retrieval) Line() string {
	out := Count(r.Answered, "query", "queries") + " answered"
	if r.Failed > 0 {
		out += fmt.Sprintf(", %d failed", r.Failed)
	}
	out += "; " + Count(r.Requests, "request", "requests")
	if r.Retries > 0 {
		out += " (" + Count(r.Retries, "retry", "retries") + ")"
	}
	if r.Short > 0 {
		out += fmt.Sprintf("; %d with fewer than %d hits", r.Short, r.K)
	}
	return out
}

// writeTable writes the retrieval block of the terminal table.
func (r *Retrieval) writeTable(b *strings.Builder) {
	fmt.Fprintf(b, "\nretrieval: %s, %s\n", r.Retriever.Path, r.Line())
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "latency (ms)	answered	failed	p50	p90	p95	p99	max	mean")
	row := func(name string, answered, failed int64, l Latency) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", name, answered, failed, l.P50, l.P90, l.P95, l.P99, l.Max, l.Mean)
	}
	row("all", r.Answered, r.Failed, r.Latency)
	for _, g := range r.Groups {
		row(g.Tag+"="+g.Value, g.Answered, g.Failed, g.Latency)
	}
	tw.Flush()
	for _, f := range r.FailedQueries {
		fmt.Fprintf(b, "  failed: %s: %s\n", f.QueryID, f.Error)
	}
	if n := r.Failed - int64(len(r.FailedQueries)); n > 0 {
		fmt.Fprintf(b, "  … and %d more failed\n", n)
	}
}
