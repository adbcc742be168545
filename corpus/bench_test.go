package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
)

// benchCorpus is about 32 MB of passages shaped like MS MARCO's (8.8M
// passages of 56 words on average): ids 0…n-1, a text of 40 to 72 words,
// BEIR's empty title. wanted is 1% of the ids, spread over the file.
type benchCorpus struct {
	ids, texts []string
	wanted     []string
}

func newBenchCorpus() *benchCorpus {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		w := make([]byte, 2+r.IntN(9))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(w)
	}
	c := &benchCorpus{}
	size := 0
	for i := 0; size < 32<<20; i++ {
		n := 40 + r.IntN(33)
		var b strings.Builder
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[r.IntN(len(vocab))])
		}
		b.WriteByte('.')
		id := strconv.Itoa(i)
		c.ids = append(c.ids, id)
		c.texts = append(c.texts, b.String())
		size += len(id) + b.Len() + 2
		if i%100 == 37 {
			c.wanted = append(c.wanted, id)
		}
	}
	return c
}

func (c *benchCorpus) tsv() []byte {
	var b strings.Builder
	for i, id := range c.ids {
		b.WriteString(id + "\t" + c.texts[i] + "\n")
	}
	return []byte(b.String())
}

func (c *benchCorpus) jsonl() []byte {
	var b strings.Builder
	for i, id := range c.ids {
		text, _ := json.Marshal(c.texts[i])
		fmt.Fprintf(&b, "{\"_id\": %q, \"title\": \"\", \"text\": %s, \"metadata\": {}}\n", id, text)
	}
	return []byte(b.String())
}

func (c *benchCorpus) parquet(b *testing.B) []byte {
	ids := make([]any, len(c.ids))
	texts := make([]any, len(c.ids))
	for i := range c.ids {
		ids[i], texts[i] = c.ids[i], c.texts[i]
	}
	return parquetBytesRowGroups(b, 64<<10, column{"_id", arrow.BinaryTypes.String, ids}, column{"text", arrow.BinaryTypes.String, texts})
}

// BenchmarkLoad measures Load on each format (MB/s of the file as stored;
// for gzip, of the compressed file), wanting 1% of the ids, with the
// default parallelism and with one parsing goroutine.
func BenchmarkLoad(b *testing.B) {
	c := newBenchCorpus()
	dir := b.TempDir()
	files := []struct {
		name string
		data []byte
	}{
		{"tsv", c.tsv()},
		{"jsonl", c.jsonl()},
		{"parquet", c.parquet(b)},
	}
	files = append(files,
		struct {
			name string
			data []byte
		}{"tsv.gz", gzipBytes(b, files[0].data)},
		struct {
			name string
			data []byte
		}{"jsonl.gz", gzipBytes(b, files[1].data)})
	for _, f := range files {
		path := writeFile(b, dir, "corpus."+f.name, f.data)
		for _, par := range []int{0, 1} {
			name := f.name
			if par == 1 {
				name += "/seq"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(f.data)))
				for b.Loop() {
					res, err := Load(context.Background(), path, c.wanted, Options{Parallelism: par})
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Docs) != len(c.wanted) {
						b.Fatalf("%d docs, want %d", len(res.Docs), len(c.wanted))
					}
				}
			})
		}
	}
	_ = os.RemoveAll(dir)
}
