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
// compact), its length (4 bytes, little-endian) and "PAR1"; the footer
// holds the key-value metadata pqarrow's FileWriter writes (the schema's
// own and the Arrow schema, base64-encoded under ARROW:schema), so that
// readers find the same Arrow schema and form.
//
// Row groups are encoded concurrently, several at a time, and written in
// order (see submit).
type flatFileWriter struct {
	out   *asyncWriter
	cols  []flatColumn
	codec pageCodec
	kind  int32 // the codec's number in the footer
	kv    [][2]string

	// The groups being encoded and written: see pqgroups.go.
	sets  chan []*chunkEncoder // encoder sets not in use
	order chan *encodedGroup   // groups in file order; nil until the first
	done  chan struct{}        // closed when order is drained
	errs  firstError           // of the groups

	// Written by the goroutine that writes the groups.
	pos    int64 // bytes written
	groups []groupMeta
	rows   int64
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
	f := &flatFileWriter{out: w}
	switch c, err := ParquetCodec(codecName); {
	case err != nil:
		return nil, err
	case c == compress.Codecs.Snappy:
		f.kind, f.codec = codecSnappy, snappyCodec{}
	case c == compress.Codecs.Zstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, fmt.Errorf("create zstd encoder: %w", err)
		}
		f.kind, f.codec = codecZstd, zstdCodec{enc}
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
	// One set more than workers: one is written while the others are
	// encoded.
	f.sets = make(chan []*chunkEncoder, max(workers, 1)+1)
	for range cap(f.sets) {
		f.sets <- f.newEncoders()
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

// close writes the queued groups and the footer.
func (f *flatFileWriter) close() error {
	if err := f.wait(); err != nil {
		return err
	}
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
		if col.phys == pqByteArray && !m.dictEnc {
			enc = []int32{encDeltaLength, encRLE}
		}
		if m.dictEnc {
			enc = append(enc, encRLEDict)
		}
		t.i32List(2, enc)
		t.list(3, thriftBinary, 1)
		t.strValue(col.name)
		t.i32(4, f.kind)
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
