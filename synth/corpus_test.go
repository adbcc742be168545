package synth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// writeCorpus writes a corpus and gold set and returns their bytes.
func writeCorpus(t *testing.T, o CorpusOptions) (corpus, gold []byte) {
	t.Helper()
	c, g := CorpusPaths(t.TempDir())
	if err := WriteCorpus(context.Background(), o, c, g); err != nil {
		t.Fatal(err)
	}
	corpus, err := os.ReadFile(c)
	if err != nil {
		t.Fatal(err)
	}
	gold, err = os.ReadFile(g)
	if err != nil {
		t.Fatal(err)
	}
	return corpus, gold
}

func TestCorpusDeterministic(t *testing.T) {
	o := CorpusOptions{Queries: 300, Seed: 5, Tags: true}
	c1, g1 := writeCorpus(t, o)
	c2, g2 := writeCorpus(t, o)
	if !bytes.Equal(c1, c2) || !bytes.Equal(g1, g2) {
		t.Fatal("the same options wrote different files")
	}
	o.Seed = 6
	c3, g3 := writeCorpus(t, o)
	if bytes.Equal(c1, c3) || bytes.Equal(g1, g3) {
		t.Fatal("another seed wrote the same files")
	}
	// Tags add tags and change nothing else.
	o.Seed, o.Tags = 5, false
	c4, g4 := writeCorpus(t, o)
	if !bytes.Equal(c1, c4) {
		t.Fatal("--tags changed the corpus")
	}
	untag := regexp.MustCompile(`,"tags":\{[^}]*\}`)
	if !bytes.Equal(untag.ReplaceAll(g1, nil), g4) {
		t.Fatal("--tags changed more of the gold set than its tags")
	}
}

// A fixed seed writes fixed bytes on every platform: the draws are
// integer draws only.
func TestCorpusGolden(t *testing.T) {
	c, g := writeCorpus(t, CorpusOptions{Queries: 50, Docs: 200, Seed: 1, Tags: true})
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:8]) }
	const wantCorpus, wantGold = "add99a5691768634", "13dac57d16088385"
	if sum(c) != wantCorpus || sum(g) != wantGold {
		t.Errorf("sha256 prefixes %s %s, want %s %s: the generator's output changed (update the figures in examples/retriever/README.md too)",
			sum(c), sum(g), wantCorpus, wantGold)
	}
}

type corpusLine struct {
	DocID string `json:"doc_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

type goldLine struct {
	QueryID      string            `json:"query_id"`
	Query        string            `json:"query"`
	RelevanceMap map[string]int    `json:"relevance_map"`
	Tags         map[string]string `json:"tags"`
}

func readLines[T any](t *testing.T, b []byte) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %d: %v: %s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, v)
	}
	return out
}

// Every relevant document exists, grades are 1-3 and every query has a
// primary (grade 3) document; tags are the documented ones.
func TestCorpusGoldMatchesCorpus(t *testing.T) {
	const queries = 400
	c, g := writeCorpus(t, CorpusOptions{Queries: queries, Seed: 2, Tags: true})
	docs := map[string]corpusLine{}
	for _, d := range readLines[corpusLine](t, c) {
		if _, dup := docs[d.DocID]; dup {
			t.Fatalf("document %s twice", d.DocID)
		}
		if d.Title == "" || len(strings.Fields(d.Text)) < minTextWords {
			t.Fatalf("document %s: title %q, %d words of text", d.DocID, d.Title, len(strings.Fields(d.Text)))
		}
		docs[d.DocID] = d
	}
	if len(docs) != DocsPerQuery*queries {
		t.Fatalf("%d documents, want %d", len(docs), DocsPerQuery*queries)
	}
	gold := readLines[goldLine](t, g)
	if len(gold) != queries {
		t.Fatalf("%d queries, want %d", len(gold), queries)
	}
	judged := map[string]bool{}
	difficulties := map[string]int{}
	for _, q := range gold {
		if strings.TrimSpace(q.Query) == "" || len(q.RelevanceMap) == 0 || len(q.RelevanceMap) > 5 {
			t.Fatalf("query %s: text %q, %d relevant documents", q.QueryID, q.Query, len(q.RelevanceMap))
		}
		primary := 0
		for d, grade := range q.RelevanceMap {
			if _, ok := docs[d]; !ok {
				t.Fatalf("query %s: relevant document %s is not in the corpus", q.QueryID, d)
			}
			if grade < 1 || grade > 3 {
				t.Fatalf("query %s: document %s graded %d", q.QueryID, d, grade)
			}
			if grade == 3 {
				primary++
			}
			judged[d] = true
		}
		if primary == 0 {
			t.Errorf("query %s: no primary document", q.QueryID)
		}
		if len(q.Tags) != 2 || q.Tags["category"] == "" {
			t.Fatalf("query %s: tags %v", q.QueryID, q.Tags)
		}
		difficulties[q.Tags["difficulty"]]++
	}
	for _, d := range difficulties {
		if d < queries/6 {
			t.Errorf("difficulties %v: want easy, medium and hard, each common", difficulties)
		}
	}
	// Most documents are judged for no query: they compete.
	if share := float64(len(judged)) / float64(len(docs)); share < 0.3 || share > 0.8 {
		t.Errorf("%.2f of the documents are relevant to a query: want about a third to two thirds", share)
	}
}

// A query's words are its subject's words: its primary documents hold
// most key words of an easy query (in some form), and two of the three
// at least.
func TestCorpusQueriesUseDocumentWords(t *testing.T) {
	c, g := writeCorpus(t, CorpusOptions{Queries: 300, Seed: 3, Tags: true})
	docs := map[string]string{}
	for _, d := range readLines[corpusLine](t, c) {
		docs[d.DocID] = strings.ToLower(d.Title + " " + d.Text)
	}
	stops := map[string]bool{}
	for _, f := range queryFrames {
		for _, w := range strings.Fields(f) {
			stops[w] = true
		}
	}
	words, found := 0, 0
	for _, q := range readLines[goldLine](t, g) {
		if q.Tags["difficulty"] != "easy" {
			continue
		}
		var primary string
		for d, grade := range q.RelevanceMap {
			if grade == 3 {
				primary += docs[d] + " "
			}
		}
		inQuery, inDoc := 0, 0
		for _, w := range strings.Fields(q.Query) {
			if stops[w] {
				continue
			}
			inQuery++
			if strings.Contains(primary, stem(w)) {
				inDoc++
			}
		}
		if inQuery != keyWords || inDoc < 2 {
			t.Errorf("query %s %q: %d of its %d key words are in its primary documents", q.QueryID, q.Query, inDoc, inQuery)
		}
		words += inQuery
		found += inDoc
	}
	if words < 200 || float64(found) < 0.95*float64(words) {
		t.Fatalf("%d of the %d words of easy queries are in their primary documents: want 95%%", found, words)
	}
}

func stem(w string) string {
	for _, s := range suffixes[1:] {
		if b, ok := strings.CutSuffix(w, s); ok && len(b) >= 5 {
			return b
		}
	}
	return w
}

// No form of a word is a word or a form of another word, and every word
// follows the letter rules that keep Porter's step 1 from changing the
// stem (the example retriever's tests check the stemmer on such words).
func TestPseudoWordForms(t *testing.T) {
	m := newCorpusModel(CorpusOptions{Queries: 2000, Docs: 30_000, Seed: 1}.withDefaults())
	words := append([]string(nil), m.background...)
	for _, tw := range m.topics {
		words = append(words, tw...)
	}
	shape := regexp.MustCompile("^([" + consonants + "][" + vowels + "]){2,3}[" + finals + "]$")
	forms := map[string]string{}
	for _, w := range words {
		if !shape.MatchString(w) {
			t.Fatalf("word %q does not follow the letter rules", w)
		}
		for _, s := range suffixes {
			if other, dup := forms[w+s]; dup {
				t.Fatalf("%q is a form of both %q and %q", w+s, other, w)
			}
			forms[w+s] = w
		}
	}
	if len(words) != backgroundWords+len(m.topics)*topicWords {
		t.Fatalf("%d words", len(words))
	}
}

func TestCorpusValidate(t *testing.T) {
	for _, o := range []CorpusOptions{{Queries: 0}, {Queries: 1, Docs: -1}, {Queries: 1, Docs: MaxCorpusDocs + 1},
		{Queries: MaxCorpusDocs/DocsPerQuery + 1}} {
		if o.Validate() == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	// Fewer documents than queries: queries share subjects, and every
	// query still has relevant documents.
	_, g := writeCorpus(t, CorpusOptions{Queries: 50, Docs: 7, Seed: 1})
	for _, q := range readLines[goldLine](t, g) {
		if len(q.RelevanceMap) == 0 {
			t.Fatalf("query %s has no relevant document", q.QueryID)
		}
	}
}

func BenchmarkWriteCorpus(b *testing.B) {
	dir := b.TempDir()
	c, g := CorpusPaths(dir)
	for b.Loop() {
		if err := WriteCorpus(context.Background(), CorpusOptions{Queries: 2000, Seed: 1, Tags: true}, c, g); err != nil {
			b.Fatal(err)
		}
	}
}
