package ingest

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/zeebo/xxh3"

	"github.com/evalgate/evalgate/internal/arena"
	"github.com/evalgate/evalgate/schema"
)

// Gold is a gold set in memory: for every query its judged documents in
// order of decreasing grade (then doc id), its text and its tag groups.
// A Gold is read-only after LoadGold and safe for concurrent use.
type Gold struct {
	byID    map[string]int32
	queries []goldQuery
	docData []byte   // doc id bytes of all judgments
	docOff  []uint32 // len(judgments)+1 offsets into docData
	grades  []int32

	// Judgments is the number of judgments kept; IdenticalDuplicates counts
	// repeated identical judgments that were dropped.
	Judgments           int64
	IdenticalDuplicates int64
	digest              [16]byte
}

type goldQuery struct {
	id     string
	text   string
	start  int32 // judgments [start,end)
	end    int32
	groups []string
}

// NumQueries returns the number of queries in the gold set.
func (g *Gold) NumQueries() int { return len(g.queries) }

// Lookup returns the index of a query, or -1.
func (g *Gold) Lookup(queryID string) int32 {
	if i, ok := g.byID[queryID]; ok {
		return i
	}
	return -1
}

// QueryID returns the id of query i.
func (g *Gold) QueryID(i int32) string { return g.queries[i].id }

// QueryText returns the text of query i ("" if not given).
func (g *Gold) QueryText(i int32) string { return g.queries[i].text }

// Groups returns the tag groups ("name=value") of query i.
func (g *Gold) Groups(i int32) []string { return g.queries[i].groups }

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

// judgment is one gold row during loading. Its doc id is a view into the
// loading arena.
type judgment struct {
	query int32
	grade int32
	doc   string
	pos   int64 // line, or -row, for errors
}

// goldLoader accumulates judgments in chunked storage, so that loading
// millions of them never re-copies (or re-faults) what is already loaded.
type goldLoader struct {
	g         *Gold
	js        arena.Slice[judgment]
	queries   arena.Slice[goldQuery]
	strs      arena.Bytes
	definedAt []int64 // list form: where each query was defined (0: not yet)
}

func (l *goldLoader) query(id string) int32 {
	if i, ok := l.g.byID[id]; ok {
		return i
	}
	i := int32(l.queries.Len())
	id = l.strs.String(id)
	l.g.byID[id] = i
	l.queries.Append(goldQuery{id: id})
	return i
}

// LoadGold reads a gold set. Queries in list form may appear once; in long
// form a query's lines may be spread anywhere. Conflicting grades for one
// doc of one query are an error; identical repeats are dropped and counted.
func LoadGold(ctx context.Context, r schema.Reader) (*Gold, error) {
	l := &goldLoader{g: &Gold{byID: map[string]int32{}}}
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
	if l.strs.Size() > math.MaxUint32 {
		return nil, fmt.Errorf("load gold %s: more than 4 GiB of ids", file)
	}
	if err := l.build(file); err != nil {
		return nil, err
	}
	return l.g, nil
}

func (l *goldLoader) addLong(b *schema.Batch) {
	qids := b.Record.Column(0).(*array.String)
	docs := b.Record.Column(1).(*array.String)
	grades := b.Record.Column(2).(*array.Int32).Int32Values()
	last, q := "", int32(-1)
	for i := 0; i < qids.Len(); i++ {
		if id := qids.Value(i); q < 0 || id != last {
			q, last = l.query(id), id
		}
		l.js.Append(judgment{query: q, grade: grades[i], doc: l.strs.String(docs.Value(i)), pos: position(b, i)})
	}
}

func (l *goldLoader) addList(b *schema.Batch, errs *schema.ErrorList) {
	rec := b.Record
	qids := rec.Column(0).(*array.String)
	texts := rec.Column(1).(*array.String)
	docList := rec.Column(2).(*array.List)
	docs := docList.ListValues().(*array.String)
	grades := rec.Column(3).(*array.List).ListValues().(*array.Int32).Int32Values()
	tags := rec.Column(4).(*array.Map)
	tagKeys, tagVals := tags.Keys().(*array.String), tags.Items().(*array.String)
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
		gq := goldQuery{id: l.queries.At(int(q)).id}
		if !texts.IsNull(i) {
			gq.text = l.strs.String(texts.Value(i))
		}
		s, e := docList.ValueOffsets(i)
		for j := s; j < e; j++ {
			l.js.Append(judgment{query: q, grade: grades[j], doc: l.strs.String(docs.Value(int(j))), pos: pos})
		}
		if !tags.IsNull(i) {
			ts, te := tags.ValueOffsets(i)
			var groups []string
			for j := ts; j < te; j++ {
				groups = append(groups, tagKeys.Value(int(j))+"="+tagVals.Value(int(j)))
			}
			slices.Sort(groups)
			gq.groups = slices.Compact(groups)
		}
		l.queries.Set(int(q), gq)
	}
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

// build groups the judgments by query, checks duplicates and lays them out
// in order of decreasing grade, in exactly sized arrays.
func (l *goldLoader) build(file string) error {
	g := l.g
	nq := l.queries.Len()
	g.queries = make([]goldQuery, nq)
	for i := range g.queries {
		g.queries[i] = l.queries.At(i)
	}
	// Counting sort by query (a permutation, not a copy) keeps file order
	// within a query.
	counts := make([]int32, nq+1)
	n := l.js.Len()
	size := 0
	for i := 0; i < n; i++ {
		j := l.js.At(i)
		counts[j.query+1]++
		size += len(j.doc)
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	order := make([]int32, n)
	next := slices.Clone(counts[:nq])
	for i := 0; i < n; i++ {
		q := l.js.At(i).query
		order[next[q]] = int32(i)
		next[q]++
	}
	var errs schema.ErrorList
	g.docOff = make([]uint32, 1, n+1)
	g.grades = make([]int32, 0, n)
	g.docData = make([]byte, 0, size)
	var sum [2]uint64
	hasher := xxh3.New()
	var gb [5]byte
	var part []judgment
	for qi := range g.queries {
		q := &g.queries[qi]
		part = part[:0]
		for _, k := range order[counts[qi]:counts[qi+1]] {
			part = append(part, l.js.At(int(k)))
		}
		// Duplicates: sort by doc (stable, so the first occurrence leads).
		slices.SortStableFunc(part, func(a, b judgment) int { return strings.Compare(a.doc, b.doc) })
		kept := part[:0]
		for i, j := range part {
			if i > 0 && j.doc == kept[len(kept)-1].doc {
				prev := kept[len(kept)-1]
				if j.grade != prev.grade {
					errs.Add(posError(file, j.pos, "", fmt.Errorf("%w: query %q doc %q has grade %d here and %d at %s",
						schema.ErrDuplicate, q.id, j.doc, j.grade, prev.grade, posString(prev.pos))))
				} else {
					g.IdenticalDuplicates++
				}
				continue
			}
			kept = append(kept, j)
		}
		// Canonical judged order: grade descending, then doc id.
		slices.SortFunc(kept, func(a, b judgment) int {
			if c := cmp.Compare(b.grade, a.grade); c != 0 {
				return c
			}
			return strings.Compare(a.doc, b.doc)
		})
		q.start = int32(len(g.grades))
		hasher.Reset()
		hasher.WriteString(q.id)
		hasher.Write([]byte{0})
		for _, j := range kept {
			g.docData = append(g.docData, j.doc...)
			g.docOff = append(g.docOff, uint32(len(g.docData)))
			g.grades = append(g.grades, j.grade)
			hasher.WriteString(j.doc)
			gb[1], gb[2], gb[3], gb[4] = byte(j.grade>>24), byte(j.grade>>16), byte(j.grade>>8), byte(j.grade)
			hasher.Write(gb[:])
		}
		for _, t := range q.groups {
			hasher.WriteString(t)
			hasher.Write([]byte{1})
		}
		q.end = int32(len(g.grades))
		h := hasher.Sum128()
		lo, c := addCarry(sum[0], h.Lo)
		sum[0] = lo
		sum[1] += h.Hi + c
	}
	if err := errs.Err(); err != nil {
		return err
	}
	g.Judgments = int64(len(g.grades))
	putUint128(g.digest[:], sum)
	return nil
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
