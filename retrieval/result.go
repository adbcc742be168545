package retrieval

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/summary"
)

// Result is what a retrieve task yields.
type Result struct {
	// Score is the encoded metric.ShardResult of the task's scored
	// queries; nil when none was scored.
	Score []byte `json:"-"`
	// Stats counts the task's queries as a join of the same rankings
	// would (run queries, entries, queries missing from the run, …; the
	// gold set's counts are the coordinator's).
	Stats ingest.Stats `json:"stats"`
	// Digest sums the scored queries' ranking digests (ingest.Ranking).
	Digest   [2]uint64  `json:"digest"`
	Answered []Answered `json:"answered,omitempty"`
	Failed   []Failed   `json:"failed,omitempty"`
}

// Answered is an answered query's cost.
type Answered struct {
	Seq       int64 `json:"seq"` // the query's gold-set index
	LatencyNS int64 `json:"latency_ns"`
	Attempts  int   `json:"attempts"`
	Hits      int   `json:"hits"`
	Short     bool  `json:"short,omitempty"`
}

// Failed is a query that got no answer.
type Failed struct {
	Seq      int64  `json:"seq"`
	QueryID  string `json:"query_id"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error"`
}

// count records query q's outcome r and decides whether it is scored, as
// a join of a run file with the same rankings decides (an answered query
// is in the run, a failed one is missing from it): it returns the row's
// sequence number and ranking, or -1 when the query is left out.
func (res *Result) count(t *Task, q *Query, r *Record) (int64, []string) {
	relevant := 0
	for _, g := range q.Grades {
		if g >= t.RelLevel {
			relevant++
		}
	}
	noRelevant := func() bool { // reports whether the query is left out
		if relevant > 0 {
			return false
		}
		if t.SkipNoRelevant {
			res.Stats.NoRelevantSkipped++
			return true
		}
		res.Stats.NoRelevant++
		return false
	}
	if r.Failed() {
		res.Failed = append(res.Failed, Failed{Seq: q.Seq, QueryID: q.ID, Attempts: r.Attempts, Error: r.Error})
		res.Stats.MissingFromRun++
		if t.OnlyRunQueries || noRelevant() {
			return -1, nil
		}
		res.Stats.MissingScored++
		res.Stats.ScoredQueries++
		return t.FailedSeq + q.Seq, nil
	}
	res.Answered = append(res.Answered, Answered{Seq: q.Seq, LatencyNS: r.LatencyNS, Attempts: r.Attempts, Hits: len(r.IDs), Short: r.Short})
	res.Stats.RunQueries++
	if noRelevant() {
		return -1, nil
	}
	res.Stats.ScoredQueries++
	res.Stats.RunEntries += int64(len(r.IDs))
	return q.Seq, r.IDs
}

const resultMagic = "EGRT1"

// MarshalBinary encodes the result: magic, the length of Score, Score, and
// the rest as JSON (deterministic: fields in order, lists in task order).
func (res *Result) MarshalBinary() ([]byte, error) {
	rest, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	b := append([]byte(resultMagic), binary.AppendUvarint(nil, uint64(len(res.Score)))...)
	b = append(b, res.Score...)
	return append(b, rest...), nil
}

// DecodeResult decodes an encoded Result.
func DecodeResult(b []byte) (*Result, error) {
	if !strings.HasPrefix(string(b), resultMagic) {
		return nil, fmt.Errorf("%w: retrieve result: bad magic", ErrCorrupt)
	}
	b = b[len(resultMagic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("%w: retrieve result: truncated", ErrCorrupt)
	}
	res := &Result{}
	if err := json.Unmarshal(b[k+int(n):], res); err != nil {
		return nil, fmt.Errorf("%w: retrieve result: %v", ErrCorrupt, err)
	}
	if n > 0 {
		res.Score = b[k : k+int(n)]
	}
	return res, nil
}

// Totals merges the retrieval side of a job's results, in any order.
type Totals struct {
	stats    ingest.Stats
	digest   [2]uint64
	answered []Answered
	failed   []Failed
	steps    int // requests per query when none is retried: 2 with an embeddings request
}

// NewTotals returns empty totals; steps is 2 when each query first asks an
// embeddings service, else 1.
func NewTotals(steps int) *Totals { return &Totals{steps: max(steps, 1)} }

// Merge adds a task's result (its Score is the caller's to merge).
func (t *Totals) Merge(res *Result) {
	s := &t.stats
	st := res.Stats
	s.RunQueries += st.RunQueries
	s.RunEntries += st.RunEntries
	s.ScoredQueries += st.ScoredQueries
	s.MissingFromRun += st.MissingFromRun
	s.MissingScored += st.MissingScored
	s.NoRelevant += st.NoRelevant
	s.NoRelevantSkipped += st.NoRelevantSkipped
	s.DuplicateDocs += st.DuplicateDocs
	s.QueriesWithDupes += st.QueriesWithDupes
	s.DepthTruncated += st.DepthTruncated
	s.UnjudgedDropped += st.UnjudgedDropped
	s.BaselineMissing += st.BaselineMissing
	t.digest = ingest.AddDigest(t.digest, res.Digest)
	t.answered = append(t.answered, res.Answered...)
	t.failed = append(t.failed, res.Failed...)
}

// Failures returns the failed queries so far, in gold order.
func (t *Totals) Failures() []Failed {
	slices.SortFunc(t.failed, func(a, b Failed) int { return cmp.Compare(a.Seq, b.Seq) })
	return t.failed
}

// Queries is the number of queries with an outcome.
func (t *Totals) Queries() int64 { return int64(len(t.answered) + len(t.failed)) }

// Stats returns the join statistics of the retrieved run over gold (its
// gold-side counts filled in).
func (t *Totals) Stats(gold *ingest.Gold) ingest.Stats {
	s := t.stats
	s.GoldQueries = int64(gold.NumQueries())
	s.GoldJudgments = gold.Judgments
	s.GoldDuplicates = gold.IdenticalDuplicates
	return s
}

// RunDigest is the digest of the retrieved rankings, as a join of the same
// rankings computes it.
func (t *Totals) RunDigest() [2]uint64 { return t.digest }

// Summary builds the summary's retrieval section; groups returns the tag
// groups ("name=value") of the query with a given gold-set index.
func (t *Totals) Summary(retriever summary.Input, k int, groups func(seq int64) []string) *summary.Retrieval {
	r := &summary.Retrieval{Retriever: retriever, K: k, Groups: []summary.GroupLatency{},
		Queries: t.Queries(), Answered: int64(len(t.answered)), Failed: int64(len(t.failed))}
	type group struct {
		ns     []int64
		failed int64
	}
	byGroup := map[string]*group{}
	at := func(tag string) *group {
		g := byGroup[tag]
		if g == nil {
			g = &group{}
			byGroup[tag] = g
		}
		return g
	}
	ns := make([]int64, 0, len(t.answered))
	for _, a := range t.answered {
		ns = append(ns, a.LatencyNS)
		r.Requests += int64(a.Attempts)
		r.Retries += int64(max(a.Attempts-t.steps, 0))
		if a.Short {
			r.Short++
		}
		if a.Hits == 0 {
			r.Empty++
		}
		for _, tag := range groups(a.Seq) {
			g := at(tag)
			g.ns = append(g.ns, a.LatencyNS)
		}
	}
	for _, f := range t.Failures() {
		r.Requests += int64(f.Attempts)
		r.Retries += int64(max(f.Attempts-1, 0))
		if len(r.FailedQueries) < summary.MaxListedFailures {
			r.FailedQueries = append(r.FailedQueries, summary.FailedQuery{QueryID: f.QueryID, Error: f.Error})
		}
		for _, tag := range groups(f.Seq) {
			at(tag).failed++
		}
	}
	r.Latency = summary.LatencyOf(ns) // sorts ns
	r.Histogram = summary.HistogramOf(ns)
	for _, tag := range slices.Sorted(maps.Keys(byGroup)) {
		g := byGroup[tag]
		name, value, _ := strings.Cut(tag, "=")
		r.Groups = append(r.Groups, summary.GroupLatency{Tag: name, Value: value, Answered: int64(len(g.ns)),
			Failed: g.failed, Latency: summary.LatencyOf(g.ns)})
	}
	return r
}
