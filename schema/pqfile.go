package schema

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/flight"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet/compress"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// flatFileWriter writes a Parquet file of a flat schema (every field a
// utf8, int32, int64, float32 or float64 column) itself, without Arrow's
// column writers. The file is "PAR1", the column chunks of each row group
// in column order (see chunkEncoder), the footer (FileMetaData, Thrift
// compact), its length (4 bytes, little-endian) and "PAR1". The columns
// of a row group are encoded concurrently, each by a chunkEncoder of its
// own, then written in order to out; the footer holds the key-value
// metadata pqarrow's FileWriter writes (the schema's own and the Arrow
// schema, base64-encoded under ARROW:schema), so that readers find the
// same Arrow schema and form.
type flatFileWriter struct {
	out     *asyncWriter
	pos     int64 // bytes written
	cols    []flatColumn
	enc     []*chunkEncoder
	codec   int32
	workers int
	kv      [][2]string
	groups  []groupMeta
	rows    int64
}

// groupMeta is what the footer says of a row group.
type groupMeta struct {
	rows   int64
	chunks []chunkMeta
}

// chunkMeta is what the footer says of a column chunk; offsets are in
// the file.
type chunkMeta struct {
	start, dataOff, dictOff           int64 // dictOff 0: no dictionary
	numValues, uncompressed, compress int64
	dictEnc                           bool
}

// pageCodec compresses a page.
type pageCodec interface {
	encode(dst, src []byte) []byte // dst is a buffer to reuse
}

type snappyCodec struct{}

func (snappyCodec) encode(dst, src []byte) []byte {
	if n := s2.MaxEncodedLen(len(src)); cap(dst) < n {
		dst = make([]byte, n)
	}
	return s2.EncodeSnappy(dst[:cap(dst)], src)
}

type zstdCodec struct{ enc *zstd.Encoder }

func (z zstdCodec) encode(dst, src []byte) []byte { return z.enc.EncodeAll(src, dst[:0]) }

// zstdEncoder is shared by the writers: EncodeAll may be called
// concurrently. Its level is Arrow's default (zstd.SpeedDefault).
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithZeroFrames(true))
})

// newFlatFileWriter starts a Parquet file of schema s on w. codec is
// "none", "snappy" or "zstd" (as ParquetCodec parses it).
func newFlatFileWriter(w *asyncWriter, s *arrow.Schema, codecName string, workers int) (*flatFileWriter, error) {
	f := &flatFileWriter{out: w, workers: max(workers, 1)}
	var codec pageCodec
	switch c, err := ParquetCodec(codecName); {
	case err != nil:
		return nil, err
	case c == compress.Codecs.Snappy:
		f.codec, codec = codecSnappy, snappyCodec{}
	case c == compress.Codecs.Zstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, fmt.Errorf("create zstd encoder: %w", err)
		}
		f.codec, codec = codecZstd, zstdCodec{enc}
	}
	for i, fd := range s.Fields() {
		col := flatColumn{name: fd.Name, typ: fd.Type.ID(), nullable: fd.Nullable}
		switch col.typ {
		case arrow.STRING:
			col.phys = pqByteArray
			col.runDict = i == 0 && fd.Name == FieldQueryID
		case arrow.INT32:
			col.phys, col.width = pqInt32, 4
			col.smallDict = fd.Name == FieldRank
		case arrow.INT64:
			col.phys, col.width = pqInt64, 8
		case arrow.FLOAT32:
			col.phys, col.width = pqFloat, 4
		case arrow.FLOAT64:
			col.phys, col.width = pqDouble, 8
		default:
			return nil, fmt.Errorf("create parquet writer: column %s of type %s is not flat", fd.Name, fd.Type)
		}
		f.cols = append(f.cols, col)
	}
	for i := range f.cols {
		f.enc = append(f.enc, newChunkEncoder(&f.cols[i], codec))
	}
	md := s.Metadata()
	for i := range md.Len() {
		f.kv = append(f.kv, [2]string{md.Keys()[i], md.Values()[i]})
	}
	f.kv = append(f.kv, [2]string{"ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(s, memory.DefaultAllocator))})
	f.write([]byte("PAR1"))
	return f, nil
}

func (f *flatFileWriter) write(b []byte) {
	f.out.Write(b) // a failed write is reported by a later one and by Close
	f.pos += int64(len(b))
}

// writeGroup writes a row group of rows rows: cols[c] holds the arrays of
// column c.
func (f *flatFileWriter) writeGroup(cols [][]arrow.Array, rows int) error {
	errs := make([]error, len(cols))
	next := make(chan int, len(cols))
	for c := range cols {
		next <- c
	}
	close(next)
	var wg sync.WaitGroup
	for range min(f.workers, len(cols)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				errs[c] = protect(func() error { return f.enc[c].encode(cols[c]) })
			}
		}()
	}
	wg.Wait()
	g := groupMeta{rows: int64(rows), chunks: make([]chunkMeta, len(cols))}
	for c, e := range f.enc {
		if errs[c] != nil {
			return errs[c]
		}
		if e.numValues != int64(rows) {
			return fmt.Errorf("write row group: column %s has %d rows, want %d", e.col.name, e.numValues, rows)
		}
		m := chunkMeta{start: f.pos, dataOff: f.pos + e.dataOff, numValues: e.numValues,
			uncompressed: e.uncompressed, compress: e.compressed, dictEnc: e.dictEnc}
		if e.hasDict {
			m.dictOff = f.pos
		}
		for _, p := range e.parts {
			f.write(e.view(p))
		}
		g.chunks[c] = m
	}
	f.groups = append(f.groups, g)
	f.rows += int64(rows)
	if f.out.failed.Load() {
		return f.out.err
	}
	return nil
}

// close writes the footer.
func (f *flatFileWriter) close() error {
	footer := f.footer()
	footer = binary.LittleEndian.AppendUint32(footer, uint32(len(footer)))
	f.write(append(footer, "PAR1"...))
	return nil
}

// createdBy names the writer in the footer (Arrow's reader parses it as
// application "evalgate", which it has no workarounds for).
const createdBy = "evalgate"

// footer returns the FileMetaData.
func (f *flatFileWriter) footer() []byte {
	t := &thriftOut{}
	t.i32(1, 2) // version
	t.list(2, thriftStruct, len(f.cols)+1)
	t.begin(0)
	t.str(4, "schema")
	t.i32(5, int32(len(f.cols)))
	t.end()
	for _, c := range f.cols {
		c.schemaElement(t)
	}
	t.i64(3, f.rows)
	t.list(4, thriftStruct, len(f.groups))
	for _, g := range f.groups {
		f.rowGroup(t, g)
	}
	t.list(5, thriftStruct, len(f.kv))
	for _, kv := range f.kv {
		t.begin(0)
		t.str(1, kv[0])
		t.str(2, kv[1])
		t.end()
	}
	t.str(6, createdBy)
	t.list(7, thriftStruct, len(f.cols)) // column orders: TypeDefinedOrder
	for range f.cols {
		t.begin(0)
		t.begin(1)
		t.end()
		t.end()
	}
	t.b = append(t.b, 0)
	return t.b
}

// schemaElement writes the SchemaElement of c: its type, repetition,
// name, and for strings and integers the converted and logical types
// pqarrow gives them (UTF8 / String, INT_32 / Integer(32, signed)).
func (c *flatColumn) schemaElement(t *thriftOut) {
	t.begin(0)
	t.i32(1, c.phys)
	rep := int32(pqRequired)
	if c.nullable {
		rep = pqOptional
	}
	t.i32(3, rep)
	t.str(4, c.name)
	switch c.typ {
	case arrow.STRING:
		t.i32(6, 0) // UTF8
		t.begin(10)
		t.begin(1) // StringType
		t.end()
		t.end()
	case arrow.INT32, arrow.INT64:
		conv, width := int32(17), int8(32) // INT_32
		if c.typ == arrow.INT64 {
			conv, width = 18, 64 // INT_64
		}
		t.i32(6, conv)
		t.begin(10)
		t.begin(10) // IntType
		t.byte1(1, width)
		t.boolean(2, true)
		t.end()
		t.end()
	}
	t.end()
}

// rowGroup writes the RowGroup of g.
func (f *flatFileWriter) rowGroup(t *thriftOut, g groupMeta) {
	var size, comp int64
	t.begin(0)
	t.list(1, thriftStruct, len(g.chunks))
	for c, m := range g.chunks {
		col := &f.cols[c]
		size += m.uncompressed
		comp += m.compress
		t.begin(0)
		t.i64(2, m.start)
		t.begin(3)
		t.i32(1, col.phys)
		enc := []int32{encPlain, encRLE}
		if m.dictEnc {
			enc = append(enc, encRLEDict)
		}
		t.i32List(2, enc)
		t.list(3, thriftBinary, 1)
		t.strValue(col.name)
		t.i32(4, f.codec)
		t.i64(5, m.numValues)
		t.i64(6, m.uncompressed)
		t.i64(7, m.compress)
		t.i64(9, m.dataOff)
		if m.dictOff > 0 {
			t.i64(11, m.dictOff)
		}
		t.end()
		t.end()
	}
	t.i64(2, size)
	t.i64(3, g.rows)
	if len(g.chunks) > 0 {
		t.i64(5, g.chunks[0].start)
	}
	t.i64(6, comp)
	t.end()
}
