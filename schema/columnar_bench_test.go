package schema

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadRun reads one run, about 16 MB of TREC text (benchBlock),
// through Open as TREC text, as Parquet (each compression convert
// offers) and as an Arrow IPC file and stream, as written by
// NewRecordWriterWith: the cost of the reader alone, up to the canonical
// batches the join takes (MB/s of the text's size, for comparison).
func BenchmarkReadRun(b *testing.B) {
	dir := b.TempDir()
	text := benchBlock(true)
	textPath := filepath.Join(dir, "run.trec")
	if err := os.WriteFile(textPath, text, 0o644); err != nil {
		b.Fatal(err)
	}
	res := parseTRECRunBlock(textPath, text)
	if len(res.errs) > 0 {
		b.Fatal(res.errs[0])
	}
	defer res.rec.Release()
	files := []struct{ name, path string }{{"trec", textPath}}
	for _, c := range []struct {
		name        string
		format      Format
		compression string
	}{
		{"parquet-snappy", FormatParquet, "snappy"},
		{"parquet-zstd", FormatParquet, "zstd"},
		{"parquet-none", FormatParquet, "none"},
		{"arrow", FormatArrow, ""},
		{"arrow-stream", FormatArrowStream, ""},
	} {
		p := filepath.Join(dir, c.name)
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		w, err := NewRecordWriterWith(f, c.format, res.rec.Schema(), WriterOptions{Compression: c.compression, RowGroupRows: 64 << 10})
		if err != nil {
			b.Fatal(err)
		}
		// Several batches, as convert writes them.
		for lo := int64(0); lo < res.rec.NumRows(); lo += 64 << 10 {
			s := res.rec.NewSlice(lo, min(lo+64<<10, res.rec.NumRows()))
			err = w.Write(s)
			s.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		f.Close() // the Parquet writer closes it already
		files = append(files, struct{ name, path string }{c.name, p})
	}
	for _, f := range files {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				readAll(b, f.path)
			}
		})
	}
}

func readAll(b *testing.B, path string) {
	ctx := context.Background()
	r, err := Open(ctx, path, RoleRun, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for {
		batch, err := r.Next(ctx)
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
		batch.Release()
	}
}
