package schema

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/compress"
	"github.com/apache/arrow/go/v16/parquet/metadata"
	"github.com/klauspost/compress/s2"
)

// chunkPages reads the pages of one column chunk from a single read of
// its bytes: page headers are parsed here (Thrift compact protocol) and an
// uncompressed page is a view of those bytes, so a value is copied twice
// in all (from the page cache into the chunk, from the chunk into its
// Arrow buffer) where Arrow Go v16's page reader copies each page twice
// more (through its stream buffer, into a decompression buffer, into a new
// page buffer). Every size read from the file is checked against the bytes
// present.
type chunkPages struct {
	buf   []byte  // the chunk's bytes, from a pool
	mm    mapping // or the file's mapping, buf then a view of it
	rest  []byte  // the bytes after the current page
	codec compress.Compression
	dec   compress.Codec // for codecs other than none and snappy
	out   []byte         // decompressed page, reused
	limit int
	left  int64 // values the chunk's metadata announces, not yet seen
}

// page is one page of a column chunk.
type page struct {
	typ    int32 // 0 data, 2 dictionary, 3 data v2
	data   []byte
	nvals  int
	enc    parquet.Encoding
	defEnc parquet.Encoding // data page v1
	defLen int              // data page v2: bytes of definition levels
	repLen int              // data page v2: bytes of repetition levels
}

const (
	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3
)

var chunkPool sync.Pool // *[]byte

// chunkReadable reports whether readChunk can read the column chunks of
// a file by this writer: parquet-mr before 1.2.9 under-reported chunk
// sizes (PARQUET-816), which Arrow's page reader pads for.
func chunkReadable(fm *metadata.FileMetaData) bool {
	v := fm.WriterVersion()
	return v == nil || !v.LessThan(metadata.Parquet816FixedVersion)
}

// readChunk reads the bytes of column chunk md from r (of size bytes),
// or views them in mm, the file's mapping, if not nil.
func readChunk(r io.ReaderAt, mm mapping, size int64, md *metadata.ColumnChunkMetaData, limit int) (*chunkPages, error) {
	start := md.DataPageOffset()
	if md.HasDictionaryPage() && md.DictionaryPageOffset() > 0 && md.DictionaryPageOffset() < start {
		start = md.DictionaryPageOffset()
	}
	n := md.TotalCompressedSize()
	if start < 0 || n < 0 || start > size || n > size-start || n > int64(limit) {
		return nil, corruptf("column chunk at %d, %d bytes, in a file of %d", start, n, size)
	}
	c := &chunkPages{codec: md.Compression(), limit: limit, left: md.NumValues()}
	switch c.codec {
	case compress.Codecs.Uncompressed, compress.Codecs.Snappy:
	default:
		dec, err := compress.GetCodec(c.codec)
		if err != nil {
			return nil, err
		}
		c.dec = dec
	}
	if mm != nil && int64(len(mm)) == size {
		c.mm, c.buf = mm, mm[start:start+n]
		c.rest = c.buf
		return c, nil
	}
	if p, ok := chunkPool.Get().(*[]byte); ok && int64(cap(*p)) >= n {
		c.buf = (*p)[:n]
	} else {
		c.buf = make([]byte, n)
	}
	if _, err := r.ReadAt(c.buf, start); err != nil {
		c.release()
		return nil, err
	}
	c.rest = c.buf
	return c, nil
}

// release returns the chunk's bytes to the pool, or drops its pages of
// a mapping from the process (they stay in the page cache); no page may be
// used after it.
func (c *chunkPages) release() {
	if c.mm != nil {
		c.mm.dropPages(c.buf)
		c.buf, c.rest = nil, nil
		return
	}
	if c.buf != nil {
		b := c.buf[:0]
		chunkPool.Put(&b)
		c.buf, c.rest = nil, nil
	}
}

// next returns the next page, skipping index pages and pages of unknown
// types. It returns io.EOF at the end of the chunk.
func (c *chunkPages) next() (page, error) {
	for {
		if len(c.rest) == 0 || c.left <= 0 {
			return page{}, io.EOF
		}
		var h pageHeader
		used, err := h.parse(c.rest)
		if err != nil {
			return page{}, err
		}
		c.rest = c.rest[used:]
		if h.compressed < 0 || h.uncompressed < 0 || int64(h.compressed) > int64(len(c.rest)) || int(h.uncompressed) > c.limit {
			return page{}, corruptf("page of %d bytes (%d uncompressed) in %d", h.compressed, h.uncompressed, len(c.rest))
		}
		raw := c.rest[:h.compressed]
		c.rest = c.rest[h.compressed:]
		p := page{typ: h.typ, nvals: int(h.nvals), enc: parquet.Encoding(h.enc), defEnc: parquet.Encoding(h.defEnc)}
		switch h.typ {
		case pageData, pageDictionary:
		case pageDataV2:
			if h.defLen < 0 || h.repLen < 0 || int64(h.defLen)+int64(h.repLen) > int64(len(raw)) {
				return page{}, corruptf("levels of a data page")
			}
			p.defLen, p.repLen = int(h.defLen), int(h.repLen)
		default:
			continue
		}
		if h.nvals < 0 {
			return page{}, corruptf("negative value count")
		}
		if h.typ != pageDictionary {
			c.left -= int64(h.nvals)
		}
		if p.data, err = c.decompress(raw, int(h.uncompressed), p.defLen+p.repLen, h.typ == pageDataV2 && !h.isCompressed); err != nil {
			return page{}, err
		}
		return p, nil
	}
}

// decompress returns the uncompressed bytes of a page: raw itself when
// it is not compressed. The first levels bytes (levels of a v2 data page)
// are never compressed.
func (c *chunkPages) decompress(raw []byte, n, levels int, plain bool) ([]byte, error) {
	if c.codec == compress.Codecs.Uncompressed || plain {
		if len(raw) != n {
			return nil, corruptf("page of %d bytes, %d announced", len(raw), n)
		}
		return raw, nil
	}
	if c.dec == nil { // snappy: its length prefix must agree before allocating
		if m, err := s2.DecodedLen(raw[levels:]); err != nil || m != n-levels {
			return nil, corruptf("snappy page of %d bytes, %d announced", m, n-levels)
		}
	}
	if levels > n {
		return nil, corruptf("page levels longer than the page")
	}
	if cap(c.out) < n {
		c.out = make([]byte, n)
	}
	out := c.out[:n]
	copy(out, raw[:levels])
	src, dst := raw[levels:], out[levels:]
	var got []byte
	if c.dec == nil {
		var err error
		if got, err = s2.Decode(dst, src); err != nil {
			return nil, corruptf("snappy page: %v", err)
		}
	} else {
		got = c.dec.Decode(dst, src)
	}
	if len(got) != len(dst) {
		return nil, corruptf("page decompressed to %d bytes, %d announced", len(got), len(dst))
	}
	if len(got) > 0 && &got[0] != &dst[0] {
		copy(dst, got)
	}
	return out, nil
}

// pageHeader holds the fields of a Parquet PageHeader this reader uses.
type pageHeader struct {
	typ, uncompressed, compressed int32
	nvals, enc, defEnc            int32
	defLen, repLen                int32
	isCompressed                  bool
}

// compact is a reader of the Thrift compact protocol over a byte slice.
type compact struct {
	b   []byte
	err error
}

func (t *compact) fail(what string) {
	if t.err == nil {
		t.err = corruptf("page header: %s", what)
	}
	t.b = nil
}

func (t *compact) byte1() byte {
	if len(t.b) < 1 {
		t.fail("truncated")
		return 0
	}
	v := t.b[0]
	t.b = t.b[1:]
	return v
}

func (t *compact) uvarint() uint64 {
	v, n := binary.Uvarint(t.b)
	if n <= 0 {
		t.fail("bad varint")
		return 0
	}
	t.b = t.b[n:]
	return v
}

func (t *compact) varint() int64 {
	u := t.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (t *compact) i32() int32 {
	v := t.varint()
	if int64(int32(v)) != v {
		t.fail("i32 out of range")
	}
	return int32(v)
}

// fields calls f with the id and type of each field of a struct, which
// must consume the value (through skip or a typed read); it stops at the
// struct's end.
func (t *compact) fields(f func(id int16, typ byte)) {
	var last int16
	for t.err == nil {
		h := t.byte1()
		if t.err != nil {
			return
		}
		typ := h & 0x0f
		if typ == 0 {
			return
		}
		id := last + int16(h>>4)
		if h>>4 == 0 {
			id = int16(t.varint())
		}
		last = id
		f(id, typ)
	}
}

// skip skips a value of compact type typ.
func (t *compact) skip(typ byte, depth int) {
	if depth > 32 {
		t.fail("nested too deep")
		return
	}
	switch typ {
	case 1, 2: // boolean in a field header
	case 3:
		t.byte1()
	case 4, 5, 6:
		t.uvarint()
	case 7:
		if len(t.b) < 8 {
			t.fail("truncated")
			return
		}
		t.b = t.b[8:]
	case 8:
		n := t.uvarint()
		if n > uint64(len(t.b)) {
			t.fail("truncated binary")
			return
		}
		t.b = t.b[n:]
	case 9, 10:
		h := t.byte1()
		n := uint64(h >> 4)
		if n == 15 {
			n = t.uvarint()
		}
		et := h & 0x0f
		if n > uint64(len(t.b)) { // every element takes a byte at least
			t.fail("list longer than its bytes")
			return
		}
		for i := uint64(0); i < n && t.err == nil; i++ {
			if et == 1 || et == 2 {
				t.byte1()
			} else {
				t.skip(et, depth+1)
			}
		}
	case 11:
		n := t.uvarint()
		if n == 0 {
			return
		}
		kv := t.byte1()
		if n > uint64(len(t.b)) {
			t.fail("map longer than its bytes")
			return
		}
		for i := uint64(0); i < n && t.err == nil; i++ {
			for _, et := range []byte{kv >> 4, kv & 0x0f} {
				if et == 1 || et == 2 {
					t.byte1()
				} else {
					t.skip(et, depth+1)
				}
			}
		}
	case 12:
		t.fields(func(_ int16, typ byte) { t.skip(typ, depth+1) })
	default:
		t.fail(fmt.Sprintf("type %d", typ))
	}
}

// parse reads a PageHeader from b and returns its length.
func (h *pageHeader) parse(b []byte) (int, error) {
	t := &compact{b: b}
	*h = pageHeader{typ: -1, uncompressed: -1, compressed: -1, nvals: -1, isCompressed: true}
	i32 := func(typ byte, dst *int32) {
		if typ != 5 {
			t.skip(typ, 1)
			return
		}
		*dst = t.i32()
	}
	t.fields(func(id int16, typ byte) {
		switch id {
		case 1:
			i32(typ, &h.typ)
		case 2:
			i32(typ, &h.uncompressed)
		case 3:
			i32(typ, &h.compressed)
		case 5, 7, 8: // data, dictionary, data v2 page headers
			if typ != 12 {
				t.skip(typ, 1)
				return
			}
			st := id
			t.fields(func(id int16, typ byte) {
				switch {
				case id == 1:
					i32(typ, &h.nvals)
				case st == 5 && id == 2, st == 7 && id == 2, st == 8 && id == 4:
					i32(typ, &h.enc)
				case st == 5 && id == 3:
					i32(typ, &h.defEnc)
				case st == 8 && id == 5:
					i32(typ, &h.defLen)
				case st == 8 && id == 6:
					i32(typ, &h.repLen)
				case st == 8 && id == 7 && (typ == 1 || typ == 2):
					h.isCompressed = typ == 1
				default:
					t.skip(typ, 2)
				}
			})
		default:
			t.skip(typ, 1)
		}
	})
	if t.err != nil {
		return 0, t.err
	}
	if h.typ < 0 || h.uncompressed < 0 || h.compressed < 0 {
		return 0, corruptf("page header without its sizes")
	}
	if (h.typ == pageData || h.typ == pageDictionary || h.typ == pageDataV2) && h.nvals < 0 {
		return 0, corruptf("page header without a value count")
	}
	return len(b) - len(t.b), nil
}
