package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v16/arrow/array"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/shard"
)

// RankBy selects what orders a query's documents.
type RankBy uint8

const (
	// RankByScore sorts by score, highest first; equal scores by doc id,
	// descending byte order, as trec_eval does. Runs without scores keep
	// their list order.
	RankByScore RankBy = iota
	// RankByRank sorts by the rank column (then as RankByScore).
	RankByRank
)

// ParseRankBy parses a --rank-by value.
func ParseRankBy(s string) (RankBy, error) {
	switch strings.ToLower(s) {
	case "", "score":
		return RankByScore, nil
	case "rank":
		return RankByRank, nil
	}
	return 0, fmt.Errorf("unknown --rank-by %q (want score or rank)", s)
}

func (r RankBy) String() string {
	if r == RankByRank {
		return "rank"
	}
	return "score"
}

// Config controls how a run is joined with its gold set.
type Config struct {
	// RelLevel is the smallest relevant grade (trec_eval -l), used here
	// only to find queries without relevant documents.
	RelLevel int32
	RankBy   RankBy
	// Depth keeps only the best Depth documents of each query (trec_eval
	// -M); 0 keeps all.
	Depth int
	// Strict refuses a run with a doc id twice in one query, as trec_eval
	// does; otherwise the best-ranked occurrence is kept and the rest are
	// counted.
	Strict bool
	// SkipNoRelevant leaves out gold queries that have no relevant document
	// instead of scoring them 0.
	SkipNoRelevant bool
	// OnlyRunQueries averages over the queries present in both files
	// (trec_eval without -c) instead of every gold query.
	OnlyRunQueries bool
	// JudgedOnly counts, in Stats.UnjudgedDropped, the unjudged documents
	// of the rankings, which scoring with judged documents only
	// (metric.Config.JudgedOnly, trec_eval -J) drops. The rows keep them:
	// the kernel drops them.
	JudgedOnly bool
	// Parallelism is the number of goroutines building units (default
	// GOMAXPROCS).
	Parallelism int
	// UnitQueries is the number of queries per unit (default 2048).
	UnitQueries int
	// Route, if set, sends each query's row to the rows of route
	// Route(id) in Unit.Routed, routes being in [0,Routes), so that a
	// caller partitioning the queries (the distributed coordinator) gets
	// them split while the units are built in parallel. A unit's memory
	// grows with the routes its queries use, not with Routes.
	Route  func(queryID string) int
	Routes int
	// Baseline, if set, adds each query's baseline ranking to its row
	// (schema.PairedShardBatch): the rows compare the run with it.
	Baseline *Baseline
	// SpillDir is where JoinSpilled keeps its temporary files (default
	// os.TempDir()).
	SpillDir string
	// Ranked, if set, receives every scored query's ranking as doc ids,
	// best first, after duplicates and the depth cut (the documents an
	// LLM judge looks at). It is called from the goroutines that build
	// units, concurrently; ranked is valid during the call only.
	Ranked func(gold int32, ranked []string)
}

func (c Config) withDefaults() Config {
	if c.Parallelism <= 0 {
		c.Parallelism = runtime.GOMAXPROCS(0)
	}
	if c.UnitQueries <= 0 {
		c.UnitQueries = 2048
	}
	return c
}

// ErrRunNotGrouped is returned by Join when a query's lines are not
// contiguous in the run; JoinSpilled reads such runs.
var ErrRunNotGrouped = errors.New("ingest: run is not grouped by query")

// Stats counts what the join saw.
type Stats struct {
	GoldQueries       int64 // queries in the gold set
	GoldJudgments     int64 // judgments in the gold set
	GoldDuplicates    int64 // identical repeated judgments dropped
	RunQueries        int64 // distinct queries in the run
	RunEntries        int64 // retrieved entries read from the run
	ScoredQueries     int64 // queries scored (NumQ)
	RunOnlyQueries    int64 // queries in the run but not in the gold set: not scored
	MissingFromRun    int64 // gold queries absent from the run
	MissingScored     int64 // ... of which scored 0 (the default); the rest were left out
	NoRelevant        int64 // scored queries without a relevant document: they score 0
	NoRelevantSkipped int64 // queries without a relevant document left out (SkipNoRelevant)
	DuplicateDocs     int64 // repeated doc ids dropped from rankings
	QueriesWithDupes  int64 // queries that had at least one
	DepthTruncated    int64 // entries beyond Depth
	// UnjudgedDropped counts the ranked documents (after the depth cut)
	// without a judgment, with Config.JudgedOnly: those scoring drops.
	UnjudgedDropped int64
	// BaselineMissing counts the scored queries that have no ranking in
	// Config.Baseline (absent from the baseline run, or empty there): the
	// baseline scores 0 on them.
	BaselineMissing int64
	// RunOnlyExample is the first query id found only in the run, for
	// messages.
	RunOnlyExample string
}

func (s *Stats) add(o *Stats) {
	s.RunEntries += o.RunEntries
	s.DuplicateDocs += o.DuplicateDocs
	s.QueriesWithDupes += o.QueriesWithDupes
	s.DepthTruncated += o.DepthTruncated
	s.UnjudgedDropped += o.UnjudgedDropped
	s.BaselineMissing += o.BaselineMissing
}

// Unit is a run of consecutive queries, the granule of parallel work.
type Unit struct {
	// Index numbers units from 0 in input order.
	Index int64
	// Rows holds the unit's queries as shard-batch rows, in input order
	// (when Config.Route is nil).
	Rows shard.Rows
	// Routed holds the unit's queries split by Config.Route (when it is
	// set): one entry per route that got a query, in order of the route's
	// first query, each with its rows in input order. Gold and Scores then
	// follow Rows' order, which is empty: they are not filled.
	Routed []RoutedRows
	// Gold holds each row's index in the gold set.
	Gold []int32
	// Scores is for the caller: Process may store per-row values here for
	// Commit to read.
	Scores []float64

	groups  []group
	stats   Stats
	errs    schema.ErrorList
	digest  [2]uint64
	batches []*schema.Batch // retained by the unit; released after building
}

// RoutedRows are a unit's rows of one route.
type RoutedRows struct {
	Route int
	Rows  shard.Rows
}

// segment is part of a query's run rows: rows [lo,hi) of a long batch, or
// row lo of a list batch.
type segment struct {
	b      *schema.Batch
	lo, hi int
}

type group struct {
	seq  int64
	gold int32
	segs []segment
}

// Handlers receive the units of a join.
type Handlers struct {
	// Process is called for every unit, concurrently from Parallelism
	// goroutines (worker is in [0,Parallelism)), after the unit's rows are
	// built. It may be nil.
	Process func(worker int, u *Unit) error
	// Commit is called for every unit, one at a time, in input order,
	// after Process. It may be nil. The unit must not be kept afterwards.
	Commit func(u *Unit) error
}

// Joiner joins runs with one gold set.
type Joiner struct {
	gold *Gold
	cfg  Config
}

// NewJoiner returns a Joiner.
func NewJoiner(g *Gold, cfg Config) *Joiner { return &Joiner{gold: g, cfg: cfg.withDefaults()} }

// Result is what a join returns besides the units.
type Result struct {
	Stats Stats
	// RunDigest identifies the scored rankings: a sum of xxh3-128 hashes of
	// each query's id and ranked doc ids.
	RunDigest [2]uint64
}

// Join streams the run and hands units to h. It returns ErrRunNotGrouped
// (before committing the unit that would hold the late lines of a query)
// when the run's queries are interleaved; call JoinSpilled then, with a
// reader opened again.
func (j *Joiner) Join(ctx context.Context, run schema.Reader, h Handlers) (*Result, error) {
	return j.join(ctx, run, h, false)
}

// JoinSpilled reads a run whose queries may be interleaved, in bounded
// memory, through temporary files in Config.SpillDir (about as large as the
// run), removed when it returns. It gives the units the same rows, stats
// and digest as Join gives for the same run grouped by query, with the
// run's queries in gold-set order (Join keeps the run's order).
func (j *Joiner) JoinSpilled(ctx context.Context, run schema.Reader, h Handlers) (*Result, error) {
	return j.join(ctx, run, h, true)
}

type unitJob struct {
	u    *Unit
	done chan error
}

func (j *Joiner) join(ctx context.Context, run schema.Reader, h Handlers, spilled bool) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan unitJob, j.cfg.Parallelism)
	order := make(chan unitJob, 2*j.cfg.Parallelism)

	var wg sync.WaitGroup
	for w := 0; w < j.cfg.Parallelism; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := newBuilder(j)
			for job := range work {
				err := b.build(job.u)
				if err == nil && h.Process != nil {
					err = h.Process(w, job.u)
				}
				job.done <- err // buffered
			}
		}()
	}

	var res Result
	var groupErr error
	var gwg sync.WaitGroup
	gwg.Add(1)
	go func() {
		defer gwg.Done()
		defer close(order)
		defer close(work)
		g := grouper{j: j, work: work, order: order, ctx: ctx, stats: &res.Stats}
		if spilled {
			groupErr = g.runSpilled(run)
		} else {
			groupErr = g.run(run)
		}
	}()

	var errs schema.ErrorList
	var firstErr error
	for job := range order {
		err := <-job.done
		if firstErr == nil && errs.Len() == 0 {
			if err != nil {
				firstErr = err
				cancel()
			} else if job.u.errs.Len() > 0 {
				errs.Merge(&job.u.errs)
			} else {
				res.Stats.add(&job.u.stats)
				res.RunDigest = add128(res.RunDigest, job.u.digest)
				if h.Commit != nil {
					if err := h.Commit(job.u); err != nil {
						firstErr = err
						cancel()
					}
				}
			}
		} else if job.u.errs.Len() > 0 {
			errs.Merge(&job.u.errs)
		}
		job.u.release()
	}
	gwg.Wait()
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if groupErr != nil {
		var el *schema.ErrorList
		if errors.As(groupErr, &el) {
			errs.Merge(el)
		} else if ie := (*schema.InputError)(nil); errors.As(groupErr, &ie) {
			errs.Add(ie)
		} else {
			return nil, groupErr
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	res.Stats.GoldQueries = int64(j.gold.NumQueries())
	res.Stats.GoldJudgments = j.gold.Judgments
	res.Stats.GoldDuplicates = j.gold.IdenticalDuplicates
	return &res, nil
}

func add128(a, b [2]uint64) [2]uint64 {
	lo, c := addCarry(a[0], b[0])
	return [2]uint64{lo, a[1] + b[1] + c}
}

func (u *Unit) release() {
	for _, b := range u.batches {
		b.Record.Release()
	}
	u.batches = nil
	u.groups = nil
}

// grouper cuts the run into query groups and packs them into units.
type grouper struct {
	j     *Joiner
	ctx   context.Context
	work  chan<- unitJob
	order chan<- unitJob
	stats *Stats

	unit     *Unit
	nextUnit int64
	seq      int64
	seenGold []bool
	runOnly  map[string]struct{}
	lastGold int32 // the gold query last found (-1: none)
}

func (g *grouper) init() {
	g.lastGold = -1
	g.seenGold = make([]bool, g.j.gold.NumQueries())
	g.runOnly = map[string]struct{}{}
}

// dispatch sends the current unit to the workers.
func (g *grouper) dispatch() error {
	if g.unit == nil || len(g.unit.groups) == 0 {
		return nil
	}
	job := unitJob{u: g.unit, done: make(chan error, 1)}
	g.unit = nil
	select {
	case g.order <- job:
	case <-g.ctx.Done():
		job.u.release()
		return g.ctx.Err()
	}
	select {
	case g.work <- job:
		return nil
	case <-g.ctx.Done():
		job.done <- g.ctx.Err()
		return g.ctx.Err()
	}
}

// add appends a finished group to the current unit.
func (g *grouper) add(gr group) error {
	if g.unit == nil {
		g.unit = &Unit{Index: g.nextUnit}
		g.nextUnit++
	}
	// Groups come in the order of the batches they use: a batch not the
	// unit's last is new to it.
	for _, s := range gr.segs {
		if bs := g.unit.batches; len(bs) == 0 || bs[len(bs)-1] != s.b {
			s.b.Record.Retain()
			g.unit.batches = append(g.unit.batches, s.b)
		}
	}
	g.unit.groups = append(g.unit.groups, gr)
	if len(g.unit.groups) >= g.j.cfg.UnitQueries {
		return g.dispatch()
	}
	return nil
}

// finish decides what happens to one query's run rows.
func (g *grouper) finish(qid string, segs []segment, listForm bool) error {
	gi := g.j.gold.LookupNext(g.lastGold, qid)
	if gi >= 0 {
		g.lastGold = gi
	}
	if gi < 0 {
		if _, ok := g.runOnly[qid]; !ok {
			g.runOnly[strings.Clone(qid)] = struct{}{}
			g.stats.RunQueries++
			g.stats.RunOnlyQueries++
			if g.stats.RunOnlyExample == "" {
				g.stats.RunOnlyExample = strings.Clone(qid)
			}
		}
		return nil
	}
	if g.seenGold[gi] {
		if listForm {
			s := segs[0]
			return s.b.At(s.lo, schema.FieldQueryID, fmt.Errorf("%w: query %q appears on more than one row", schema.ErrDuplicate, qid))
		}
		return ErrRunNotGrouped
	}
	g.seenGold[gi] = true
	g.stats.RunQueries++
	if g.j.gold.NumRelevant(gi, g.j.cfg.RelLevel) == 0 {
		if g.j.cfg.SkipNoRelevant {
			g.stats.NoRelevantSkipped++
			return nil
		}
		g.stats.NoRelevant++
	}
	g.stats.ScoredQueries++
	gr := group{seq: g.seq, gold: gi, segs: segs}
	g.seq++
	return g.add(gr)
}

// finishGold emits the gold queries absent from the run, in gold order.
func (g *grouper) finishGold() error {
	for gi := int32(0); gi < int32(g.j.gold.NumQueries()); gi++ {
		if g.seenGold[gi] {
			continue
		}
		g.stats.MissingFromRun++
		if g.j.cfg.OnlyRunQueries {
			continue
		}
		if g.j.gold.NumRelevant(gi, g.j.cfg.RelLevel) == 0 {
			if g.j.cfg.SkipNoRelevant {
				g.stats.NoRelevantSkipped++
				continue
			}
			g.stats.NoRelevant++
		}
		g.stats.MissingScored++
		g.stats.ScoredQueries++
		if err := g.add(group{seq: g.seq, gold: gi}); err != nil {
			return err
		}
		g.seq++
	}
	return g.dispatch()
}

func checkRunForm(b *schema.Batch) error {
	if !b.Form.IsRun() {
		return fmt.Errorf("read run %s: %w: got %s data", b.File, schema.ErrWrongFileRole, b.Form)
	}
	return nil
}

// run groups a run whose queries are contiguous.
func (g *grouper) run(r schema.Reader) error {
	g.init()
	var curID string
	var cur []segment
	var curRefs []*schema.Batch // batches retained for the open group
	releaseRefs := func() {
		for _, b := range curRefs {
			b.Record.Release()
		}
		curRefs = curRefs[:0]
	}
	defer releaseRefs()
	closeGroup := func() error {
		if len(cur) == 0 {
			return nil
		}
		err := g.finish(curID, cur, false) // add retains what the unit needs
		cur = nil
		releaseRefs()
		return err
	}
	for {
		b, err := r.Next(g.ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := checkRunForm(b); err != nil {
			b.Release()
			return err
		}
		if b.Form == schema.FormRunList {
			qids := b.Record.Column(0).(*array.String)
			for i := 0; i < qids.Len(); i++ {
				if err := g.finish(qids.Value(i), []segment{{b: b, lo: i, hi: i + 1}}, true); err != nil {
					b.Release()
					return err
				}
			}
			b.Release()
			continue
		}
		qids, err := schema.RunQueryIDs(b.Record)
		if err != nil {
			b.Release()
			return fmt.Errorf("read run %s: %w", b.File, err)
		}
		n := qids.Len()
		if len(cur) == 0 && n > 0 {
			curID = qids.Value(0) // no query open at the end of the last batch
		}
		// The open query's rows in this batch start at start; each round
		// finds where they end and opens the query found there.
		start := 0
		for {
			end := qids.RunEnd(start, curID)
			if end == n {
				break
			}
			if end > start {
				cur = append(cur, segment{b: b, lo: start, hi: end})
			}
			if err := closeGroup(); err != nil {
				b.Release()
				return err
			}
			curID, start = qids.Value(end), end
		}
		if n > start {
			cur = append(cur, segment{b: b, lo: start, hi: n})
			curID = strings.Clone(curID)
			b.Record.Retain()
			curRefs = append(curRefs, b)
		}
		b.Release()
	}
	if err := closeGroup(); err != nil {
		return err
	}
	return g.finishGold()
}

// builder turns a unit's groups into shard-batch rows. One per worker.
type builder struct {
	j       *Joiner
	entries []entry
	judged  []string // the current query's judged doc ids
	docs    []string // its ranked doc ids
	ranked  []string // ... after duplicates and the depth cut, for Config.Ranked
	base    []uint32 // its baseline ranking, with Config.Baseline
	ranker  Ranker
	// routeIdx maps a route to 1 + its index in the unit's Routed (0:
	// none yet); reset after each unit.
	routeIdx []int32
}

type entry struct {
	doc   string
	score float64
	rank  int32
	pos   int64 // source line, or -row
}

func newBuilder(j *Joiner) *builder { return &builder{j: j} }

// compareByScore orders by score descending, then doc id descending (byte
// order), trec_eval's comp_sim_docno. Entries equal in both (a repeated
// doc id) stay in source order: by position, then by rank, which numbers
// a list row's entries. The order is total, so an unstable sort gives the
// same result as a stable one.
func compareByScore(a, b entry) int {
	if a.score != b.score {
		if a.score > b.score {
			return -1
		}
		return 1
	}
	if c := strings.Compare(b.doc, a.doc); c != 0 {
		return c
	}
	return compareSource(a, b)
}

// compareByRank orders by the rank column, then as compareByScore.
func compareByRank(a, b entry) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	return compareByScore(a, b)
}

// compareSource orders entries as the run lists them.
func compareSource(a, b entry) int {
	if c := cmp.Compare(sourceOrder(a.pos), sourceOrder(b.pos)); c != 0 {
		return c
	}
	return cmp.Compare(a.rank, b.rank)
}

// sourceOrder is a position's place in its file: a line (pos > 0), or a
// row r of an Arrow or Parquet file (pos = -r).
func sourceOrder(pos int64) int64 {
	if pos < 0 {
		return -pos
	}
	return pos
}

func (b *builder) build(u *Unit) error {
	gold := b.j.gold
	cfg := &b.j.cfg
	u.Gold = make([]int32, 0, len(u.groups))
	entries, grades := 0, 0
	for _, gr := range u.groups {
		for _, s := range gr.segs {
			entries += s.hi - s.lo
		}
		grades += len(gold.Grades(gr.gold))
	}
	if cfg.Depth > 0 {
		entries = min(entries, cfg.Depth*len(u.groups))
	}
	// Routed rows get room for an even share and a half when their route
	// gets its first query; rows beyond grow the slices.
	var routeQ, routeE, routeG int
	if cfg.Route != nil {
		if len(b.routeIdx) != cfg.Routes {
			b.routeIdx = make([]int32, cfg.Routes)
		}
		routes := min(cfg.Routes, max(len(u.groups), 1))
		u.Routed = make([]RoutedRows, 0, routes)
		routeQ = len(u.groups)*3/(2*routes) + 2
		routeE = entries*3/(2*routes) + 64
		routeG = grades*3/(2*routes) + 16
		defer func() {
			for _, rr := range u.Routed {
				b.routeIdx[rr.Route] = 0
			}
		}()
	} else {
		u.Rows.Grow(len(u.groups), entries, grades)
	}
	for _, gr := range u.groups {
		if !b.collectRanked(gr) {
			if err := b.collect(u, gr); err != nil {
				return err
			}
			b.docs = b.docs[:0]
			for _, e := range b.entries {
				b.docs = append(b.docs, e.doc)
			}
		}
		grades := gold.Grades(gr.gold)
		qid := gold.QueryID(gr.gold)
		b.judged = b.judged[:0]
		for i := range grades {
			b.judged = append(b.judged, gold.Doc(gr.gold, i))
		}
		rk := b.ranker.Rank(qid, b.judged, b.docs, cfg.Depth)
		if n := int64(len(rk.Duplicates)); n > 0 {
			u.stats.DuplicateDocs += n
			u.stats.QueriesWithDupes++
			if cfg.Strict {
				b.refuseDuplicates(u, gr, qid, rk.Duplicates)
			}
		}
		u.stats.DepthTruncated += rk.Truncated
		if cfg.Ranked != nil {
			b.ranked = b.ranked[:0]
			for _, i := range rk.Kept {
				b.ranked = append(b.ranked, b.docs[i])
			}
			cfg.Ranked(gr.gold, b.ranked)
		}
		if cfg.JudgedOnly {
			u.stats.UnjudgedDropped += Unjudged(grades, rk.IDs)
		}
		u.stats.RunEntries += int64(len(b.docs))
		rows := &u.Rows
		if cfg.Route != nil {
			route := cfg.Route(qid)
			i := b.routeIdx[route] - 1
			if i < 0 {
				i = int32(len(u.Routed))
				b.routeIdx[route] = i + 1
				u.Routed = append(u.Routed, RoutedRows{Route: route})
				u.Routed[i].Rows.Grow(routeQ, routeE, routeG)
			}
			rows = &u.Routed[i].Rows
		} else {
			u.Gold = append(u.Gold, gr.gold)
		}
		if cfg.Baseline != nil {
			b.base = cfg.Baseline.Ranking(b.base[:0], gr.gold)
			if len(b.base) == 0 {
				u.stats.BaselineMissing++
			}
			rows.AppendPair(gr.seq, qid, gold.Groups(gr.gold), grades, rk.IDs, b.base)
		} else {
			rows.Append(gr.seq, qid, gold.Groups(gr.gold), grades, rk.IDs)
		}
		u.digest = add128(u.digest, rk.Digest)
	}
	return nil
}

// refuseDuplicates reports every repeated doc id of a query (--strict),
// naming both places in the run.
func (b *builder) refuseDuplicates(u *Unit, gr group, qid string, dupes []int32) {
	// collectRanked leaves no entries: gather them (in the same order,
	// the group being ranked already) for their positions.
	if len(b.entries) != len(b.docs) {
		if err := b.collect(u, gr); err != nil {
			return
		}
	}
	first := b.positions()
	for _, i := range dupes {
		e := b.entries[i]
		u.errs.Add(posError(segFile(gr), e.pos, schema.FieldDocID, fmt.Errorf(
			"%w: doc %q appears twice for query %q (also at %s, ranked higher); trec_eval refuses such runs; without --strict the best-ranked occurrence is kept",
			schema.ErrDuplicate, e.doc, qid, posString(first[e.doc]))))
	}
}

func segFile(gr group) string {
	if len(gr.segs) > 0 {
		return gr.segs[0].b.File
	}
	return ""
}

// positions maps each doc of the current entries to its first position.
func (b *builder) positions() map[string]int64 {
	m := make(map[string]int64, len(b.entries))
	for _, e := range b.entries {
		if _, ok := m[e.doc]; !ok {
			m[e.doc] = e.pos
		}
	}
	return m
}

// collectRanked puts a group's doc ids in b.docs straight from its
// long-form segments when their scores already rank them (tools write
// runs best first), with no entries; otherwise it does nothing and reports
// false, for collect to gather and sort the entries.
func (b *builder) collectRanked(gr group) bool {
	if b.j.cfg.RankBy != RankByScore {
		return false
	}
	b.docs, b.entries = b.docs[:0], b.entries[:0]
	var prevDoc string
	var prevScore float64
	for _, s := range gr.segs {
		if s.b.Form != schema.FormRunLong {
			return false
		}
		rec := s.b.Record
		docs := rec.Column(1).(*array.String)
		scores := rec.Column(2).(*array.Float64).Float64Values()
		for i := s.lo; i < s.hi; i++ {
			doc, score := docs.Value(i), scores[i]
			// In order unless it ranks before the one above
			// (compareByScore; equal entries are in source order).
			if len(b.docs) > 0 && !(score < prevScore) && (score != prevScore || doc > prevDoc) {
				return false
			}
			b.docs = append(b.docs, doc)
			prevDoc, prevScore = doc, score
		}
	}
	return true
}

// collect gathers and ranks the entries of one group.
func (b *builder) collect(u *Unit, gr group) error {
	b.entries = b.entries[:0]
	positional := false
	for _, s := range gr.segs {
		rec := s.b.Record
		switch s.b.Form {
		case schema.FormRunLong:
			docs := rec.Column(1).(*array.String)
			scores := rec.Column(2).(*array.Float64).Float64Values()
			ranks := rec.Column(3).(*array.Int32)
			rv := ranks.Int32Values()
			for i := s.lo; i < s.hi; i++ {
				if b.j.cfg.RankBy == RankByRank && ranks.IsNull(i) {
					u.errs.Add(s.b.At(i, schema.FieldRank, fmt.Errorf("%w: rank is not an integer (needed by --rank-by rank)", schema.ErrNumber)))
					continue
				}
				b.entries = append(b.entries, entry{doc: docs.Value(i), score: scores[i], rank: rv[i], pos: position(s.b, i)})
			}
		case schema.FormRunList:
			docList := rec.Column(1).(*array.List)
			docs := docList.ListValues().(*array.String)
			scoreList := rec.Column(2).(*array.List)
			scores := scoreList.ListValues().(*array.Float64).Float64Values()
			ds, de := docList.ValueOffsets(s.lo)
			ss, _ := scoreList.ValueOffsets(s.lo)
			hasScores := !scoreList.IsNull(s.lo)
			positional = positional || !hasScores
			pos := position(s.b, s.lo)
			for k := ds; k < de; k++ {
				e := entry{doc: docs.Value(int(k)), rank: int32(k - ds + 1), pos: pos}
				if hasScores {
					e.score = scores[ss+(k-ds)]
				}
				b.entries = append(b.entries, e)
			}
		}
	}
	if positional {
		return nil // list order is the ranking
	}
	if b.j.cfg.RankBy == RankByRank {
		if !slices.IsSortedFunc(b.entries, compareByRank) {
			slices.SortFunc(b.entries, compareByRank)
		}
	} else if !sortedByScore(b.entries) {
		slices.SortFunc(b.entries, compareByScore)
	}
	return nil
}

// sortedByScore is slices.IsSortedFunc(es, compareByScore) with the common
// case, a score below the one before, decided inline.
func sortedByScore(es []entry) bool {
	for i := 1; i < len(es); i++ {
		if es[i].score < es[i-1].score {
			continue
		}
		if compareByScore(es[i], es[i-1]) < 0 {
			return false
		}
	}
	return true
}
