package schema

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"
	"unsafe"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
)

// Parquet enum values (parquet.thrift) the writer uses.
const (
	pqInt32     = 1
	pqInt64     = 2
	pqFloat     = 4
	pqDouble    = 5
	pqByteArray = 6

	pqRequired = 0
	pqOptional = 1

	encPlain       = 0
	encRLE         = 3
	encDeltaLength = 6 // DELTA_LENGTH_BYTE_ARRAY
	encRLEDict     = 8

	codecNone   = 0
	codecSnappy = 1
	codecZstd   = 6
)

// pageTarget is the size after which a data page ends (a variable for
// the tests).
var pageTarget = 1 << 20

// smallDictMax bounds the values of an int32 column written with a
// dictionary (rank): an index table of this many entries maps a value to
// its dictionary index without hashing.
const smallDictMax = 1 << 12

// flatColumn is one column of a flat schema as the writer stores it.
type flatColumn struct {
	name     string
	typ      arrow.Type // STRING, INT32, INT64, FLOAT32 or FLOAT64
	phys     int32      // its Parquet physical type
	width    int        // bytes of a fixed-width value, 0 for strings
	nullable bool
	// runDict: a utf8 query id (column 0), whose rows come in runs of
	// one value: a dictionary of the runs' values and RLE indices.
	runDict bool
	// smallDict: an int32 rank, a few distinct small values: a
	// dictionary and bit-packed indices when every value of the row
	// group is in [0, smallDictMax), else PLAIN. Ranks 1..100 take 7
	// bits a row instead of 4 bytes: 62 MB less to write on 200k
	// queries x 100 (441 MB against 503 MB), which saves more system
	// time than packing costs (about 2.7 ns a row), and scoring reads
	// the file as fast.
	smallDict bool
}

// chunkEncoder encodes the column chunks of one column, one row group
// after the other, reusing its buffers. A chunk is the dictionary page,
// if any, then data pages (v1) of about pageTarget bytes, each a page
// header (Thrift compact) and the page: for a nullable column the
// definition levels (4-byte length, RLE / bit-packed hybrid of width 1),
// then the values of the non-null rows (strings: DELTA_LENGTH_BYTE_ARRAY,
// the lengths delta-packed then the bytes one after another; numbers:
// PLAIN, little-endian; dictionary indices: a byte of bit width and the
// hybrid encoding), compressed as a whole when a codec is set. The encoded chunk is parts, views of meta (headers and levels) and
// bufs (page bodies), valid until the next encode.
type chunkEncoder struct {
	col   *flatColumn
	codec pageCodec

	meta  []byte
	bufs  [][]byte // page bodies, kept from chunk to chunk
	nbuf  int      // bufs in use
	parts []chunkPart

	// The data page being built: its values in bufs[cur], rows (null
	// ones included), levels.
	cur    int
	rows   int
	levels hybridOut
	idx    hybridOut // dictionary indices
	body   []byte    // scratch: levels and values of a page to compress
	lens   []int32   // the lengths of the string values of the page being built

	// The dictionary of a runDict or smallDict column.
	runs    []dictRun
	dictBuf int // the bufs entry of the dictionary page
	seen    map[string]int32
	ndict   int
	slot    []int32  // smallDict: value → index+1
	small   []int32  // smallDict: the dictionary's values
	ix      []uint32 // smallDict: scratch, the indices of a run of rows

	// The chunk's metadata, offsets relative to its start.
	numValues, uncompressed, compressed int64
	hasDict                             bool
	dataOff                             int64 // -1 until the first data page
	dictEnc                             bool  // data pages hold dictionary indices
}

// chunkPart is a range of meta, or a buffer when meta is false.
type chunkPart struct {
	meta   bool
	lo, hi int
	b      []byte
}

// dictRun is a run of rows with the same dictionary index.
type dictRun struct {
	idx uint32
	n   int
}

func newChunkEncoder(col *flatColumn, codec pageCodec) *chunkEncoder {
	return &chunkEncoder{col: col, codec: codec, seen: map[string]int32{}}
}

// encode encodes chunks, the arrays of the column in one row group.
func (e *chunkEncoder) encode(chunks []arrow.Array) error {
	e.meta, e.parts, e.nbuf = e.meta[:0], e.parts[:0], 0
	e.numValues, e.uncompressed, e.compressed = 0, 0, 0
	e.hasDict, e.dictEnc, e.dataOff = false, false, -1
	for _, a := range chunks {
		if a.DataType().ID() != e.col.typ {
			return fmt.Errorf("encode column %s: %s values, want %s", e.col.name, a.DataType(), e.col.typ)
		}
		if !e.col.nullable && a.NullN() > 0 {
			return fmt.Errorf("encode column %s: null in a column that is not nullable", e.col.name)
		}
		e.numValues += int64(a.Len())
	}
	switch {
	case e.col.runDict && e.queryRuns(chunks):
		return e.encodeRuns()
	case e.col.smallDict && e.smallDictionary(chunks):
		return e.encodeSmall(chunks)
	case e.col.typ == arrow.STRING:
		return e.encodeStrings(chunks)
	default:
		return e.encodeFixed(chunks)
	}
}

// take returns an empty buffer for a page body, bufs[k].
func (e *chunkEncoder) take() (k int) {
	if e.nbuf == len(e.bufs) {
		e.bufs = append(e.bufs, nil)
	}
	e.bufs[e.nbuf] = e.bufs[e.nbuf][:0]
	e.nbuf++
	return e.nbuf - 1
}

func (e *chunkEncoder) startPage() {
	e.cur, e.rows, e.lens = e.take(), 0, e.lens[:0]
	e.levels.reset(e.levels.b[:0], 1)
}

// endPage appends the data page being built, if it has rows.
func (e *chunkEncoder) endPage(enc int32) error {
	if e.rows == 0 {
		return nil
	}
	var lv []byte
	if e.col.nullable {
		lv = e.levels.finish()
	}
	if enc == encDeltaLength {
		k := e.take()
		e.bufs[k] = appendDeltaPacked(e.bufs[k], e.lens)
		return e.page(pageData, e.rows, enc, lv, k, e.cur)
	}
	return e.page(pageData, e.rows, enc, lv, e.cur)
}

// page appends a page of nvals values to the chunk: its header, then the
// definition levels lv (nil for none) and the values in bufs[ks[0]],
// bufs[ks[1]] and so on, or their compressed bytes.
func (e *chunkEncoder) page(typ int32, nvals int, enc int32, lv []byte, ks ...int) error {
	out := make([][]byte, 0, len(ks))
	size := 0
	if lv != nil {
		size = 4 + len(lv)
	}
	for _, k := range ks {
		out = append(out, e.bufs[k])
		size += len(e.bufs[k])
	}
	if size > 1<<31-1 {
		return fmt.Errorf("encode column %s: page of %d bytes", e.col.name, size)
	}
	csize := size
	if e.codec != nil {
		src := out[0]
		if lv != nil || len(out) > 1 {
			e.body = e.body[:0]
			if lv != nil {
				e.body = binary.LittleEndian.AppendUint32(e.body, uint32(len(lv)))
				e.body = append(e.body, lv...)
			}
			for _, b := range out {
				e.body = append(e.body, b...)
			}
			src = e.body
		}
		c := e.take()
		e.bufs[c] = e.codec.encode(e.bufs[c], src)
		out, lv = out[:1], nil
		out[0] = e.bufs[c]
		csize = len(out[0])
	}
	if typ == pageData && e.dataOff < 0 {
		e.dataOff = e.offset()
	}
	start := len(e.meta)
	t := thriftOut{b: e.meta}
	t.i32(1, typ)
	t.i32(2, int32(size))
	t.i32(3, int32(csize))
	if typ == pageDictionary {
		t.begin(7)
		t.i32(1, int32(nvals))
		t.i32(2, encPlain)
	} else {
		t.begin(5)
		t.i32(1, int32(nvals))
		t.i32(2, enc)
		t.i32(3, encRLE)
		t.i32(4, encRLE)
	}
	t.end()
	t.b = append(t.b, 0)
	hdr := len(t.b) - start
	if lv != nil {
		t.b = binary.LittleEndian.AppendUint32(t.b, uint32(len(lv)))
		t.b = append(t.b, lv...)
	}
	e.meta = t.b
	e.parts = append(e.parts, chunkPart{meta: true, lo: start, hi: len(e.meta)})
	for _, b := range out {
		e.parts = append(e.parts, chunkPart{b: b})
	}
	e.uncompressed += int64(hdr + size)
	e.compressed += int64(hdr + csize)
	return nil
}

// offset returns the offset in the chunk of the next page.
func (e *chunkEncoder) offset() int64 {
	n := 0
	for _, p := range e.parts {
		n += e.partLen(p)
	}
	return int64(n)
}

func (e *chunkEncoder) partLen(p chunkPart) int {
	if p.meta {
		return p.hi - p.lo
	}
	return len(p.b)
}

// view returns part p's bytes.
func (e *chunkEncoder) view(p chunkPart) []byte {
	if p.meta {
		return e.meta[p.lo:p.hi]
	}
	return p.b
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// validRuns calls f with the runs of rows [i, j) of a that are all valid
// or all null.
func validRuns(a arrow.Array, i, j int, f func(valid bool, from, to int)) {
	if a.NullN() == 0 {
		f(true, i, j)
		return
	}
	for i < j {
		v := a.IsValid(i)
		k := i + 1
		for k < j && a.IsValid(k) == v {
			k++
		}
		f(v, i, k)
		i = k
	}
}

// encodeStrings writes DELTA_LENGTH_BYTE_ARRAY pages: rows are added to a
// page as long as their bytes, and 4 a value for the lengths (an upper
// bound), fit in what is left of pageTarget. The lengths are delta-packed
// when the page ends; the bytes of a run of valid rows are one copy. A
// column of ids of one length takes no bits a value for its lengths,
// where PLAIN took 4 bytes (18% of a converted run), and is read back
// with one copy a page rather than one a value.
func (e *chunkEncoder) encodeStrings(chunks []arrow.Array) error {
	e.startPage()
	for _, a := range chunks {
		if a.Len() == 0 {
			continue
		}
		s := a.(*array.String)
		off, data := s.ValueOffsets(), s.ValueBytes()
		base := off[0]
		for i, n := 0, s.Len(); i < n; {
			// Rows [i, j) take off[j]-off[i] bytes and 4 a row.
			room := pageTarget - len(e.bufs[e.cur]) - 4*len(e.lens)
			j := i + sort.Search(n-i, func(k int) bool { return int(off[i+k+1]-off[i])+4*(k+1) > room })
			if j == i && e.rows > 0 {
				if err := e.endPage(encDeltaLength); err != nil {
					return err
				}
				e.startPage()
				continue
			}
			j = max(j, i+1) // a value larger than a page
			validRuns(a, i, j, func(valid bool, from, to int) {
				if e.col.nullable {
					e.levels.put(uint32(btoi(valid)), to-from)
				}
				if valid {
					for k := from; k < to; k++ {
						e.lens = append(e.lens, off[k+1]-off[k])
					}
					e.bufs[e.cur] = append(e.bufs[e.cur], data[off[from]-base:off[to]-base]...)
				}
			})
			e.rows += j - i
			i = j
		}
	}
	return e.endPage(encDeltaLength)
}

// encodeFixed writes PLAIN pages of fixed-width values, the values of a
// run of valid rows copied at once.
func (e *chunkEncoder) encodeFixed(chunks []arrow.Array) error {
	w := e.col.width
	e.startPage()
	for _, a := range chunks {
		if a.Len() == 0 {
			continue
		}
		d := a.Data()
		raw := d.Buffers()[1].Bytes()[d.Offset()*w:]
		for i, n := 0, a.Len(); i < n; {
			room := (pageTarget - len(e.bufs[e.cur])) / w
			if room <= 0 {
				if err := e.endPage(encPlain); err != nil {
					return err
				}
				e.startPage()
				room = pageTarget / w
			}
			j := min(n, i+room)
			validRuns(a, i, j, func(valid bool, from, to int) {
				if e.col.nullable {
					e.levels.put(uint32(btoi(valid)), to-from)
				}
				if valid {
					e.bufs[e.cur] = append(e.bufs[e.cur], raw[from*w:to*w]...)
				}
			})
			e.rows += j - i
			i = j
		}
	}
	return e.endPage(encPlain)
}

// indexBits returns the bit width of the indices of a dictionary of n
// entries (at least 1).
func indexBits(n int) uint {
	return uint(max(bits.Len(uint(max(n-1, 0))), 1))
}

// maxIndexRows is the most rows of a dictionary-indexed page, those whose
// indices would take pageTarget bytes bit-packed.
func maxIndexRows(bw uint) int { return pageTarget * 8 / int(bw) }

// queryRuns reads the runs of equal values of a query id column into
// e.runs, and their dictionary, one map look-up a run; it returns false
// when a chunk has nulls.
func (e *chunkEncoder) queryRuns(chunks []arrow.Array) bool {
	clear(e.seen)
	e.runs = e.runs[:0]
	dict := e.take()
	e.dictBuf = dict
	var prev []byte
	for _, a := range chunks {
		s := a.(*array.String)
		if s.NullN() != 0 {
			return false
		}
		if s.Len() == 0 {
			continue
		}
		off, data := s.ValueOffsets(), s.ValueBytes()
		base := off[0]
		for i, n := 0, s.Len(); i < n; {
			v := data[off[i]-base : off[i+1]-base]
			j := RunEnd(s, i, s.Value(i)) // the run of v ends at j
			if len(e.runs) > 0 && string(v) == string(prev) {
				e.runs[len(e.runs)-1].n += j - i
			} else {
				e.runs = append(e.runs, dictRun{idx: e.dictIndex(v), n: j - i})
			}
			prev, i = v, j
		}
	}
	e.ndict = len(e.seen)
	return true
}

// dictIndex returns the index of v in the dictionary of e.seen and
// bufs[e.dictBuf], adding it if it is not there yet. v views a chunk,
// alive until the row group is written.
func (e *chunkEncoder) dictIndex(v []byte) uint32 {
	k, ok := e.seen[string(v)]
	if !ok {
		k = int32(len(e.seen))
		e.seen[unsafe.String(unsafe.SliceData(v), len(v))] = k
		e.bufs[e.dictBuf] = binary.LittleEndian.AppendUint32(e.bufs[e.dictBuf], uint32(len(v)))
		e.bufs[e.dictBuf] = append(e.bufs[e.dictBuf], v...)
	}
	return uint32(k)
}

// encodeRuns writes the dictionary page queryRuns built and the runs as
// RLE indices.
func (e *chunkEncoder) encodeRuns() error {
	e.dictEnc = true
	if err := e.dictPage(e.dictBuf); err != nil {
		return err
	}
	bw := indexBits(e.ndict)
	e.startIndexPage(bw)
	for _, r := range e.runs {
		for r.n > 0 {
			k := min(r.n, maxIndexRows(bw)-e.rows)
			if k == 0 {
				if err := e.endIndexPage(); err != nil {
					return err
				}
				e.startIndexPage(bw)
				continue
			}
			e.idx.put(r.idx, k)
			if e.col.nullable {
				e.levels.put(1, k)
			}
			e.rows += k
			r.n -= k
		}
	}
	return e.endIndexPage()
}

// dictPage appends bufs[k] as the chunk's dictionary page.
func (e *chunkEncoder) dictPage(k int) error {
	e.hasDict = true
	return e.page(pageDictionary, e.ndict, encPlain, nil, k)
}

func (e *chunkEncoder) startIndexPage(bw uint) {
	e.startPage()
	e.idx.reset(append(e.bufs[e.cur], byte(bw)), bw)
}

func (e *chunkEncoder) endIndexPage() error {
	e.bufs[e.cur] = e.idx.finish()
	return e.endPage(encRLEDict)
}

// smallDictionary builds the dictionary of an int32 column in e.small and
// e.slot; it returns false when a value is outside [0, smallDictMax).
func (e *chunkEncoder) smallDictionary(chunks []arrow.Array) bool {
	if e.slot == nil {
		e.slot = make([]int32, smallDictMax)
	}
	for _, v := range e.small {
		e.slot[v] = 0
	}
	e.small = e.small[:0]
	ok := true
	for _, a := range chunks {
		vs := a.(*array.Int32).Int32Values()
		validRuns(a, 0, len(vs), func(valid bool, from, to int) {
			if !valid || !ok {
				return
			}
			for _, v := range vs[from:to] {
				if uint32(v) >= smallDictMax {
					ok = false
					return
				}
				if e.slot[v] == 0 {
					e.small = append(e.small, v)
					e.slot[v] = int32(len(e.small))
				}
			}
		})
	}
	e.ndict = len(e.small)
	return ok
}

// encodeSmall writes the dictionary smallDictionary built and the
// bit-packed indices of the values.
func (e *chunkEncoder) encodeSmall(chunks []arrow.Array) error {
	e.dictEnc = true
	k := e.take()
	for _, v := range e.small {
		e.bufs[k] = binary.LittleEndian.AppendUint32(e.bufs[k], uint32(v))
	}
	if err := e.dictPage(k); err != nil {
		return err
	}
	bw := indexBits(e.ndict)
	e.startIndexPage(bw)
	for _, a := range chunks {
		vs := a.(*array.Int32).Int32Values()
		for i, n := 0, len(vs); i < n; {
			room := maxIndexRows(bw) - e.rows
			if room == 0 {
				if err := e.endIndexPage(); err != nil {
					return err
				}
				e.startIndexPage(bw)
				room = maxIndexRows(bw)
			}
			j := min(n, i+room)
			validRuns(a, i, j, func(valid bool, from, to int) {
				if e.col.nullable {
					e.levels.put(uint32(btoi(valid)), to-from)
				}
				if valid {
					ix := e.ix[:0]
					for _, v := range vs[from:to] {
						ix = append(ix, uint32(e.slot[v]-1))
					}
					e.idx.putEach(ix)
					e.ix = ix
				}
			})
			e.rows += j - i
			i = j
		}
	}
	return e.endIndexPage()
}
