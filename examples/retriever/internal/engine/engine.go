package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/examples/retriever/internal/corpus"
)

// Mode names a search strategy.
type Mode string

// The modes; see the package documentation.
const (
	Baseline  Mode = "baseline"
	Candidate Mode = "candidate"
)

// Modes lists every mode, baseline first.
var Modes = []Mode{Baseline, Candidate}

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q: want baseline or candidate", s)
}

// TitleBoost is how much more a query term found in the title weighs than
// one found in the text, in candidate mode.
const TitleBoost = 2.0

// MaxK is the most hits a search returns.
const MaxK = 1000

// BatchSize is the number of documents indexed per bleve batch.
const BatchSize = 1000

// Index fields. The document properties are title and text; each is
// indexed under the names below, one per analyzer.
const (
	fieldTitle   = "title"    // stored for display, not indexed
	fieldText    = "text"     // standard analyzer: baseline
	fieldTextEn  = "text_en"  // English analyzer: candidate
	fieldTitleEn = "title_en" // English analyzer: candidate
)

// statsKey is the internal key under which the index keeps its Stats.
var statsKey = []byte("evalgate.retriever.stats")

// Errors about the index directory.
var (
	// ErrOtherCorpus is returned by Load when a persisted index was built
	// from a corpus file with other content.
	ErrOtherCorpus = errors.New("index built from another corpus")
	// ErrNotIndex is returned by Open for a directory that holds no index
	// this service built, and by Build for a directory that exists.
	ErrNotIndex = errors.New("not an index of this service")
)

// Stats describes what an index holds.
type Stats struct {
	Docs int `json:"docs"`
	// FieldTokens is the number of tokens each searched field holds over
	// all documents, after analysis (stop words removed).
	FieldTokens map[string]int `json:"field_tokens"`
	// CorpusSHA256 identifies the corpus file the index was built from.
	CorpusSHA256 string `json:"corpus_sha256"`
}

// Hit is one search result.
type Hit struct {
	ID    string
	Score float64
	Title string
}

// Result is the answer to one search.
type Result struct {
	Hits  []Hit // best first
	Total uint64
	Took  time.Duration
}

// Engine is an open index.
type Engine struct {
	idx   bleve.Index
	stats Stats
	bm25  *search.BM25Stats
}

// newMapping returns the index mapping: title stored and analysed by the
// English analyzer, text analysed by both analyzers, BM25 scoring.
func newMapping() *mapping.IndexMappingImpl {
	field := func(name, analyzer string, store bool) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Name = name
		f.Analyzer = analyzer
		f.Store = store
		f.Index = analyzer != ""
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("title", field(fieldTitle, "", true), field(fieldTitleEn, en.AnalyzerName, false))
	doc.AddFieldMappingsAt("text", field(fieldText, standard.Name, false), field(fieldTextEn, en.AnalyzerName, false))
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = standard.Name
	m.ScoringModel = "bm25"
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m
}

// Load returns the index the service runs on. With dir empty it builds
// one in memory from corpusPath. Otherwise it opens the index in dir if
// there is one (and, when corpusPath is given, checks that it was built
// from a file with the same content, or returns ErrOtherCorpus), or builds
// it there from corpusPath.
func Load(ctx context.Context, corpusPath, dir string, log zerolog.Logger) (*Engine, error) {
	if dir == "" {
		return Build(ctx, corpusPath, "", log)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if corpusPath == "" {
			return nil, fmt.Errorf("open index %s: no index there, and no corpus to build it from", dir)
		}
		return Build(ctx, corpusPath, dir, log)
	}
	e, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if corpusPath != "" {
		digest, err := corpus.Digest(corpusPath)
		if err != nil {
			e.Close()
			return nil, err
		}
		if digest != e.stats.CorpusSHA256 {
			e.Close()
			return nil, fmt.Errorf("open index %s: %w: %s differs from the file it was built from; remove %s to rebuild",
				dir, ErrOtherCorpus, corpusPath, dir)
		}
	}
	log.Info().Str("index", dir).Int("docs", e.stats.Docs).Msg("opened index")
	return e, nil
}

// Open opens an index Build persisted in dir.
func Open(dir string) (*Engine, error) {
	idx, err := bleve.Open(dir)
	if errors.Is(err, bleve.ErrorIndexMetaMissing) {
		return nil, fmt.Errorf("open index %s: %w: %w", dir, ErrNotIndex, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", dir, err)
	}
	raw, err := idx.GetInternal(statsKey)
	if err != nil || raw == nil {
		idx.Close()
		return nil, fmt.Errorf("open index %s: %w (no statistics)", dir, ErrNotIndex)
	}
	var st Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		idx.Close()
		return nil, fmt.Errorf("open index %s: read statistics: %w", dir, err)
	}
	return newEngine(idx, st), nil
}

// Build indexes the corpus file, in memory when dir is empty, else in dir,
// which must not exist: the index is built beside it and renamed into
// place when complete, so a failed or cancelled build leaves nothing.
func Build(ctx context.Context, corpusPath, dir string, log zerolog.Logger) (_ *Engine, err error) {
	start := time.Now()
	st := Stats{}
	if dir != "" {
		if _, err := os.Stat(dir); err == nil {
			return nil, fmt.Errorf("build index %s: %w: the directory exists", dir, ErrNotIndex)
		}
		if st.CorpusSHA256, err = corpus.Digest(corpusPath); err != nil {
			return nil, err
		}
	}
	r, err := corpus.Open(corpusPath)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	path, tmp := "", ""
	if dir != "" {
		if tmp, err = os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".build-*"); err != nil {
			return nil, fmt.Errorf("build index %s: %w", dir, err)
		}
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "index")
	}
	m := newMapping()
	idx, err := bleve.NewUsing(path, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("create index: %w", err)
	}
	open := true
	defer func() {
		if err != nil && open {
			idx.Close()
		}
	}()
	if st, err = addDocs(ctx, idx, m, r, st, log); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode statistics: %w", err)
	}
	if err := idx.SetInternal(statsKey, raw); err != nil {
		return nil, fmt.Errorf("store statistics: %w", err)
	}
	log.Info().Str("corpus", corpusPath).Int("docs", st.Docs).Dur("took", time.Since(start)).
		Str("index", orMemory(dir)).Msg("indexed corpus")
	if dir == "" {
		return newEngine(idx, st), nil
	}
	open = false
	if err := idx.Close(); err != nil {
		return nil, fmt.Errorf("write index: %w", err)
	}
	if err := os.Rename(path, dir); err != nil {
		return nil, fmt.Errorf("build index %s: %w", dir, err)
	}
	return Open(dir)
}

// addDocs adds every document of r to idx in batches, counting the
// tokens of the searched fields into st.
func addDocs(ctx context.Context, idx bleve.Index, m mapping.IndexMapping, r *corpus.Reader, st Stats, log zerolog.Logger) (Stats, error) {
	std, eng := m.AnalyzerNamed(standard.Name), m.AnalyzerNamed(en.AnalyzerName)
	if std == nil || eng == nil {
		return st, errors.New("create index: analyzers not registered")
	}
	tokens := map[string]int{}
	b := idx.NewBatch()
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("index corpus: %w", err)
		}
		if err := idx.Batch(b); err != nil {
			return fmt.Errorf("index corpus: %w", err)
		}
		b.Reset()
		log.Debug().Int("docs", st.Docs).Msg("indexing")
		return nil
	}
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		tokens[fieldText] += count(std, d.Text)
		tokens[fieldTextEn] += count(eng, d.Text)
		tokens[fieldTitleEn] += count(eng, d.Title)
		if err := b.Index(d.ID, map[string]any{"title": d.Title, "text": d.Text}); err != nil {
			return st, fmt.Errorf("index document %q: %w", d.ID, err)
		}
		st.Docs++
		if b.Size() >= BatchSize {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	if st.Docs == 0 {
		return st, fmt.Errorf("index corpus: %w: no documents", corpus.ErrBadInput)
	}
	st.FieldTokens = tokens
	return st, nil
}

// count returns the number of tokens a analyses s into: the field length
// bleve's BM25 divides by the average.
func count(a analysis.Analyzer, s string) int {
	if s == "" {
		return 0
	}
	return len(a.Analyze([]byte(s)))
}

func newEngine(idx bleve.Index, st Stats) *Engine {
	return &Engine{idx: idx, stats: st, bm25: &search.BM25Stats{DocCount: float64(st.Docs), FieldCardinality: st.FieldTokens}}
}

// Stats returns what the index holds.
func (e *Engine) Stats() Stats { return e.stats }

// AverageLength returns the average length, in tokens, of an indexed field
// as BM25 uses it (rounded up, as bleve does).
func (e *Engine) AverageLength(field string) float64 {
	return math.Ceil(float64(e.stats.FieldTokens[field]) / float64(e.stats.Docs))
}

// Close closes the index.
func (e *Engine) Close() error { return e.idx.Close() }

// Search returns the k best documents for q in mode m. A query with no
// term left after analysis (only stop words, say) matches nothing.
func (e *Engine) Search(ctx context.Context, q string, k int, m Mode) (Result, error) {
	if k < 1 || k > MaxK {
		return Result{}, fmt.Errorf("search: k %d: want 1..%d", k, MaxK)
	}
	var qq query.Query
	switch m {
	case Baseline:
		qq = match(q, fieldText, standard.Name, 1)
	case Candidate:
		qq = bleve.NewDisjunctionQuery(match(q, fieldTextEn, en.AnalyzerName, 1), match(q, fieldTitleEn, en.AnalyzerName, TitleBoost))
	default:
		return Result{}, fmt.Errorf("search: unknown mode %q", m)
	}
	req := bleve.NewSearchRequestOptions(qq, k, 0, false)
	req.Fields = []string{fieldTitle}
	req.SortBy([]string{"-_score", "_id"})
	ctx = context.WithValue(ctx, search.BM25StatsKey, e.bm25)
	res, err := e.idx.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	out := Result{Hits: make([]Hit, len(res.Hits)), Total: res.Total, Took: res.Took}
	for i, h := range res.Hits {
		title, _ := h.Fields[fieldTitle].(string)
		out.Hits[i] = Hit{ID: h.ID, Score: h.Score, Title: title}
	}
	return out, nil
}

// match returns a query for any term of q in field, q analysed by
// analyzer. The analyzer is named explicitly: bleve looks a field's
// analyzer up by document property, not by field name, and so would
// analyse a query on title_en with the default (standard) analyzer.
func match(q, field, analyzer string, boost float64) query.Query {
	mq := bleve.NewMatchQuery(q)
	mq.SetField(field)
	mq.Analyzer = analyzer
	if boost != 1 {
		mq.SetBoost(boost)
	}
	return mq
}

func orMemory(dir string) string {
	if dir == "" {
		return "memory"
	}
	return dir
}
