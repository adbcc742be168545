package synth

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"

	"github.com/evalgate/evalgate/internal/atomicfile"
)

// CorpusOptions describes a synthetic corpus and a gold set of queries
// that a lexical search engine can answer over it (see WriteCorpus).
type CorpusOptions struct {
	Queries int
	// Docs is the number of documents (default DocsPerQuery·Queries).
	Docs int
	Seed uint64
	// Tags adds category (the topic's) and difficulty tags to the gold set.
	Tags bool
}

// DocsPerQuery is the default ratio of documents to queries: about a
// third of the documents are relevant to some query, the rest compete.
const DocsPerQuery = 5

// MaxCorpusDocs bounds Docs.
const MaxCorpusDocs = 10_000_000

func (o CorpusOptions) withDefaults() CorpusOptions {
	if o.Docs <= 0 {
		o.Docs = DocsPerQuery * o.Queries
	}
	return o
}

// Validate checks the options.
func (o CorpusOptions) Validate() error {
	if o.Queries < 1 {
		return fmt.Errorf("synth: --queries %d: want at least 1", o.Queries)
	}
	if o.Docs < 0 || o.Docs > MaxCorpusDocs {
		return fmt.Errorf("synth: --docs %d: want 1..%d (0: %d per query)", o.Docs, MaxCorpusDocs, DocsPerQuery)
	}
	if o.withDefaults().Docs > MaxCorpusDocs {
		return fmt.Errorf("synth: --queries %d: %d documents by default, over %d; give --docs", o.Queries, DocsPerQuery*o.Queries, MaxCorpusDocs)
	}
	return nil
}

// CorpusPaths returns the corpus and gold file names WriteCorpus uses in dir.
func CorpusPaths(dir string) (corpus, gold string) {
	return filepath.Join(dir, "corpus.jsonl"), filepath.Join(dir, "gold.jsonl")
}

// WriteCorpus writes the corpus (JSON Lines: doc_id, title, text) and the
// gold set (JSON Lines: query_id, query, relevance_map graded 1-3, tags
// with o.Tags) to the two paths, atomically. The output depends only on
// the options.
//
// # Model
//
// Words are pseudo-words (consonant-vowel syllables such as "bikad" or
// "tolumar") drawn from a background vocabulary shared by all documents
// and from one vocabulary per topic, both Zipf-distributed, mixed with
// real English stop words. Documents come in clusters of 1 to 5, each
// about a subject: a topic and three key words of it, each shared by a
// few subjects, so a query's words also match documents about other
// subjects, and its topic's common words match most documents of the
// topic. The first document of a cluster is primary (grade 3: two key
// words in the title, the key words often in the text); each other one is
// primary too, treats the subject (grade 2: one key word in the title) or
// mentions it (grade 1: one or two of the key words, less often), at
// equal odds. Every word occurrence is
// written in one of four forms (bikad 70%, bikads, bikading, bikaded) that
// Porter stemming maps to one term and a plain analyzer keeps apart.
//
// A query is about one subject and its relevant documents are that
// subject's cluster. Its difficulty (easy 40%, medium 35%, hard 25%) sets
// its words: easy queries name the three key words, mostly in their base
// form; medium ones two of them, more often inflected, and a common word
// of the topic; hard ones one or two key words in any form and a common
// word of the topic. So BM25 finds most relevant documents but not all,
// stemming finds more, and weighing title matches puts primary documents
// first (examples/retriever/README.md has the figures).
func WriteCorpus(ctx context.Context, o CorpusOptions, corpusPath, goldPath string) error {
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	m := newCorpusModel(o)
	cf, err := atomicfile.Create(corpusPath)
	if err != nil {
		return err
	}
	defer cf.Abort()
	gf, err := atomicfile.Create(goldPath)
	if err != nil {
		return err
	}
	defer gf.Abort()
	var b []byte
	for d := range o.Docs {
		if d%chunk == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b = m.appendDoc(b[:0], d)
		if _, err := cf.Write(b); err != nil {
			return fmt.Errorf("write %s: %w", corpusPath, err)
		}
	}
	for j := range o.Queries {
		if j%chunk == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b = appendGoldJSONL(b[:0], m.query(j))
		if _, err := gf.Write(b); err != nil {
			return fmt.Errorf("write %s: %w", goldPath, err)
		}
	}
	if err := cf.Commit(); err != nil {
		return err
	}
	return gf.Commit()
}

// Sizes and rates of the model, in per mille where named so; every draw
// is an integer draw, so every platform writes the same bytes.
const (
	backgroundWords = 3000
	topicWords      = 150
	docsPerTopic    = 300 // documents per topic, on average
	keyWords        = 3   // per subject
	stopPerMille    = 300 // share of stop words among the words of a text
	topicPerMille   = 300 // share of topic words among the other words
	minTextWords    = 40  // content words (not stop words) of a text
	maxTextWords    = 160 //
	zipfScale       = 1 << 24
	keyZipfOffset   = 20      // key words: weights 1/(rank+20); text words 1/(rank+2)
	rngDocs         = 1 << 60 // generator streams, or'ed with the index
	rngQueries      = 2 << 60
	rngSubjects     = 3 << 60
	rngModel        = 4 << 60
)

// keyPerMille is the share of a subject's key words among the content
// words of a document of each grade (index: grade).
var keyPerMille = [4]int{0, 70, 100, 150}

// Word forms, and how often texts use each (per mille).
var (
	suffixes     = []string{"", "s", "ing", "ed"}
	formPerMille = []int{700, 150, 75, 75}
)

// Real English words: stop words (every analyzer drops them) for texts
// and query frames, and generic title words.
var (
	stopWords = []string{"the", "of", "and", "to", "in", "a", "is", "for", "on", "with", "as", "by",
		"at", "from", "this", "that", "it", "are", "be", "or", "an", "which", "can", "should", "when", "all"}
	queryFrames = []string{"", "", "", "how to", "what is the", "how do i", "which", "when should i", "the"}
	titleWords  = []string{"Guide", "Overview", "Notes", "FAQ", "Basics", "Checklist", "Handbook", "Primer"}
)

// Letters of pseudo-words. No e or y, and a last consonant that Porter's
// step 1 leaves alone after removing -s, -ing or -ed (no t, l, z: "at",
// "bl", "iz" get an e back), with at least two vowel-consonant pairs: so
// every form of a word stems to the word itself, and no form of one word
// is a form of another.
const (
	consonants = "bdfgklmnprstvz"
	vowels     = "aiou"
	finals     = "dfgkmnprv"
)

// corpusModel holds what documents and queries are drawn from.
type corpusModel struct {
	o          CorpusOptions
	background []string
	topics     [][]string // topic -> its words
	bgZipf     zipf       // background words
	topicZipf  zipf       // a topic's words in texts, titles and queries
	subjects   []subject
	docSubject []int32 // document -> subject
	docGrade   []int8  // document -> grade for its subject
	// The documents of subject s are members[memberStart[s]:memberStart[s+1]],
	// in corpus order.
	memberStart []int32
	members     []int32
	queryOrder  []int32 // query j is about subject queryOrder[j % len]
}

type subject struct {
	topic int
	keys  [keyWords]int // indices into the topic's words, most prominent first
}

func newCorpusModel(o CorpusOptions) *corpusModel {
	r := rand.New(rand.NewPCG(o.Seed, rngModel))
	nTopics := min(max(o.Docs/docsPerTopic, 5), 2000)
	m := &corpusModel{o: o, bgZipf: newZipf(backgroundWords, 1), topicZipf: newZipf(topicWords, 2)}
	seen := map[string]bool{}
	m.background = pseudoWords(r, backgroundWords, seen)
	m.topics = make([][]string, nTopics)
	for t := range m.topics {
		m.topics[t] = pseudoWords(r, topicWords, seen)
	}
	// Clusters of 1-5 documents (3 on average), the first one primary,
	// until every document has one; then the documents are shuffled.
	keyZipf := newZipf(topicWords, keyZipfOffset)
	m.docSubject = make([]int32, 0, o.Docs)
	m.docGrade = make([]int8, 0, o.Docs)
	for n := 0; n < o.Docs; {
		size := min(1+r.IntN(5), o.Docs-n)
		s := len(m.subjects)
		m.subjects = append(m.subjects, newSubject(o.Seed, s, nTopics, keyZipf))
		for i := range size {
			g := int8(3)
			if i > 0 {
				g = int8(1 + r.IntN(3))
			}
			m.docSubject = append(m.docSubject, int32(s))
			m.docGrade = append(m.docGrade, g)
		}
		n += size
	}
	r.Shuffle(o.Docs, func(i, j int) {
		m.docSubject[i], m.docSubject[j] = m.docSubject[j], m.docSubject[i]
		m.docGrade[i], m.docGrade[j] = m.docGrade[j], m.docGrade[i]
	})
	m.memberStart = make([]int32, len(m.subjects)+1)
	for _, s := range m.docSubject {
		m.memberStart[s+1]++
	}
	for s := range m.subjects {
		m.memberStart[s+1] += m.memberStart[s]
	}
	m.members = make([]int32, o.Docs)
	next := slices.Clone(m.memberStart[:len(m.subjects)])
	for d, s := range m.docSubject {
		m.members[next[s]] = int32(d)
		next[s]++
	}
	m.queryOrder = make([]int32, len(m.subjects))
	for i, p := range r.Perm(len(m.subjects)) {
		m.queryOrder[i] = int32(p)
	}
	return m
}

// newSubject draws subject s: a topic and its key words, from a flatter
// distribution than the topic's words in texts, so that a key word is
// shared by a few subjects, not by most.
func newSubject(seed uint64, s, nTopics int, keys zipf) subject {
	r := rand.New(rand.NewPCG(seed, rngSubjects|uint64(s)))
	sub := subject{topic: r.IntN(nTopics)}
	for i := range sub.keys {
		for {
			w := keys.draw(r)
			if !slices.Contains(sub.keys[:i], w) {
				sub.keys[i] = w
				break
			}
		}
	}
	return sub
}

// pseudoWords returns n new distinct words (recorded in seen) of 5 or 7
// letters.
func pseudoWords(r *rand.Rand, n int, seen map[string]bool) []string {
	out := make([]string, 0, n)
	var b []byte
	for len(out) < n {
		b = b[:0]
		pairs := 2 + r.IntN(2) // consonant-vowel pairs
		for range pairs {
			b = append(b, consonants[r.IntN(len(consonants))], vowels[r.IntN(len(vowels))])
		}
		b = append(b, finals[r.IntN(len(finals))])
		if w := string(b); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// zipf draws ranks 0..n-1 with probability proportional to 1/(rank+offset),
// by integer weights.
type zipf struct{ cum []uint64 }

func newZipf(n, offset int) zipf {
	z := zipf{cum: make([]uint64, n)}
	var total uint64
	for i := range n {
		total += zipfScale / uint64(i+offset)
		z.cum[i] = total
	}
	return z
}

func (z zipf) draw(r *rand.Rand) int {
	u := r.Uint64N(z.cum[len(z.cum)-1])
	return sort.Search(len(z.cum), func(i int) bool { return z.cum[i] > u })
}

// pick returns an index drawn with the given weights (per mille).
func pick(r *rand.Rand, perMille []int) int {
	u := r.IntN(1000)
	for i, p := range perMille {
		if u < p {
			return i
		}
		u -= p
	}
	return len(perMille) - 1
}

// appendWord appends w in a random form (or form f when f >= 0).
func appendWord(b []byte, r *rand.Rand, w string, f int, capital bool) []byte {
	if f < 0 {
		f = pick(r, formPerMille)
	}
	start := len(b)
	b = append(b, w...)
	b = append(b, suffixes[f]...)
	if capital {
		b[start] -= 'a' - 'A'
	}
	return b
}

// appendDoc appends document d's JSON line.
func (m *corpusModel) appendDoc(b []byte, d int) []byte {
	r := rand.New(rand.NewPCG(m.o.Seed, rngDocs|uint64(d)))
	sub := m.subjects[m.docSubject[d]]
	grade := int(m.docGrade[d])
	topic := m.topics[sub.topic]
	// The key words this document uses: all of them, or one or two when
	// it only mentions the subject.
	keys := sub.keys[:]
	if grade == 1 {
		keys = keys[:1+r.IntN(2)]
	}
	b = append(b, `{"doc_id":"`...)
	b = append(b, docID(d)...)
	b = append(b, `","title":"`...)
	b = m.appendTitle(b, r, sub, grade)
	b = append(b, `","text":"`...)
	n := minTextWords + r.IntN(maxTextWords-minTextWords+1)
	sentence, capital, start := 0, true, len(b)
	for i := 0; i < n; {
		if sentence == 0 {
			sentence = 6 + r.IntN(11)
		}
		if len(b) > start {
			b = append(b, ' ')
		}
		if r.IntN(1000) < stopPerMille {
			b = appendWord(b, r, stopWords[r.IntN(len(stopWords))], 0, capital)
		} else {
			i++
			switch u := r.IntN(1000); {
			case u < keyPerMille[grade]:
				b = appendWord(b, r, topic[keys[keyRank(r, len(keys))]], -1, capital)
			case u < keyPerMille[grade]+topicPerMille:
				b = appendWord(b, r, topic[m.topicZipf.draw(r)], -1, capital)
			default:
				b = appendWord(b, r, m.background[m.bgZipf.draw(r)], -1, capital)
			}
		}
		capital = false
		if sentence--; sentence == 0 || i == n {
			b = append(b, '.')
			capital = true
		}
	}
	return append(b, "\"}\n"...)
}

// keyRank draws which of n key words to write: the first most often.
func keyRank(r *rand.Rand, n int) int {
	switch u := r.IntN(10); {
	case u < 5 || n == 1:
		return 0
	case u < 8 || n == 2:
		return 1
	}
	return 2
}

// appendTitle appends a title: two key words and a topic word for the
// primary document, at most one key word for the others.
func (m *corpusModel) appendTitle(b []byte, r *rand.Rand, sub subject, grade int) []byte {
	topic := m.topics[sub.topic]
	var words []string
	switch grade {
	case 3:
		words = append(words, topic[sub.keys[0]], topic[sub.keys[1+r.IntN(2)]])
	case 2:
		words = append(words, topic[sub.keys[r.IntN(keyWords)]])
	default:
		if r.IntN(3) == 0 {
			words = append(words, topic[sub.keys[0]])
		}
	}
	for len(words) < 3 {
		words = append(words, topic[m.topicZipf.draw(r)])
	}
	r.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	for i, w := range words {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendWord(b, r, w, -1, true)
	}
	if r.IntN(2) == 0 {
		b = append(b, ' ')
		b = append(b, titleWords[r.IntN(len(titleWords))]...)
	}
	return b
}

// query returns query j: its text, its subject's documents with their
// grades (in corpus order), and tags.
func (m *corpusModel) query(j int) Query {
	r := rand.New(rand.NewPCG(m.o.Seed, rngQueries|uint64(j)))
	s := m.queryOrder[j%len(m.queryOrder)]
	sub := m.subjects[s]
	topic := m.topics[sub.topic]
	q := Query{ID: fmt.Sprintf("q%07d", j)}
	diff := pick(r, []int{400, 350, 250})
	keys := slices.Clone(sub.keys[:])
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var words []string
	var forms []int
	switch diff {
	case 0: // easy: the key words, mostly as they are
		for _, k := range keys {
			words = append(words, topic[k])
			forms = append(forms, pick(r, []int{800, 100, 50, 50}))
		}
	case 1: // medium: two key words and a word of the topic, any form
		for _, k := range keys[:2] {
			words = append(words, topic[k])
			forms = append(forms, pick(r, []int{600, 200, 100, 100}))
		}
		words = append(words, topic[m.topicZipf.draw(r)])
		forms = append(forms, -1)
	default: // hard: one or two key words in any form, and a word of the topic
		for _, k := range keys[:1+r.IntN(2)] {
			words = append(words, topic[k])
			forms = append(forms, pick(r, []int{400, 200, 200, 200}))
		}
		words = append(words, topic[m.topicZipf.draw(r)])
		forms = append(forms, -1)
	}
	perm := r.Perm(len(words))
	var b []byte
	if frame := queryFrames[r.IntN(len(queryFrames))]; frame != "" {
		b = append(b, frame...)
		b = append(b, ' ')
	}
	for i, p := range perm {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendWord(b, r, words[p], forms[p], false)
	}
	q.Text = string(b)
	for _, d := range m.members[m.memberStart[s]:m.memberStart[s+1]] {
		q.Relevant = append(q.Relevant, docID(int(d)))
		q.Grades = append(q.Grades, int32(m.docGrade[d]))
	}
	if m.o.Tags {
		q.Tags = [][2]string{{"category", categories[sub.topic%len(categories)]}, {"difficulty", difficulties[diff]}}
	}
	return q
}
