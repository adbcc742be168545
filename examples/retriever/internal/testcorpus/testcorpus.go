// Package testcorpus writes corpora for the tests of the example
// retriever: hand-written documents whose rankings the tests check, among
// generated filler documents that give the index realistic statistics
// (thousands of documents, a Zipf-like vocabulary, stop words). The
// filler never uses a word of the hand-written documents.
package testcorpus

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Doc is one document of a test corpus.
type Doc struct {
	ID    string `json:"doc_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Known documents. Their words appear nowhere else in the corpus, except
// where a comment says so.
var Known = []Doc{
	// Only the title names its subject: the baseline (text only) cannot
	// find it by those words, the candidate ranks it first.
	{ID: "quokka-survey", Title: "Quokka habitat survey", Text: "Counted on the island during two dry seasons, near the ferry landing."},
	// Mentions the quokka once, in its text.
	{ID: "ferry-notes", Title: "Ferry timetable notes", Text: "The ferry leaves at nine. A quokka sat near the ticket office."},
	// Inflected forms only: "connected" finds it by stemming alone.
	{ID: "router-faq", Title: "Router questions", Text: "Connections drop when the router overheats; connecting it again restores the links."},
	// The same words in both: equal scores, ranked by id.
	{ID: "twin-a", Title: "Twin page", Text: "xylograph marquetry"},
	{ID: "twin-b", Title: "Twin page", Text: "xylograph marquetry"},
	// Term frequency and length for the BM25 check (no stop words, so the
	// text's length in tokens is its number of words).
	{ID: "bm25-one", Title: "Plain", Text: "zymurgy alpha beta gamma delta epsilon"},
	{ID: "bm25-three", Title: "Plain", Text: "zymurgy zymurgy zymurgy alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"},
	// Pseudo-word forms, as evalgate gen --corpus writes them.
	{ID: "forms", Title: "Forms", Text: "bikading tolumars"},
}

// Write writes the known documents among fillers generated ones (seeded:
// the same corpus every time) to dir/corpus.jsonl and returns its path.
func Write(dir string, fillers int) (string, error) {
	path := filepath.Join(dir, "corpus.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	r := rand.New(rand.NewPCG(1, 2))
	vocab := fillerWords(r, 2000)
	total := fillers + len(Known)
	step := total / len(Known) // the known documents are spread evenly
	for i := range total {
		d := Doc{ID: "filler-" + strconv.Itoa(i), Title: sentence(r, vocab, 3), Text: sentence(r, vocab, 20+r.IntN(120))}
		if k := i / step; i%step == 0 && k < len(Known) {
			d = Known[k]
		}
		if err := enc.Encode(d); err != nil {
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	return path, f.Close()
}

var stop = []string{"the", "of", "and", "to", "in", "a", "is", "for", "on", "with"}

// fillerWords returns n distinct words that no known document uses:
// consonant-vowel syllables of "hjwcqx" and "eu".
func fillerWords(r *rand.Rand, n int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteByte("hjwcqx"[r.IntN(6)])
			b.WriteByte("eu"[r.IntN(2)])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// sentence returns n words: stop words and vocabulary words, the latter
// Zipf-like (rank i drawn about 1/(i+1) as often as rank 0).
func sentence(r *rand.Rand, vocab []string, n int) string {
	words := make([]string, n)
	for i := range words {
		if r.IntN(4) == 0 {
			words[i] = stop[r.IntN(len(stop))]
			continue
		}
		rank := int(float64(len(vocab)) * r.Float64() * r.Float64() * r.Float64())
		words[i] = vocab[rank]
	}
	return strings.Join(words, " ")
}
