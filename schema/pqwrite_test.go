package schema

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/compress"
	"github.com/apache/arrow/go/v16/parquet/file"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
)

// TestHybridOutRoundTrip encodes runs of values of every bit width with
// hybridOut (put and putEach) and decodes them with hybrid, the reader's decoder.
func TestHybridOutRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for bw := uint(1); bw <= 32; bw++ {
		for trial := range 20 {
			var want []uint32
			var h hybridOut
			h.reset(nil, bw)
			for range rng.IntN(200) {
				v := uint32(rng.Uint64() & (1<<bw - 1))
				k := 1 + rng.IntN(20)
				if trial%3 == 0 {
					k = 1 + rng.IntN(3) // mostly bit-packed
				}
				if trial%2 == 0 {
					h.put(v, k)
				}
				for range k {
					want = append(want, v)
				}
			}
			for rest := want; trial%2 == 1 && len(rest) > 0; {
				k := min(len(rest), rng.IntN(100))
				h.putEach(rest[:k])
				rest = rest[k:]
			}
			enc := h.finish()
			var d hybrid
			d.init(enc, bw)
			got := make([]uint32, len(want))
			if err := d.read(got); err != nil {
				t.Fatalf("bw %d: %v", bw, err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("bw %d trial %d: value %d is %d, want %d", bw, trial, i, got[i], want[i])
				}
			}
		}
	}
}

// flatTestRecord returns a record of schema s with n rows, generated from
// seed: query ids in runs of up to 150 rows, multibyte UTF-8 in the
// strings, every fourth value of a nullable column null in some rows,
// ranks beyond smallDictMax in the rows of big.
func flatTestRecord(s *arrow.Schema, n int, seed uint64, big func(i int) bool) arrow.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	mem := memory.DefaultAllocator
	cols := make([]arrow.Array, s.NumFields())
	q := 0
	qids := make([]string, n)
	for i := range n {
		if i > 0 && rng.IntN(150) == 0 {
			q++
		}
		qids[i] = fmt.Sprintf("q%d-é%c", q, 'α'+rune(q%20))
	}
	null := func(c, i int) bool { return s.Field(c).Nullable && (i/1000)%3 == 1 && rng.IntN(4) == 0 }
	for c, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.STRING:
			b := array.NewStringBuilder(mem)
			for i := range n {
				switch {
				case c == 0:
					b.Append(qids[i])
				case null(c, i):
					b.AppendNull()
				default:
					b.Append(fmt.Sprintf("doc-%d-日本語-%x", rng.IntN(1_000_000), rng.Uint32()))
				}
			}
			cols[c] = b.NewArray()
		case arrow.INT32:
			b := array.NewInt32Builder(mem)
			for i := range n {
				switch {
				case null(c, i):
					b.AppendNull()
				case f.Name == FieldRank && big(i):
					b.Append(int32(smallDictMax + rng.IntN(1000)))
				case f.Name == FieldRank:
					b.Append(int32(1 + i%100))
				default:
					b.Append(int32(rng.Uint32()))
				}
			}
			cols[c] = b.NewArray()
		case arrow.INT64:
			b := array.NewInt64Builder(mem)
			for i := range n {
				if null(c, i) {
					b.AppendNull()
				} else {
					b.Append(int64(rng.Uint64()))
				}
			}
			cols[c] = b.NewArray()
		case arrow.FLOAT32:
			b := array.NewFloat32Builder(mem)
			for i := range n {
				if null(c, i) {
					b.AppendNull()
				} else {
					b.Append(rng.Float32() * 1e6)
				}
			}
			cols[c] = b.NewArray()
		case arrow.FLOAT64:
			b := array.NewFloat64Builder(mem)
			for i := range n {
				if null(c, i) {
					b.AppendNull()
				} else {
					b.Append(rng.NormFloat64() * 1e3)
				}
			}
			cols[c] = b.NewArray()
		}
	}
	rec := array.NewRecord(s, cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// valueAt returns row i of a as a comparable Go value, nil when null.
func valueAt(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Dictionary:
		return valueAt(a.Dictionary(), a.GetValueIndex(i))
	case *array.RunEndEncoded:
		return valueAt(a.Values(), a.GetPhysicalIndex(i))
	}
	panic(fmt.Sprintf("type %s", a.DataType()))
}

// writeFlatFile writes rec in slices of 10,000 rows to a Parquet file.
func writeFlatFile(t *testing.T, rec arrow.Record, o WriterOptions) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "flat.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewRecordWriterWith(f, FormatParquet, rec.Schema(), o)
	if err != nil {
		t.Fatal(err)
	}
	n := int(rec.NumRows())
	for i := 0; i < n; i += 10_000 {
		s := rec.NewSlice(int64(i), int64(min(i+10_000, n)))
		err := w.Write(s)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkArrowRead reads the file at p with Apache Arrow's Parquet reader
// and compares every value with want's; it returns the file's row group
// count.
func checkArrowRead(t *testing.T, p string, want arrow.Record, codec compress.Compression) int {
	t.Helper()
	pf, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatalf("arrow: open: %v", err)
	}
	defer pf.Close()
	md := pf.MetaData()
	for g := range pf.NumRowGroups() {
		for c := range md.Schema.NumColumns() {
			cc, err := md.RowGroup(g).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression() != codec {
				t.Fatalf("arrow: column chunk compressed with %s, want %s", cc.Compression(), codec)
			}
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 7777}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("arrow: %v", err)
	}
	// The Arrow schema: the file's form metadata, the fields' names,
	// types and nullability (Arrow adds each field's Parquet field id).
	s, err := fr.Schema()
	if err != nil {
		t.Fatalf("arrow: schema: %v", err)
	}
	if !s.Metadata().Equal(want.Schema().Metadata()) || s.NumFields() != want.Schema().NumFields() {
		t.Fatalf("arrow: schema %s, want %s", s, want.Schema())
	}
	for i, f := range s.Fields() {
		if w := want.Schema().Field(i); f.Name != w.Name || !arrow.TypeEqual(f.Type, w.Type) || f.Nullable != w.Nullable {
			t.Fatalf("arrow: field %s, want %s", f, w)
		}
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow: read: %v", err)
	}
	defer tbl.Release()
	if tbl.NumRows() != want.NumRows() {
		t.Fatalf("arrow: %d rows, want %d", tbl.NumRows(), want.NumRows())
	}
	for c := range int(tbl.NumCols()) {
		row := 0
		for _, a := range tbl.Column(c).Data().Chunks() {
			for i := range a.Len() {
				if got, exp := valueAt(a, i), valueAt(want.Column(c), row); got != exp {
					t.Fatalf("arrow: column %d row %d: %v, want %v", c, row, got, exp)
				}
				row++
			}
		}
	}
	return pf.NumRowGroups()
}

// checkOwnRead reads the file at p with Open and compares every value
// with want's.
func checkOwnRead(t *testing.T, p string, role Role, want arrow.Record) {
	t.Helper()
	r, err := Open(context.Background(), p, role, Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer r.Close()
	row := 0
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		for c := range int(b.Record.NumCols()) {
			for i := range int(b.Record.NumRows()) {
				if got, exp := valueAt(b.Record.Column(c), i), valueAt(want.Column(c), row+i); got != exp {
					t.Fatalf("column %d row %d: %v, want %v", c, row+i, got, exp)
				}
			}
		}
		row += int(b.Record.NumRows())
		b.Release()
	}
	if row != int(want.NumRows()) {
		t.Fatalf("%d rows, want %d", row, want.NumRows())
	}
}

// TestFlatWriterRoundTrip writes flat files of several row groups and
// pages (pages of 4 KiB here, so that dictionary indices span pages too), with null values, multibyte strings and
// ranks that do not fit a small dictionary in some row groups, in each
// codec, and reads every value back through Arrow's reader and, for the
// canonical forms, through Open.
func TestFlatWriterRoundTrip(t *testing.T) {
	defer func(n int) { pageTarget = n }(pageTarget)
	pageTarget = 4 << 10
	wide := arrow.NewSchema([]arrow.Field{
		{Name: FieldQueryID, Type: arrow.BinaryTypes.String},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	const n = 60_000
	for _, tc := range []struct {
		name string
		s    *arrow.Schema
		role Role
	}{{"run", RunLong(), RoleRun}, {"gold", GoldLong(), RoleGold}, {"wide", wide, 0}} {
		rec := flatTestRecord(tc.s, n, 3, func(i int) bool { return i >= 30_000 && i < 45_000 })
		for _, codec := range []string{"none", "snappy", "zstd"} {
			t.Run(tc.name+"/"+codec, func(t *testing.T) {
				p := writeFlatFile(t, rec, WriterOptions{Compression: codec, RowGroupRows: 12_000})
				want, _ := ParquetCodec(codec)
				if g := checkArrowRead(t, p, rec, want); g < 4 {
					t.Fatalf("%d row groups", g)
				}
				if tc.role != 0 {
					checkOwnRead(t, p, tc.role, rec)
				}
			})
		}
		rec.Release()
	}
}

// TestFlatWriterEmpty writes a file of no rows, which both readers read
// as such.
func TestFlatWriterEmpty(t *testing.T) {
	rec := flatTestRecord(RunLong(), 0, 1, func(int) bool { return false })
	defer rec.Release()
	p := writeFlatFile(t, rec, WriterOptions{})
	if g := checkArrowRead(t, p, rec, compress.Codecs.Uncompressed); g != 0 {
		t.Fatalf("%d row groups", g)
	}
	checkOwnRead(t, p, RoleRun, rec)
}

// TestFlatWriterNullInRequired fails on a null in a column the schema
// says is not nullable.
func TestFlatWriterNullInRequired(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: FieldQueryID, Type: arrow.BinaryTypes.String}, {Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	q := array.NewStringBuilder(memory.DefaultAllocator)
	q.AppendValues([]string{"a", "b"}, nil)
	x := array.NewFloat64Builder(memory.DefaultAllocator)
	x.AppendValues([]float64{1, 0}, []bool{true, false})
	rec := array.NewRecord(s, []arrow.Array{q.NewArray(), x.NewArray()}, 2)
	defer rec.Release()
	w, err := NewRecordWriterWith(&bytes.Buffer{}, FormatParquet, s, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("no error")
	}
}

// TestThriftOutPageHeader writes a page header with fields the reader
// skips (a long field id delta, a list of more than 14 elements, a bool)
// between the ones it reads, and parses it back.
func TestThriftOutPageHeader(t *testing.T) {
	var o thriftOut
	o.i32(1, pageData)
	o.i32(2, 300)
	o.i32(3, 200)
	o.i32List(40, make([]int32, 20))
	o.boolean(41, false)
	o.begin(5)
	o.i32(1, 77)
	o.i32(2, encRLEDict)
	o.i32(3, encRLE)
	o.i32(4, encRLE)
	o.end()
	o.b = append(o.b, 0)
	var h pageHeader
	n, err := h.parse(append(o.b, 0xff))
	if err != nil {
		t.Fatal(err)
	}
	if n != len(o.b) || h.typ != pageData || h.uncompressed != 300 || h.compressed != 200 || h.nvals != 77 || h.enc != encRLEDict || h.defEnc != encRLE {
		t.Fatalf("parsed %+v from %d of %d bytes", h, n, len(o.b))
	}
}

// BenchmarkChunkEncoder encodes the columns of a row group of 64 Ki rows
// of a run (100 rows a query), one after the other.
func BenchmarkChunkEncoder(b *testing.B) {
	const n = 64 << 10
	qb, db := NewStrings(n, 8*n), NewStrings(n, 10*n)
	scores, ranks := make([]float64, n), make([]int32, n)
	for i := range n {
		qb.Append(fmt.Sprintf("q%07d", i/100))
		db.Append(fmt.Sprintf("d%08d", (i*7919)%1_000_003))
		scores[i] = float64(n-i) / 7
		ranks[i] = int32(i%100 + 1)
	}
	rec := NewRecord(RunLong(), []arrow.Array{qb.Array(), db.Array(), Float64Array(scores), Int32Array(ranks, nil)}, n)
	defer rec.Release()
	w, err := newFlatFileWriter(newAsyncWriter(io.Discard), RunLong(), "none", 1)
	if err != nil {
		b.Fatal(err)
	}
	for c, e := range w.newEncoders() {
		b.Run(e.col.name, func(b *testing.B) {
			b.SetBytes(n)
			for range b.N {
				if err := e.encode([]arrow.Array{rec.Column(c)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOwnReaderDeltaLengthFromArrow reads a run whose string columns
// Arrow's writer stored as DELTA_LENGTH_BYTE_ARRAY, in many small pages,
// through evalgate's page decoder (which the test checks it is given),
// and compares every row: the decoder agrees with another implementation
// of the encoding, not only with evalgate's writer.
func TestOwnReaderDeltaLengthFromArrow(t *testing.T) {
	rec := flatTestRecord(RunLong(), 30_000, 5, func(i int) bool { return i%977 == 0 })
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "delta.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(
		parquet.WithDictionaryDefault(false),
		parquet.WithEncodingFor(FieldQueryID, parquet.Encodings.DeltaLengthByteArray),
		parquet.WithEncodingFor(FieldDocID, parquet.Encodings.DeltaLengthByteArray),
		parquet.WithDataPageSize(8<<10),
		parquet.WithMaxRowGroupLength(12_000),
	)
	writeWithPqarrow(t, f, rec, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	pf, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	for g := range pf.NumRowGroups() {
		for _, c := range []int{0, 1} {
			cc, err := pf.MetaData().RowGroup(g).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(cc.Encodings(), parquet.Encodings.DeltaLengthByteArray) || !pageDecodable(cc) {
				t.Fatalf("row group %d column %d: encodings %v, decoded by evalgate %v", g, c, cc.Encodings(), pageDecodable(cc))
			}
		}
	}
	pf.Close()
	checkOwnRead(t, p, RoleRun, rec)
}

// writeWithPqarrow writes rec to w as a Parquet file through Arrow's
// writer (pqarrow), with the given properties.
func writeWithPqarrow(t *testing.T, w io.Writer, rec arrow.Record, props *parquet.WriterProperties, aprops pqarrow.ArrowWriterProperties) {
	t.Helper()
	fw, err := pqarrow.NewFileWriter(rec.Schema(), w, props, aprops)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}
