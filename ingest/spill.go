package ingest

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"

	"github.com/evalgate/evalgate/schema"
)

// Regrouping a run whose queries are interleaved.
//
// A run that lists one query's documents in several places (written by
// parallel retrieval jobs, shuffled, concatenated) cannot be streamed query
// by query. JoinSpilled reads it in two passes in bounded memory. The first
// pass appends every line of a gold query to one of up to spillMaxFiles
// temporary files, chosen by the query's position in the gold set (each
// file holds a contiguous range of gold queries); lines of queries the gold
// set lacks are only counted. The second pass reads the files back one at a
// time, sorts each by gold position and then source position (so a query's
// lines keep their order in the file), and hands the queries to the join in
// gold-set order. Memory holds one file's lines (about 1/B of the run) and
// the units in flight. The files live in a directory of their own that is
// removed when the join returns, on success, error or cancellation.

const (
	spillMaxFiles   = 256      // spill files at most
	spillFlushBytes = 64 << 10 // a file's pending records are written at this size
)

// spillMinQueries is the number of gold queries per spill file, at least
// (a variable for the tests, which make many small files).
var spillMinQueries = 2048

// spill is the first pass's output: the gold-set ranges' files.
type spill struct {
	dir     string
	gold    *Gold
	per     int // gold queries per file
	files   []*os.File
	pending [][]byte
	run     string // the run's file name, for errors
}

func newSpill(parent string, gold *Gold) (*spill, error) {
	dir, err := os.MkdirTemp(parent, "evalgate-spill-")
	if err != nil {
		return nil, fmt.Errorf("create spill directory: %w", err)
	}
	n := gold.NumQueries()
	per := max(spillMinQueries, (n+spillMaxFiles-1)/spillMaxFiles)
	files := max(1, (n+per-1)/per)
	return &spill{dir: dir, gold: gold, per: per, files: make([]*os.File, files), pending: make([][]byte, files)}, nil
}

// remove deletes the spill files.
func (s *spill) remove() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
	os.RemoveAll(s.dir)
}

func (s *spill) path(k int) string { return filepath.Join(s.dir, fmt.Sprintf("%04d", k)) }

// add records one line of gold query gi: its source position (line, or
// -row), score, rank (valid false: null) and doc id.
//
// Record layout: uvarint gold index, zigzag varint position, 8 bytes of
// score bits, uvarint rank (0 for null, else zigzag(rank)+1), uvarint
// doc-id length and the doc id.
func (s *spill) add(gi int32, pos int64, score float64, rank int32, valid bool, doc string) error {
	k := int(gi) / s.per
	b := s.pending[k]
	b = binary.AppendUvarint(b, uint64(gi))
	b = binary.AppendVarint(b, pos)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(score))
	r := uint64(0)
	if valid {
		r = uint64(uint32(rank)<<1^uint32(rank>>31)) + 1 // zigzag, shifted past null
	}
	b = binary.AppendUvarint(b, r)
	b = binary.AppendUvarint(b, uint64(len(doc)))
	b = append(b, doc...)
	s.pending[k] = b
	if len(b) >= spillFlushBytes {
		return s.flush(k)
	}
	return nil
}

// flush writes file k's pending records.
func (s *spill) flush(k int) error {
	if len(s.pending[k]) == 0 {
		return nil
	}
	if s.files[k] == nil {
		f, err := os.Create(s.path(k))
		if err != nil {
			return fmt.Errorf("create spill file: %w", err)
		}
		s.files[k] = f
	}
	if _, err := s.files[k].Write(s.pending[k]); err != nil {
		return fmt.Errorf("write spill file %s: %w", s.files[k].Name(), err)
	}
	s.pending[k] = s.pending[k][:0]
	return nil
}

// finish writes every pending record and closes the files.
func (s *spill) finish() error {
	for k := range s.files {
		if err := s.flush(k); err != nil {
			return err
		}
		s.pending[k] = nil
		if f := s.files[k]; f != nil {
			if err := f.Close(); err != nil {
				return fmt.Errorf("write spill file %s: %w", f.Name(), err)
			}
		}
	}
	return nil
}

// spillLine is one decoded record.
type spillLine struct {
	gi         int32
	valid      bool
	rank       int32
	pos        int64
	score      float64
	doc, docTo int32 // the doc id's bytes in the file
}

// spillGroup is one query's lines [lo,hi) in a loaded batch.
type spillGroup struct {
	gold   int32
	lo, hi int
}

var errSpillCorrupt = errors.New("ingest: spill file is corrupt")

// load reads file k back as one run-long batch sorted by gold index, then
// source position, and returns it with its queries. The batch is nil when
// the file holds no line. The caller releases the batch.
func (s *spill) load(k int) (*schema.Batch, []spillGroup, error) {
	if s.files[k] == nil {
		return nil, nil, nil
	}
	data, err := os.ReadFile(s.path(k))
	if err != nil {
		return nil, nil, fmt.Errorf("read spill file: %w", err)
	}
	lines, err := decodeSpill(data)
	if err != nil {
		return nil, nil, fmt.Errorf("read spill file %s: %w", s.path(k), err)
	}
	order, err := s.order(k, lines)
	if err != nil {
		return nil, nil, fmt.Errorf("read spill file %s: %w", s.path(k), err)
	}
	n := len(lines)
	qids := schema.NewStrings(n, 0)
	docs := schema.NewStrings(n, len(data))
	scores := make([]float64, n)
	ranks := make([]int32, n)
	valid := make([]bool, n)
	pos := make([]int64, n)
	var groups []spillGroup
	for i, li := range order {
		l := lines[li]
		if i == 0 || l.gi != lines[order[i-1]].gi {
			groups = append(groups, spillGroup{gold: l.gi, lo: i})
		}
		groups[len(groups)-1].hi = i + 1
		qids.Append(s.gold.QueryID(l.gi))
		docs.AppendBytes(data[l.doc:l.docTo])
		scores[i], ranks[i], valid[i], pos[i] = l.score, l.rank, l.valid, l.pos
	}
	rec := schema.NewRecord(schema.RunLong(), []arrow.Array{
		qids.Array(), docs.Array(), schema.Float64Array(scores), schema.Int32Array(ranks, valid),
	}, n)
	return &schema.Batch{Record: rec, Form: schema.FormRunLong, File: s.run, Lines: pos}, groups, nil
}

// order returns the permutation that sorts file k's lines by gold index,
// then source position. Lines were appended in the order the run was
// read, which is source order, so a counting sort by gold index (stable)
// is enough; a file whose positions are out of order is sorted in full.
func (s *spill) order(k int, lines []spillLine) ([]int32, error) {
	base := int32(k * s.per)
	counts := make([]int32, s.per+1)
	for _, l := range lines {
		if l.gi < base || l.gi-base >= int32(s.per) {
			return nil, errSpillCorrupt
		}
		counts[l.gi-base+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	order := make([]int32, len(lines))
	for i, l := range lines {
		order[counts[l.gi-base]] = int32(i)
		counts[l.gi-base]++
	}
	for i := 1; i < len(order); i++ {
		a, b := &lines[order[i-1]], &lines[order[i]]
		if a.gi == b.gi && sourceOrder(a.pos) > sourceOrder(b.pos) {
			slices.SortFunc(order, func(x, y int32) int {
				if c := cmp.Compare(lines[x].gi, lines[y].gi); c != 0 {
					return c
				}
				return cmp.Compare(sourceOrder(lines[x].pos), sourceOrder(lines[y].pos))
			})
			break
		}
	}
	return order, nil
}

// decodeSpill decodes a spill file's records.
func decodeSpill(data []byte) ([]spillLine, error) {
	var lines []spillLine
	for off := 0; off < len(data); {
		var l spillLine
		gi, n := binary.Uvarint(data[off:])
		if n <= 0 || gi > math.MaxInt32 {
			return nil, errSpillCorrupt
		}
		off += n
		pos, n := binary.Varint(data[off:])
		if n <= 0 || len(data)-off-n < 8 {
			return nil, errSpillCorrupt
		}
		off += n
		l.score = math.Float64frombits(binary.LittleEndian.Uint64(data[off:]))
		off += 8
		r, n := binary.Uvarint(data[off:])
		if n <= 0 || r > 1<<32 {
			return nil, errSpillCorrupt
		}
		off += n
		if r > 0 {
			z := uint32(r - 1)
			l.valid, l.rank = true, int32(z>>1)^-int32(z&1)
		}
		size, n := binary.Uvarint(data[off:])
		if n <= 0 || size > uint64(len(data)-off-n) {
			return nil, errSpillCorrupt
		}
		off += n
		l.gi, l.pos, l.doc, l.docTo = int32(gi), pos, int32(off), int32(off+int(size))
		off += int(size)
		lines = append(lines, l)
	}
	return lines, nil
}

// runSpilled groups a run whose queries may be interleaved, through spill
// files (see the top of this file).
func (g *grouper) runSpilled(r schema.Reader) error {
	g.init()
	sp, err := newSpill(g.j.cfg.SpillDir, g.j.gold)
	if err != nil {
		return err
	}
	defer sp.remove()
	for {
		b, err := r.Next(g.ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		err = g.spillBatch(sp, b)
		b.Release()
		if err != nil {
			return err
		}
	}
	if err := sp.finish(); err != nil {
		return err
	}
	for k := range sp.files {
		if err := g.ctx.Err(); err != nil {
			return err
		}
		b, groups, err := sp.load(k)
		if err != nil {
			return err
		}
		for _, gr := range groups {
			if err == nil {
				err = g.finish(g.j.gold.QueryID(gr.gold), []segment{{b: b, lo: gr.lo, hi: gr.hi}}, false)
			}
		}
		if b != nil {
			b.Release() // the units that use it hold their own references
		}
		if err != nil {
			return err
		}
	}
	return g.finishGold()
}

// spillBatch is the first pass over one batch: lines of gold queries go to
// the spill files, queries only in the run are counted.
func (g *grouper) spillBatch(sp *spill, b *schema.Batch) error {
	if err := checkRunForm(b); err != nil {
		return err
	}
	if b.Form != schema.FormRunLong {
		// A list-form run holds each query on one row: it is grouped by
		// construction, and Join reads it.
		return fmt.Errorf("regroup run %s: %w: want one row per retrieved document, got %s data", b.File, schema.ErrWrongFileRole, b.Form)
	}
	if sp.run == "" {
		sp.run = b.File
	}
	rec := b.Record
	qids, err := schema.RunQueryIDs(rec)
	if err != nil {
		return fmt.Errorf("regroup run %s: %w", b.File, err)
	}
	docs := rec.Column(1).(*array.String)
	scores := rec.Column(2).(*array.Float64).Float64Values()
	ranks := rec.Column(3).(*array.Int32)
	rv := ranks.Int32Values()
	// A stretch of rows of one query at a time.
	for lo, n := 0, qids.Len(); lo < n; {
		id := qids.Value(lo)
		hi := qids.RunEnd(lo, id)
		gi := g.j.gold.Lookup(id)
		if gi < 0 {
			if err := g.finish(id, nil, false); err != nil { // counted once per query
				return err
			}
		}
		for i := lo; i < hi && gi >= 0; i++ {
			if err := sp.add(gi, position(b, i), scores[i], rv[i], ranks.IsValid(i), docs.Value(i)); err != nil {
				return err
			}
		}
		lo = hi
	}
	return nil
}
