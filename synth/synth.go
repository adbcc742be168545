package synth

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/apache/arrow/go/v16/arrow"

	"github.com/evalgate/evalgate/internal/atomicfile"
	"github.com/evalgate/evalgate/schema"
)

// Options describes the data to generate.
type Options struct {
	Queries int
	Depth   int
	Seed    uint64
	Format  schema.Format // TREC, JSONL, Arrow or Parquet
	// Tags adds category and difficulty tags (not in TREC, which has none).
	Tags bool
	// CorpusSize is the number of distinct doc ids drawn from (default
	// max(1e6, 10·Queries)).
	CorpusSize int
	// RecallRate is the chance that a relevant document is retrieved
	// (default 0.7).
	RecallRate float64
	// RankDecay models where a retrieved relevant document lands. 0 (the
	// default, ranx's benchmark setup): at a uniformly random rank, a
	// later one possibly taking an earlier one's place. In (0,1): at rank
	// r+1 with probability proportional to RankDecay^r, moved down to the
	// next free rank if taken, as a useful retriever ranks them (0.5:
	// about half of them first, most in the top 5).
	RankDecay float64
}

// Query is one generated query.
type Query struct {
	ID       string
	Text     string
	Relevant []string
	Grades   []int32
	Tags     [][2]string
	Ranking  []string  // best first
	Scores   []float64 // strictly decreasing
}

var (
	categories   = []string{"policy", "billing", "legal", "product", "support"}
	difficulties = []string{"easy", "medium", "hard"}
)

func (o Options) withDefaults() Options {
	if o.CorpusSize <= 0 {
		o.CorpusSize = max(1_000_000, 10*o.Queries)
	}
	if o.RecallRate <= 0 {
		o.RecallRate = 0.7
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.Queries < 1 {
		return fmt.Errorf("synth: --queries %d: want at least 1", o.Queries)
	}
	if o.Depth < 1 || o.Depth > 100000 {
		return fmt.Errorf("synth: --depth %d: want 1..100000", o.Depth)
	}
	if !(o.RecallRate >= 0 && o.RecallRate <= 1) {
		return fmt.Errorf("synth: --recall %v: want 0..1", o.RecallRate)
	}
	if !(o.RankDecay >= 0 && o.RankDecay < 1) {
		return fmt.Errorf("synth: --rank-decay %v: want 0 (uniform ranks) or a value below 1", o.RankDecay)
	}
	return nil
}

// Generate returns query i.
func (o Options) Generate(i int) Query {
	o = o.withDefaults()
	r := rand.New(rand.NewPCG(o.Seed, uint64(i)))
	q := Query{ID: fmt.Sprintf("q%07d", i), Text: fmt.Sprintf("synthetic question %d", i)}
	nRel := 1 + r.IntN(9)
	seen := make(map[int]bool, nRel+o.Depth)
	doc := func() int {
		for {
			d := r.IntN(o.CorpusSize)
			if !seen[d] {
				seen[d] = true
				return d
			}
		}
	}
	rel := make([]int, nRel)
	for j := range rel {
		rel[j] = doc()
		q.Relevant = append(q.Relevant, docID(rel[j]))
		q.Grades = append(q.Grades, int32(1+r.IntN(5)))
	}
	// The gold set (relevant documents, grades, tags) is drawn before the
	// ranking, so it depends only on Seed and i: runs of different quality
	// share it.
	if o.Tags {
		q.Tags = [][2]string{{"category", categories[r.IntN(len(categories))]}, {"difficulty", difficulties[r.IntN(len(difficulties))]}}
	}
	ranking := make([]int, o.Depth)
	for j := range ranking {
		ranking[j] = -1
	}
	for _, d := range rel {
		if r.Float64() >= o.RecallRate {
			continue
		}
		if o.RankDecay == 0 {
			ranking[r.IntN(o.Depth)] = d // a later one may take the slot: fine
			continue
		}
		// A geometric rank by repeated draws (integers and comparisons
		// only, so every platform generates the same files), then the
		// next free rank.
		pos := 0
		for pos < o.Depth-1 && r.Float64() < o.RankDecay {
			pos++
		}
		for pos < o.Depth && ranking[pos] >= 0 {
			pos++
		}
		if pos < o.Depth {
			ranking[pos] = d
		}
	}
	for j := range ranking {
		if ranking[j] < 0 {
			ranking[j] = doc()
		}
	}
	score := float64(o.Depth) + 1
	for _, d := range ranking {
		score -= 0.1 + 0.9*r.Float64()
		q.Ranking = append(q.Ranking, docID(d))
		q.Scores = append(q.Scores, float64(int64(score*1e4))/1e4)
	}
	return q
}

func docID(d int) string { return "d" + strconv.Itoa(100000000 + d)[1:] }

// Paths returns the gold and run file names Write uses in dir.
func Paths(dir string, f schema.Format) (gold, run string) {
	switch f {
	case schema.FormatJSONL:
		return filepath.Join(dir, "gold.jsonl"), filepath.Join(dir, "run.jsonl")
	case schema.FormatArrow:
		return filepath.Join(dir, "gold.arrow"), filepath.Join(dir, "run.arrow")
	case schema.FormatParquet:
		return filepath.Join(dir, "gold.parquet"), filepath.Join(dir, "run.parquet")
	}
	return filepath.Join(dir, "gold.qrels"), filepath.Join(dir, "run.trec")
}

// chunk is the number of queries generated per parallel step.
const chunk = 4096

// Write generates the data and writes the gold set and the run to the two
// paths, atomically.
func Write(ctx context.Context, o Options, goldPath, runPath string) error {
	if err := o.Validate(); err != nil {
		return err
	}
	gf, err := atomicfile.Create(goldPath)
	if err != nil {
		return err
	}
	defer gf.Abort()
	rf, err := atomicfile.Create(runPath)
	if err != nil {
		return err
	}
	defer rf.Abort()
	var w sink
	switch o.Format {
	case schema.FormatTREC, schema.FormatAuto:
		w = &trecSink{gold: gf.Writer, run: rf.Writer}
	case schema.FormatJSONL:
		w = &jsonlSink{gold: gf.Writer, run: rf.Writer}
	case schema.FormatArrow, schema.FormatParquet:
		s, err := newArrowSink(gf, rf, o.Format)
		if err != nil {
			return err
		}
		w = s
	default:
		return fmt.Errorf("synth: cannot write format %v", o.Format)
	}
	closed := false
	defer func() {
		if !closed {
			w.close() // stops the record writers' goroutines; the files are aborted
		}
	}()
	// Generate chunks in parallel, write them in order.
	workers := runtime.GOMAXPROCS(0)
	type job struct {
		start int
		out   chan []Query
	}
	jobs := make(chan job, workers)
	order := make(chan job, 2*workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(order)
		defer close(jobs)
		for s := 0; s < o.Queries; s += chunk {
			j := job{start: s, out: make(chan []Query, 1)}
			select {
			case order <- j:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	done := make(chan struct{})
	for k := 0; k < workers; k++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range jobs {
				end := min(j.start+chunk, o.Queries)
				qs := make([]Query, 0, end-j.start)
				for i := j.start; i < end; i++ {
					qs = append(qs, o.Generate(i))
				}
				j.out <- qs
			}
		}()
	}
	var werr error
	for j := range order {
		qs := <-j.out
		if werr == nil {
			werr = w.write(qs)
			if werr != nil {
				cancel()
			}
		}
	}
	for k := 0; k < workers; k++ {
		<-done
	}
	if werr != nil {
		return werr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	closed = true
	if err := w.close(); err != nil {
		return err
	}
	if err := gf.Commit(); err != nil {
		return err
	}
	return rf.Commit()
}

type sink interface {
	write([]Query) error
	close() error
}

type trecSink struct {
	gold, run *bufio.Writer
	buf       []byte
}

func (s *trecSink) write(qs []Query) error {
	b := s.buf[:0]
	for _, q := range qs {
		for j, d := range q.Relevant {
			b = append(b, q.ID...)
			b = append(b, " 0 "...)
			b = append(b, d...)
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(q.Grades[j]), 10)
			b = append(b, '\n')
		}
	}
	if _, err := s.gold.Write(b); err != nil {
		return err
	}
	b = b[:0]
	for _, q := range qs {
		for j, d := range q.Ranking {
			b = append(b, q.ID...)
			b = append(b, " Q0 "...)
			b = append(b, d...)
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(j+1), 10)
			b = append(b, ' ')
			b = strconv.AppendFloat(b, q.Scores[j], 'f', 4, 64)
			b = append(b, " synth\n"...)
		}
	}
	s.buf = b
	_, err := s.run.Write(b)
	return err
}

func (s *trecSink) close() error { return nil }

type jsonlSink struct {
	gold, run io.Writer
	buf       []byte
}

func (s *jsonlSink) write(qs []Query) error {
	b := s.buf[:0]
	for _, q := range qs {
		b = appendGoldJSONL(b, q)
	}
	if _, err := s.gold.Write(b); err != nil {
		return err
	}
	b = b[:0]
	for _, q := range qs {
		b = fmt.Appendf(b, `{"query_id":%q,"retrieved_ids":[`, q.ID)
		for j, d := range q.Ranking {
			if j > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"id":%q,"score":`, d)
			b = strconv.AppendFloat(b, q.Scores[j], 'f', 4, 64)
			b = append(b, '}')
		}
		b = append(b, "]}\n"...)
	}
	s.buf = b
	_, err := s.run.Write(b)
	return err
}

func (s *jsonlSink) close() error { return nil }

// appendGoldJSONL appends q's gold line: id, text, graded relevant
// documents and tags.
func appendGoldJSONL(b []byte, q Query) []byte {
	b = fmt.Appendf(b, `{"query_id":%q,"query":%q,"relevance_map":{`, q.ID, q.Text)
	for j, d := range q.Relevant {
		if j > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%q:%d", d, q.Grades[j])
	}
	b = append(b, '}')
	if len(q.Tags) > 0 {
		b = append(b, `,"tags":{`...)
		for j, t := range q.Tags {
			if j > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "%q:%q", t[0], t[1])
		}
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// arrowSink writes list-form gold and run records.
type arrowSink struct {
	gold, run schema.RecordWriter
}

func newArrowSink(gf, rf io.Writer, f schema.Format) (*arrowSink, error) {
	g, err := schema.NewRecordWriter(gf, f, schema.GoldList())
	if err != nil {
		return nil, err
	}
	r, err := schema.NewRecordWriter(rf, f, schema.RunList())
	if err != nil {
		return nil, err
	}
	return &arrowSink{gold: g, run: r}, nil
}

func (s *arrowSink) write(qs []Query) error {
	n := len(qs)
	ids := schema.NewStrings(n, 8*n)
	text := schema.NewStrings(n, 24*n)
	docOff := make([]int32, 1, n+1)
	docs := schema.NewStrings(10*n, 90*n)
	var grades []int32
	tagOff := make([]int32, 1, n+1)
	tk, tv := schema.NewStrings(2*n, 16*n), schema.NewStrings(2*n, 16*n)
	runOff := make([]int32, 1, n+1)
	run := schema.NewStrings(n*len(qs[0].Ranking), 9*n*len(qs[0].Ranking))
	var scores []float64
	for _, q := range qs {
		ids.Append(q.ID)
		text.Append(q.Text)
		for j, d := range q.Relevant {
			docs.Append(d)
			grades = append(grades, q.Grades[j])
		}
		docOff = append(docOff, int32(docs.Len()))
		for _, t := range q.Tags {
			tk.Append(t[0])
			tv.Append(t[1])
		}
		tagOff = append(tagOff, int32(tk.Len()))
		for j, d := range q.Ranking {
			run.Append(d)
			scores = append(scores, q.Scores[j])
		}
		runOff = append(runOff, int32(run.Len()))
	}
	gold := schema.NewRecord(schema.GoldList(), []arrow.Array{
		ids.Array(), text.Array(),
		schema.ListArray(docOff, docs.Array(), nil),
		schema.ListArray(docOff, schema.Int32Array(grades, nil), nil),
		schema.MapArray(tagOff, tk.Array(), tv.Array(), nil),
	}, n)
	defer gold.Release()
	if err := s.gold.Write(gold); err != nil {
		return fmt.Errorf("write gold batch: %w", err)
	}
	runRec := schema.NewRecord(schema.RunList(), []arrow.Array{
		ids.Array(),
		schema.ListArray(runOff, run.Array(), nil),
		schema.ListArray(runOff, schema.Float64Array(scores), nil),
	}, n)
	defer runRec.Release()
	if err := s.run.Write(runRec); err != nil {
		return fmt.Errorf("write run batch: %w", err)
	}
	return nil
}

func (s *arrowSink) close() error {
	if err := s.gold.Close(); err != nil {
		return fmt.Errorf("finish gold file: %w", err)
	}
	if err := s.run.Close(); err != nil {
		return fmt.Errorf("finish run file: %w", err)
	}
	return nil
}
