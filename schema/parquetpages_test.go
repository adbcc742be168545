package schema

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
)

// TestHybridDecode decodes RLE and bit-packed runs, and refuses truncated
// or out-of-range ones without panicking.
func TestHybridDecode(t *testing.T) {
	// An RLE run of 5 × 3, then one bit-packed group of 8 values of 2 bits.
	data := []byte{5 << 1, 3, 1<<1 | 1, 0b11100100, 0b11100100}
	var h hybrid
	h.init(data, 2)
	out := make([]uint32, 13)
	if err := h.read(out); err != nil {
		t.Fatal(err)
	}
	want := []uint32{3, 3, 3, 3, 3, 0, 1, 2, 3, 0, 1, 2, 3}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("value %d: got %d, want %d (%v)", i, out[i], want[i], out)
		}
	}
	if err := h.read(out[:1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading past the end: %v, want ErrCorrupt", err)
	}
	h.init([]byte{2 << 1, 9}, 2) // 9 does not fit in 2 bits
	if err := h.read(out[:1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wide RLE value: %v, want ErrCorrupt", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		h.init(b, uint(rng.IntN(33)))
		_ = h.read(make([]uint32, rng.IntN(64)))
	}
}

// TestPageHeaderHostile parses random and truncated page headers without
// panicking, and a well-formed one exactly.
func TestPageHeaderHostile(t *testing.T) {
	// type 0, uncompressed 10, compressed 10, data page header {num_values 3, encoding 0, def 3, rep 3}.
	zz := func(v int64) []byte { return binary.AppendUvarint(nil, uint64(v<<1^v>>63)) }
	var b []byte
	b = append(b, 0x15)
	b = append(b, zz(0)...)
	b = append(b, 0x15)
	b = append(b, zz(10)...)
	b = append(b, 0x15)
	b = append(b, zz(10)...)
	b = append(b, 0x2c) // field 5, struct
	b = append(b, 0x15)
	b = append(b, zz(3)...)
	b = append(b, 0x15)
	b = append(b, zz(0)...)
	b = append(b, 0x15)
	b = append(b, zz(3)...)
	b = append(b, 0x15)
	b = append(b, zz(3)...)
	b = append(b, 0, 0)
	var h pageHeader
	n, err := h.parse(append(b, 0xAA))
	if err != nil || n != len(b) || h.typ != 0 || h.compressed != 10 || h.nvals != 3 || h.defEnc != 3 {
		t.Fatalf("parse: %d, %v, %+v", n, err, h)
	}
	for i := range b {
		if _, err := h.parse(b[:i]); err == nil {
			t.Fatalf("truncated at %d: no error", i)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50000 {
		c := append([]byte(nil), b...)
		for range 1 + rng.IntN(4) {
			c[rng.IntN(len(c))] = byte(rng.Uint32())
		}
		_, _ = h.parse(c)
		r := make([]byte, rng.IntN(40))
		for i := range r {
			r[i] = byte(rng.Uint32())
		}
		_, _ = h.parse(r)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

// TestAsyncWriterError reports a failed write from a later Write and from
// Close.
func TestAsyncWriterError(t *testing.T) {
	fw := &failWriter{}
	a := newAsyncWriter(fw)
	block := make([]byte, asyncBlock)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = a.Write(block)
	}
	if err == nil {
		t.Fatal("no error from Write after the writes failed")
	}
	if err := a.Close(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Close: %v", err)
	}
	if fw.n != 1 {
		t.Fatalf("%d writes after the first failed, want none", fw.n-1)
	}
}

// TestParquetPagesRoundTrip writes a long run of several pages and row
// groups, with null ranks scattered after many valid ones, in each
// compression, and reads back every value, into new memory and into the
// memory of the batches released before (Options.ReuseMemory), from column
// chunks read into memory and viewed in the file's mapping.
func TestParquetPagesRoundTrip(t *testing.T) {
	const n = 300_000
	qb, db := NewStrings(n, 8*n), NewStrings(n, 10*n)
	scores, ranks, valid := make([]float64, n), make([]int32, n), make([]bool, n)
	for i := range n {
		qb.Append(fmt.Sprintf("q%05d", i/100))
		db.Append(fmt.Sprintf("d%07d", (i*7919)%1_000_003))
		scores[i] = float64(n-i) / 7
		ranks[i], valid[i] = int32(i%100+1), i%100_003 != 99_999
	}
	cols := []arrow.Array{qb.Array(), db.Array(), Float64Array(scores), Int32Array(ranks, valid)}
	rec := NewRecord(RunLong(), cols, n)
	defer rec.Release()
	defer func(n int64) { mappedChunksMinSize = n }(mappedChunksMinSize)
	for _, tc := range []struct {
		codec                    string
		reuse, mapped, skipRanks bool
	}{{"none", false, false, false}, {"snappy", false, false, false}, {"zstd", false, false, false},
		{"none", true, false, false}, {"zstd", true, false, false},
		{"none", false, true, false}, {"snappy", true, true, false}, {"none", true, true, true}} {
		codec := tc.codec
		mappedChunksMinSize = 1 << 62
		if tc.mapped {
			mappedChunksMinSize = 0
		}
		p := filepath.Join(t.TempDir(), "run.parquet")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewRecordWriterWith(f, FormatParquet, RunLong(), WriterOptions{Compression: codec, RowGroupRows: 150_000})
		if err != nil {
			t.Fatal(err)
		}
		writeAll(t, w, rec)
		f.Close()
		r, err := Open(context.Background(), p, RoleRun, Options{ReuseMemory: tc.reuse, SkipRanks: tc.skipRanks})
		if err != nil {
			t.Fatal(err)
		}
		row := 0
		for {
			b, err := r.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", codec, err)
			}
			q, err := RunQueryIDs(b.Record)
			if err != nil {
				t.Fatal(err)
			}
			if b.Record.Column(0).DataType().ID() != arrow.RUN_END_ENCODED {
				t.Fatalf("%s: query ids of type %s, want them as runs", codec, b.Record.Column(0).DataType())
			}
			d := b.Record.Column(1).(*array.String)
			s := b.Record.Column(2).(*array.Float64)
			k := b.Record.Column(3).(*array.Int32)
			for i := range int(b.Record.NumRows()) {
				j := row + i
				rankOK := k.IsValid(i) == valid[j] && (!valid[j] || k.Value(i) == ranks[j])
				if tc.skipRanks {
					rankOK = k.IsNull(i) // left unread
				}
				if q.Value(i) != qb.Value(j) || d.Value(i) != db.Value(j) || s.Value(i) != scores[j] || !rankOK {
					t.Fatalf("%s: row %d: %s %s %v %v/%d, want %s %s %v %v/%d", codec, j,
						q.Value(i), d.Value(i), s.Value(i), k.IsValid(i), k.Value(i), qb.Value(j), db.Value(j), scores[j], valid[j], ranks[j])
				}
			}
			row += int(b.Record.NumRows())
			b.Release()
		}
		r.Close()
		if row != n {
			t.Fatalf("%s: %d rows, want %d", codec, row, n)
		}
	}
}
