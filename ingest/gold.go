package ingest

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/zeebo/xxh3"

	"github.com/evalgate/evalgate/internal/arena"
	"github.com/evalgate/evalgate/internal/pages"
	"github.com/evalgate/evalgate/schema"
)

// Gold is a gold set in memory: for every query its judged documents in
// order of decreasing grade (then doc id), its text and its tag groups.
// A Gold is read-only after LoadGold and safe for concurrent use.
type Gold struct {
	byID    *queryIndex
	queries []goldQuery
	ids     []byte     // query ids, in query order
	idOff   []int      // len(queries)+1 offsets into ids
	texts   []string   // query texts by query; shorter if the last have none
	groups  [][]string // tag groups by query; likewise
	docData []byte     // doc id bytes of all judgments
	docOff  []uint32   // len(judgments)+1 offsets into docData
	grades  []int32

	// Judgments is the number of judgments kept; IdenticalDuplicates counts
	// repeated identical judgments that were dropped.
	Judgments           int64
	IdenticalDuplicates int64
	digest              [16]byte
}

// goldQuery locates a query's judgments: [start,end). It holds no
// pointers (nor do the ids' bytes and offsets), so the garbage collector
// does not scan the queries of a large gold set.
type goldQuery struct {
	start, end int32
}

// NumQueries returns the number of queries in the gold set.
func (g *Gold) NumQueries() int { return len(g.queries) }

// Lookup returns the index of a query, or -1.
func (g *Gold) Lookup(queryID string) int32 {
	if i, ok := g.byID.lookup(queryID, g.QueryID); ok {
		return i
	}
	return -1
}

// LookupNext is Lookup for a caller going through queries mostly in the
// gold set's order (as most runs list them): it tries the query after
// prev (the last index found, or -1) before the index, whose map probes
// miss the cache on a large gold set.
func (g *Gold) LookupNext(prev int32, queryID string) int32 {
	if next := prev + 1; next >= 0 && int(next) < len(g.queries) && g.QueryID(next) == queryID {
		return next
	}
	return g.Lookup(queryID)
}

// QueryID returns the id of query i.
func (g *Gold) QueryID(i int32) string { return unsafeString(g.ids[g.idOff[i]:g.idOff[i+1]]) }

// QueryText returns the text of query i ("" if not given).
func (g *Gold) QueryText(i int32) string {
	if int(i) < len(g.texts) {
		return g.texts[i]
	}
	return ""
}

// Groups returns the tag groups ("name=value") of query i.
func (g *Gold) Groups(i int32) []string {
	if int(i) < len(g.groups) {
		return g.groups[i]
	}
	return nil
}

// addQuery adds a query without judgments and returns its index.
func (g *Gold) addQuery(id string) int32 {
	g.ids = append(grow(g.ids, len(id)), id...)
	g.idOff = append(grow(g.idOff, 1), len(g.ids))
	g.queries = append(grow(g.queries, 1), goldQuery{})
	return int32(len(g.queries) - 1)
}

// grow makes room for n more elements in s, at least doubling its
// capacity when it is full (append grows large slices by a quarter,
// copying them over and over).
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) < n {
		s = slices.Grow(s, max(n, len(s), 1024))
	}
	return s
}

// Grades returns the judged grades of query i, non-increasing.
func (g *Gold) Grades(i int32) []int32 {
	q := g.queries[i]
	return g.grades[q.start:q.end]
}

// Doc returns the doc id of judgment j of query i (j indexes Grades(i)).
func (g *Gold) Doc(i int32, j int) string {
	k := int(g.queries[i].start) + j
	return unsafeString(g.docData[g.docOff[k]:g.docOff[k+1]])
}

// NumRelevant returns the number of judgments of query i with grade ≥ level.
func (g *Gold) NumRelevant(i int32, level int32) int {
	n := 0
	for _, gr := range g.Grades(i) {
		if gr < level {
			break
		}
		n++
	}
	return n
}

// Digest identifies the content of the gold set independently of file
// format, line order, comments and duplicates: a sum of xxh3-128 hashes of
// the queries' canonical forms.
func (g *Gold) Digest() string { return "xxh3-128-sum:" + hex.EncodeToString(g.digest[:]) }

// judgment is one gold row during the build. Its doc id is a view into a
// batch the loader holds.
type judgment struct {
	grade int32
	doc   string
	pos   int64 // line, or -row, for errors
}

// span is a stretch of one query's judgments in one batch: values [lo,hi)
// of the batch's doc and grade arrays, from row row of the batch (list
// form), or from rows lo..hi-1 (long form: row is -1). Until intern gives
// a long-form span its query, its query id is the batch's at row lo. A
// span holds no pointers, so the garbage collector does not scan the
// spans.
type span struct {
	batch  int32
	query  int32
	lo, hi int32
	row    int32
}

// goldBatch is what the loader keeps of a batch until the build: its doc
// and grade values (references taken) and its rows' positions.
type goldBatch struct {
	qids      *array.String // long form, until its spans are interned
	docs      *array.String
	docVals   stringValues // docs' values
	gradesArr *array.Int32
	grades    []int32
	// Row i is at lines[i] or, when lines is nil, at first+step*i: text
	// lines one after another (step 1), or rows of an Arrow or Parquet
	// file, stored negated (step -1). See position.
	lines       []int64
	first, step int64
}

func (gb *goldBatch) judgment(s span, v int) judgment {
	row := v
	if s.row >= 0 {
		row = int(s.row)
	}
	return judgment{grade: gb.grades[v], doc: gb.docVals.value(v), pos: gb.position(row)}
}

// stringValues are the values of a string array, read without going
// through the array's data on every access.
type stringValues struct {
	offsets []int32
	data    []byte // from offsets[0]
}

func valuesOf(a *array.String) stringValues {
	return stringValues{offsets: a.ValueOffsets(), data: a.ValueBytes()}
}

func (s stringValues) value(i int) string {
	base := s.offsets[0]
	return unsafeString(s.data[s.offsets[i]-base : s.offsets[i+1]-base])
}

// position returns where row i of the batch is, as position does.
func (gb *goldBatch) position(i int) int64 {
	if gb.lines != nil {
		return gb.lines[i]
	}
	return gb.first + gb.step*int64(i)
}

// setPositions records where b's rows are, keeping b.Lines only when they
// are not consecutive (blank lines, comments or bad lines in between).
func (gb *goldBatch) setPositions(b *schema.Batch) {
	if b.Lines == nil {
		gb.first, gb.step = -b.FirstRow, -1
		return
	}
	var first int64
	if len(b.Lines) > 0 {
		first = b.Lines[0]
	}
	for i, line := range b.Lines {
		if line != first+int64(i) {
			gb.lines = b.Lines
			return
		}
	}
	gb.first, gb.step = first, 1
}

// goldLoader reads the batches on one goroutine, cutting them into spans
// of one query (in file order) that intern numbers, batch after batch;
// build then lays the judgments out per query. Both run on every core.
type goldLoader struct {
	g         *Gold
	batches   []goldBatch
	spans     []span
	docBytes  int         // doc id bytes of every judgment read
	interned  int         // spans[:interned] have their query
	strs      arena.Bytes // query texts
	definedAt []int64     // list form: where each query was defined (0: not yet)
}

// addSpan appends s, doubling the spans' room when full (append grows
// large slices by a quarter, copying them over and over).
func (l *goldLoader) addSpan(s span) { l.spans = append(grow(l.spans, 1), s) }

// hold keeps the doc and grade values of a batch for the build and
// returns its index. The rest of the batch (query ids, texts, tags) is
// not kept.
func (l *goldLoader) hold(b *schema.Batch, docs *array.String, grades *array.Int32) int32 {
	docs.Retain()
	grades.Retain()
	gb := goldBatch{docs: docs, docVals: valuesOf(docs), gradesArr: grades, grades: grades.Int32Values()}
	gb.setPositions(b)
	l.batches = append(l.batches, gb)
	d := docs.ValueOffsets()
	if len(d) > 0 {
		l.docBytes += int(d[len(d)-1] - d[0])
	}
	return int32(len(l.batches) - 1)
}

func (l *goldLoader) release() {
	l.releaseIDs()
	for _, gb := range l.batches {
		gb.docs.Release()
		gb.gradesArr.Release()
	}
	l.batches = nil
}

// releaseIDs drops the query ids of the batches, once their spans are
// interned.
func (l *goldLoader) releaseIDs() {
	for i := range l.batches {
		if gb := &l.batches[i]; gb.qids != nil {
			gb.qids.Release()
			gb.qids = nil
		}
	}
}

// LoadGold reads a gold set. Queries in list form may appear once; in long
// form a query's lines may be spread anywhere. Conflicting grades for one
// doc of one query are an error; identical repeats are dropped and counted.
// The batches are read on one goroutine (the text readers parse them on
// every core), the query ids of each numbered as it arrives; the index is
// built on every core (GOMAXPROCS).
func LoadGold(ctx context.Context, r schema.Reader) (*Gold, error) {
	l := &goldLoader{g: &Gold{byID: newQueryIndex(), idOff: []int{0}}}
	defer l.release()
	var errs schema.ErrorList
	file := ""
	for {
		b, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if schema.IsInvalidInput(err) {
				errs.Add(err)
				break
			}
			return nil, err
		}
		file = b.File
		switch b.Form {
		case schema.FormGoldLong:
			l.addLong(b)
			if err := l.intern(ctx); err != nil {
				b.Release()
				return nil, err
			}
		case schema.FormGoldList:
			l.addList(b, &errs)
		default:
			b.Release()
			return nil, fmt.Errorf("load gold %s: %w: got %s data", b.File, schema.ErrWrongFileRole, b.Form)
		}
		b.Release()
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(l.g.ids)+l.strs.Size()+l.docBytes > math.MaxUint32 {
		return nil, fmt.Errorf("load gold %s: more than 4 GiB of ids", file)
	}
	if err := l.build(ctx, file); err != nil {
		return nil, err
	}
	return l.g, nil
}

func (l *goldLoader) addLong(b *schema.Batch) {
	qids := b.Record.Column(0).(*array.String)
	bi := l.hold(b, b.Record.Column(1).(*array.String), b.Record.Column(2).(*array.Int32))
	qids.Retain()
	l.batches[bi].qids = qids
	n := qids.Len()
	for lo := 0; lo < n; {
		hi := schema.RunEnd(qids, lo, qids.Value(lo))
		l.addSpan(span{batch: bi, lo: int32(lo), hi: int32(hi), row: -1})
		lo = hi
	}
}

func (l *goldLoader) addList(b *schema.Batch, errs *schema.ErrorList) {
	rec := b.Record
	qids := rec.Column(0).(*array.String)
	texts := rec.Column(1).(*array.String)
	docList := rec.Column(2).(*array.List)
	docs := docList.ListValues().(*array.String)
	grades := rec.Column(3).(*array.List).ListValues().(*array.Int32)
	tags := rec.Column(4).(*array.Map)
	tagKeys, tagVals := tags.Keys().(*array.String), tags.Items().(*array.String)
	bi := l.hold(b, docs, grades)
	for i := 0; i < qids.Len(); i++ {
		id := qids.Value(i)
		q := l.query(id)
		for len(l.definedAt) <= int(q) {
			l.definedAt = append(l.definedAt, 0)
		}
		if l.definedAt[q] != 0 {
			errs.Add(b.At(i, schema.FieldQueryID, fmt.Errorf("%w: query %q already defined at %s", schema.ErrDuplicate, id, posString(l.definedAt[q]))))
			continue
		}
		pos := position(b, i)
		l.definedAt[q] = pos
		if !texts.IsNull(i) {
			l.setText(q, l.strs.String(texts.Value(i)))
		}
		s, e := docList.ValueOffsets(i)
		if e > s {
			l.addSpan(span{batch: bi, query: q, lo: int32(s), hi: int32(e), row: int32(i)})
		}
		if !tags.IsNull(i) {
			ts, te := tags.ValueOffsets(i)
			var groups []string
			for j := ts; j < te; j++ {
				groups = append(groups, tagKeys.Value(int(j))+"="+tagVals.Value(int(j)))
			}
			slices.Sort(groups)
			l.setGroups(q, slices.Compact(groups))
		}
	}
	l.interned = len(l.spans) // the list form's spans have their query
}

// setText sets the text of query q.
func (l *goldLoader) setText(q int32, text string) {
	g := l.g
	for len(g.texts) <= int(q) {
		g.texts = append(g.texts, "")
	}
	g.texts[q] = text
}

// setGroups sets the tag groups of query q.
func (l *goldLoader) setGroups(q int32, groups []string) {
	g := l.g
	for len(g.groups) <= int(q) {
		g.groups = append(g.groups, nil)
	}
	g.groups[q] = groups
}

func position(b *schema.Batch, i int) int64 {
	if b.Lines != nil {
		return b.Lines[i]
	}
	return -(b.FirstRow + int64(i)) // rows are stored negated
}

func posError(file string, pos int64, field string, err error) *schema.InputError {
	e := &schema.InputError{File: file, Field: field, Err: err}
	if pos >= 0 {
		e.Line = pos
	} else {
		e.Row = -pos
	}
	return e
}

func posString(pos int64) string {
	if pos >= 0 {
		return fmt.Sprintf("line %d", pos)
	}
	return fmt.Sprintf("row %d", -pos)
}

// goldPart is the build of a range of queries. It writes their judgments
// into the Gold's arrays from where they would start if no judgment were
// dropped (baseJ, baseD); compact closes the gaps.
type goldPart struct {
	qlo, qhi     int // queries [qlo,qhi)
	baseJ, baseD int
	nj, nd       int // judgments and doc id bytes kept
	sum          [2]uint64
	duplicates   int64
	errs         schema.ErrorList
}

// build groups the judgments by query, checks duplicates and lays them out
// in order of decreasing grade. Ranges of queries are built in parallel,
// each in its own region of the arrays; the result (errors in order
// included) is the same as building the queries one after another.
func (l *goldLoader) build(ctx context.Context, file string) error {
	g := l.g
	nq := len(g.queries)
	spanStart := make([]int32, nq+1)
	values := make([]int64, nq+1)   // judgments before each query
	docBytes := make([]int64, nq+1) // doc id bytes before each query
	// The counts are added to in place: write each page first.
	pages.Prefault(spanStart)
	pages.Prefault(values)
	pages.Prefault(docBytes)
	inOrder := true // the spans are by query
	for k, s := range l.spans {
		spanStart[s.query+1]++
		values[s.query+1] += int64(s.hi - s.lo)
		d := l.batches[s.batch].docVals.offsets
		docBytes[s.query+1] += int64(d[s.hi] - d[s.lo])
		inOrder = inOrder && (k == 0 || s.query >= l.spans[k-1].query)
	}
	for i := 1; i <= nq; i++ {
		spanStart[i] += spanStart[i-1]
		values[i] += values[i-1]
		docBytes[i] += docBytes[i-1]
	}
	var order []int32
	if !inOrder {
		order = l.spanOrder(spanStart)
	}
	g.docOff = make([]uint32, values[nq]+1)
	g.grades = make([]int32, values[nq])
	g.docData = make([]byte, docBytes[nq])
	parts := splitQueries(values)
	for _, p := range parts {
		p.baseJ, p.baseD = int(values[p.qlo]), int(docBytes[p.qlo])
	}
	err := parallel(ctx, len(parts), func(i int) {
		l.buildPart(file, parts[i], spanStart, order)
	})
	if err != nil {
		return err
	}
	var errs schema.ErrorList
	var sum [2]uint64
	for _, p := range parts {
		errs.Merge(&p.errs)
		sum = add128(sum, p.sum)
		g.IdenticalDuplicates += p.duplicates
	}
	if err := errs.Err(); err != nil {
		return err
	}
	g.compact(parts)
	g.Judgments = int64(len(g.grades))
	putUint128(g.digest[:], sum)
	return nil
}

// spanOrder is a counting sort of the spans by query (a permutation, not
// a copy) that keeps file order within a query: query q has the spans
// order[spanStart[q]:spanStart[q+1]]. The spans of a file that lists each
// query's lines together are in order already, and build needs no
// permutation.
func (l *goldLoader) spanOrder(spanStart []int32) []int32 {
	order := make([]int32, len(l.spans))
	next := slices.Clone(spanStart[:len(spanStart)-1])
	for i, s := range l.spans {
		order[next[s.query]] = int32(i)
		next[s.query]++
	}
	return order
}

// minPartJudgments is the fewest judgments splitQueries puts in a range
// (tests lower it to have many ranges).
var minPartJudgments int64 = 1 << 14

// splitQueries cuts the queries into ranges of about the same number of
// judgments, several per core so that uneven ranges even out.
func splitQueries(values []int64) []*goldPart {
	nq := len(values) - 1
	target := max(values[nq]/int64(8*runtime.GOMAXPROCS(0)), minPartJudgments)
	var parts []*goldPart
	for lo := 0; lo < nq; {
		hi, _ := slices.BinarySearch(values[lo+1:], values[lo]+target)
		hi = min(lo+1+hi, nq)
		parts = append(parts, &goldPart{qlo: lo, qhi: hi})
		lo = hi
	}
	return parts
}

// buildPart builds the queries of p: their judgments in file order,
// duplicates dropped or refused, then in canonical order, with each
// query's digest term. Query q has the spans spanStart[q] to
// spanStart[q+1]-1, through order unless it is nil (see spanOrder).
func (l *goldLoader) buildPart(file string, p *goldPart, spanStart, order []int32) {
	g := l.g
	var canon []byte
	var part []judgment
	j0, d0 := p.baseJ, p.baseD
	for qi := p.qlo; qi < p.qhi; qi++ {
		q := &g.queries[qi]
		id := g.QueryID(int32(qi))
		part = part[:0]
		for k := spanStart[qi]; k < spanStart[qi+1]; k++ {
			i := k
			if order != nil {
				i = order[k]
			}
			s := l.spans[i]
			b := &l.batches[s.batch]
			for v := s.lo; v < s.hi; v++ {
				part = append(part, b.judgment(s, int(v)))
			}
		}
		kept := part
		if hasDuplicateDoc(part) {
			kept = p.dropDuplicates(file, id, part)
		}
		sortJudged(kept)
		q.start = int32(j0 + p.nj)
		// The query's canonical form: its id, then each judgment (doc id,
		// 0, grade in 4 bytes big-endian), then each tag group and 1.
		canon = append(append(canon[:0], id...), 0)
		for _, j := range kept {
			copy(g.docData[d0+p.nd:], j.doc)
			p.nd += len(j.doc)
			g.grades[j0+p.nj] = j.grade
			p.nj++
			g.docOff[j0+p.nj] = uint32(d0 + p.nd)
			canon = append(canon, j.doc...)
			canon = append(canon, 0, byte(j.grade>>24), byte(j.grade>>16), byte(j.grade>>8), byte(j.grade))
		}
		for _, t := range g.Groups(int32(qi)) {
			canon = append(append(canon, t...), 1)
		}
		q.end = int32(j0 + p.nj)
		h := xxh3.Hash128(canon)
		p.sum = add128(p.sum, [2]uint64{h.Lo, h.Hi})
	}
}

// sortJudged sorts one query's judgments (no doc twice) in canonical
// order: grade descending, then doc id. Most queries have a few, which an
// insertion sort orders fastest.
func sortJudged(js []judgment) {
	if len(js) > 12 {
		slices.SortFunc(js, func(a, b judgment) int {
			if c := cmp.Compare(b.grade, a.grade); c != 0 {
				return c
			}
			return strings.Compare(a.doc, b.doc)
		})
		return
	}
	for i := 1; i < len(js); i++ {
		x := js[i]
		k := i
		for ; k > 0 && judgedBefore(&x, &js[k-1]); k-- {
			js[k] = js[k-1]
		}
		js[k] = x
	}
}

func judgedBefore(a, b *judgment) bool {
	return a.grade > b.grade || a.grade == b.grade && a.doc < b.doc
}

// hasDuplicateDoc reports whether two judgments of one query name the
// same doc: pairwise for the few judgments most queries have, else
// through a sorted copy of the doc ids.
func hasDuplicateDoc(part []judgment) bool {
	if len(part) <= 16 {
		for i := 1; i < len(part); i++ {
			for _, o := range part[:i] {
				if o.doc == part[i].doc {
					return true
				}
			}
		}
		return false
	}
	docs := make([]string, len(part))
	for i, j := range part {
		docs[i] = j.doc
	}
	slices.Sort(docs)
	for i := 1; i < len(docs); i++ {
		if docs[i] == docs[i-1] {
			return true
		}
	}
	return false
}

// dropDuplicates keeps the first judgment of each doc of one query
// (sorted by doc), counting identical repeats and reporting conflicting
// grades in order of doc, then position.
func (p *goldPart) dropDuplicates(file, query string, part []judgment) []judgment {
	// Stable, so that the first occurrence leads.
	slices.SortStableFunc(part, func(a, b judgment) int { return strings.Compare(a.doc, b.doc) })
	kept := part[:0]
	for i, j := range part {
		if i > 0 && j.doc == kept[len(kept)-1].doc {
			prev := kept[len(kept)-1]
			if j.grade != prev.grade {
				p.errs.Add(posError(file, j.pos, "", fmt.Errorf("%w: query %q doc %q has grade %d here and %d at %s",
					schema.ErrDuplicate, query, j.doc, j.grade, prev.grade, posString(prev.pos))))
			} else {
				p.duplicates++
			}
			continue
		}
		kept = append(kept, j)
	}
	return kept
}

// compact closes the gaps the dropped duplicates left after each part, in
// order (a part moves only to lower positions).
func (g *Gold) compact(parts []*goldPart) {
	nj, nd := 0, 0
	for _, p := range parts {
		if nj != p.baseJ {
			copy(g.grades[nj:], g.grades[p.baseJ:p.baseJ+p.nj])
			copy(g.docData[nd:], g.docData[p.baseD:p.baseD+p.nd])
			shift := uint32(p.baseD - nd)
			for k := 1; k <= p.nj; k++ {
				g.docOff[nj+k] = g.docOff[p.baseJ+k] - shift
			}
			for qi := p.qlo; qi < p.qhi; qi++ {
				g.queries[qi].start -= int32(p.baseJ - nj)
				g.queries[qi].end -= int32(p.baseJ - nj)
			}
		}
		nj += p.nj
		nd += p.nd
	}
	g.grades = g.grades[:nj]
	g.docOff = g.docOff[:nj+1]
	g.docData = g.docData[:nd]
}

// parallel runs fn(0..n-1) on GOMAXPROCS goroutines and waits for them;
// it stops handing out work when ctx is done and returns ctx's error.
func parallel(ctx context.Context, n int, fn func(i int)) error {
	return parallelW(ctx, n, runtime.GOMAXPROCS(0), func(_, i int) { fn(i) })
}

// parallelW is parallel on nw goroutines, telling fn which one (in
// [0,nw)) runs it.
func parallelW(ctx context.Context, n, nw int, fn func(w, i int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(n, nw); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(w, i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func addCarry(a, b uint64) (uint64, uint64) {
	s := a + b
	if s < a {
		return s, 1
	}
	return s, 0
}

func putUint128(b []byte, v [2]uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v[1] >> (56 - 8*i))
		b[8+i] = byte(v[0] >> (56 - 8*i))
	}
}
