package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/metadata"
)

// pageColumn decodes the pages of one flat column chunk itself, rather
// than through the column chunk reader, for the encodings writers use for
// flat columns: PLAIN, DELTA_LENGTH_BYTE_ARRAY (strings) and dictionary
// (PLAIN dictionary page, RLE / bit-packed hybrid indices) values, RLE
// definition levels. A DELTA_LENGTH_BYTE_ARRAY page's lengths are
// decoded when the page is loaded, and checked against its bytes once;
// its values are then offsets and one copy. A PLAIN byte-array page
// becomes offsets and one data buffer in a tight loop,
// without the []parquet.ByteArray the column reader fills (a pointer a
// value, each one a write barrier while the collector runs); a dictionary
// page is copied once and its entries copied per row by index; PLAIN
// fixed-width values are one copy. Every length and index read from the
// file is checked against the bytes present.
type pageColumn struct {
	pages    *chunkPages
	byteArr  bool // BYTE_ARRAY, else fixed width
	width    int  // bytes a fixed-width value
	nullable bool // max definition level 1 (0 when false)
	limit    int  // the most string bytes one batch may hold

	hasDict bool
	dict    Strings // byte-array dictionary entries
	dictFix []byte  // fixed-width dictionary entries, width bytes each
	ndict   int

	left   int     // values (rows) left in the current data page
	plain  []byte  // the rest of a PLAIN page's values
	useIdx bool    // the page is dictionary-encoded: indices in idx
	useLen bool    // the page is DELTA_LENGTH_BYTE_ARRAY: lens, then plain holds the bytes
	lens   []int32 // the lengths of the page's values not read yet
	lenBuf []int32 // the page's lengths (reused from page to page)
	idx    hybrid
	def    hybrid // definition levels of a nullable column

	levels []uint32 // scratch: definition levels or indices of a run of rows
	err    error    // the first error of nextPage
}

var errPageEncoding = errors.New("unsupported page encoding")

// pageDecodable reports whether the column chunk's declared encodings are
// all ones pageColumn decodes.
func pageDecodable(md *metadata.ColumnChunkMetaData) bool {
	if md == nil || md.CryptoMetadata() != nil {
		return false
	}
	for _, e := range md.Encodings() {
		switch e {
		case parquet.Encodings.Plain, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict, parquet.Encodings.RLE,
			parquet.Encodings.DeltaLengthByteArray:
		default:
			return false
		}
	}
	return true
}

func newPageColumn(pages *chunkPages, t parquet.Type, nullable bool, limit int) (*pageColumn, error) {
	c := &pageColumn{pages: pages, nullable: nullable, limit: limit}
	switch t {
	case parquet.Types.ByteArray:
		c.byteArr = true
	case parquet.Types.Int32, parquet.Types.Float:
		c.width = 4
	case parquet.Types.Int64, parquet.Types.Double:
		c.width = 8
	default:
		return nil, fmt.Errorf("%w: physical type %s", errPageEncoding, t)
	}
	return c, nil
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// nextPage moves to the next data page, reading a dictionary page on the
// way. Its first error is returned by every later call too.
func (c *pageColumn) nextPage() error {
	if c.err == nil {
		c.err = c.advance()
	}
	return c.err
}

func (c *pageColumn) advance() error {
	for {
		p, err := c.pages.next()
		if err == io.EOF {
			return corruptf("column chunk holds fewer values than its row group's rows")
		}
		if err != nil {
			return err
		}
		data := p.data
		switch p.typ {
		case pageDictionary:
			if c.hasDict {
				return corruptf("second dictionary page")
			}
			if p.enc != parquet.Encodings.Plain && p.enc != parquet.Encodings.PlainDict {
				return fmt.Errorf("%w: dictionary page %s", errPageEncoding, p.enc)
			}
			if err := c.readDictionary(data, p.nvals); err != nil {
				return err
			}
			c.hasDict = true
			continue
		case pageData:
			if c.nullable {
				if p.defEnc != parquet.Encodings.RLE {
					return fmt.Errorf("%w: definition levels %s", errPageEncoding, p.defEnc)
				}
				if len(data) < 4 {
					return corruptf("data page too short for its definition levels")
				}
				n := binary.LittleEndian.Uint32(data)
				if uint64(n) > uint64(len(data)-4) {
					return corruptf("definition levels longer than their page")
				}
				c.def.init(data[4:4+n], 1)
				data = data[4+n:]
			}
		case pageDataV2:
			if p.repLen != 0 || (!c.nullable && p.defLen != 0) {
				return corruptf("levels of a flat column's data page")
			}
			if c.nullable {
				c.def.init(data[:p.defLen], 1)
			}
			data = data[p.defLen:]
		}
		c.useLen = false
		switch p.enc {
		case parquet.Encodings.Plain:
			c.plain, c.useIdx = data, false
		case parquet.Encodings.DeltaLengthByteArray:
			if !c.byteArr {
				return fmt.Errorf("%w: data page %s of a fixed-width column", errPageEncoding, p.enc)
			}
			if err := c.readLengths(data, p.nvals); err != nil {
				return err
			}
			c.useIdx, c.useLen = false, true
		case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
			if !c.hasDict {
				return corruptf("dictionary-encoded page without a dictionary")
			}
			if len(data) < 1 || data[0] > 32 {
				return corruptf("dictionary index bit width")
			}
			c.idx.init(data[1:], uint(data[0]))
			c.useIdx = true
		default:
			return fmt.Errorf("%w: data page %s", errPageEncoding, p.enc)
		}
		if p.nvals == 0 {
			continue
		}
		c.left = p.nvals
		return nil
	}
}

// readLengths decodes the lengths of a DELTA_LENGTH_BYTE_ARRAY page of
// at most rows values and checks them against the bytes after them,
// which become c.plain.
func (c *pageColumn) readLengths(data []byte, rows int) error {
	if c.lenBuf == nil {
		if p, ok := lengthScratch.Get().(*[]int32); ok {
			c.lenBuf = *p
		}
	}
	lens, rest, err := decodeDeltaPacked(data, max(rows, 0), c.lenBuf)
	if err != nil {
		return err
	}
	total := int64(0)
	for _, l := range lens {
		if l < 0 {
			return corruptf("negative byte array length")
		}
		total += int64(l)
	}
	if total > int64(len(rest)) {
		return corruptf("byte array values longer than their page")
	}
	c.lenBuf, c.lens, c.plain = lens, lens, rest
	return nil
}

// appendLengths appends the next n values of a DELTA_LENGTH_BYTE_ARRAY
// page to b: their offsets, and their bytes in one copy. The data buffer
// may not grow past c.limit.
func (c *pageColumn) appendLengths(b *Strings, n int) error {
	if n > len(c.lens) {
		return corruptf("byte array page holds fewer values than its rows")
	}
	off, at := slices.Grow(b.Offsets, n), int64(len(b.Data))
	start := at
	for _, l := range c.lens[:n] {
		at += int64(l)
		off = append(off, int32(at))
	}
	if at > int64(c.limit) {
		return corruptf("string values larger than the input can justify")
	}
	size := int(at - start)
	b.Offsets, b.Data = off, append(b.Data, c.plain[:size]...)
	c.lens, c.plain = c.lens[n:], c.plain[size:]
	return nil
}

func (c *pageColumn) readDictionary(data []byte, n int) error {
	if n < 0 {
		return corruptf("negative dictionary size")
	}
	if !c.byteArr {
		if int64(n)*int64(c.width) > int64(len(data)) {
			return corruptf("dictionary page shorter than its values")
		}
		c.dictFix = slices.Clone(data[:n*c.width])
		c.ndict = n
		return nil
	}
	if n > len(data)/4 {
		return corruptf("dictionary page shorter than its values")
	}
	c.dict = NewStrings(n, len(data)-4*n)
	rest, err := appendPlain(&c.dict, data, n, len(data))
	if err != nil {
		return err
	}
	_ = rest
	c.ndict = n
	return nil
}

// appendPlain appends n PLAIN byte-array values from data to b, and
// returns the bytes after them. The data buffer may not grow past limit.
// A value of up to 16 bytes with room after it, in data and in b, is
// copied as two 8-byte words (the bytes past it are overwritten by the
// next value or lie past the data's length).
func appendPlain(b *Strings, data []byte, n, limit int) ([]byte, error) {
	off, buf := slices.Grow(b.Offsets, n), b.Data
	for range n {
		if len(data) < 4 {
			return nil, corruptf("byte array page shorter than its values")
		}
		l := binary.LittleEndian.Uint32(data)
		if uint64(l) > uint64(len(data)-4) {
			return nil, corruptf("byte array value longer than its page")
		}
		end := len(buf) + int(l)
		if end > limit {
			return nil, corruptf("string values larger than the input can justify")
		}
		if l <= 16 && len(data) >= 20 && len(buf)+16 <= cap(buf) {
			src, dst := data[4:20], buf[len(buf):len(buf)+16]
			binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src))
			binary.LittleEndian.PutUint64(dst[8:], binary.LittleEndian.Uint64(src[8:]))
			buf = buf[:end]
		} else {
			buf = append(buf, data[4:4+l]...)
		}
		off = append(off, int32(end))
		data = data[4+l:]
	}
	b.Offsets, b.Data = off, buf
	return data, nil
}

// sizeHint estimates the bytes the next n strings take, from the current
// page (or its dictionary): the average value length times n, plus an
// eighth. It returns 0 when no page is loaded.
func (c *pageColumn) sizeHint(n int) int {
	var avg float64
	var seen int // bytes the estimate comes from
	switch {
	case c.left == 0:
		if c.nextPage() != nil {
			return 0 // reading reports it
		}
		return c.sizeHint(n)
	case c.useIdx && c.ndict > 0:
		avg, seen = float64(len(c.dict.Data))/float64(c.ndict), len(c.dict.Data)
	case c.useLen:
		avg, seen = float64(len(c.plain))/float64(max(len(c.lens), 1)), len(c.plain)
	case !c.useIdx:
		avg, seen = float64(max(len(c.plain)-4*c.left, 0))/float64(c.left), len(c.plain)
	}
	// A hostile row count must not turn a small page into a large
	// allocation: past 16 times what was seen, appending grows the buffer.
	return int(min(avg*float64(n)*9/8, float64(c.limit), float64(16*seen+1<<20)))
}

// levelScratch keeps the scratch slices of finished page columns: one a
// column chunk, of a batch's rows, would otherwise be allocated for every
// column of every row group.
var levelScratch sync.Pool

// scratch returns c.levels with room for n values.
func (c *pageColumn) scratch(n int) []uint32 {
	if c.levels == nil {
		if p, ok := levelScratch.Get().(*[]uint32); ok {
			c.levels = *p
		}
	}
	if cap(c.levels) < n {
		c.levels = make([]uint32, n)
	}
	return c.levels[:n]
}

// lengthScratch keeps the DELTA_LENGTH_BYTE_ARRAY length slices of
// finished page columns, as levelScratch does their levels.
var lengthScratch sync.Pool

// release keeps c's scratch for another column; c is not used again.
func (c *pageColumn) release() {
	if l := c.levels; l != nil {
		levelScratch.Put(&l)
		c.levels = nil
	}
	if l := c.lenBuf; l != nil {
		lengthScratch.Put(&l)
		c.lenBuf, c.lens = nil, nil
	}
}

// definitions decodes the definition levels of the next k rows of the page
// into c.levels and returns how many are defined.
func (c *pageColumn) definitions(k int) ([]uint32, int, error) {
	lv := c.scratch(k)
	if err := c.def.read(lv); err != nil {
		return nil, 0, err
	}
	m := 0
	for _, l := range lv {
		if l > 1 {
			return nil, 0, corruptf("definition level %d above 1", l)
		}
		m += int(l)
	}
	return lv, m, nil
}

// levelsFor reads the definition levels of the next k rows, after done
// rows of the batch: lv is nil when all k are defined (m is how many are).
// valid stays nil as long as every row of the batch is defined, and
// holds the validity of each row once one is not.
func (c *pageColumn) levelsFor(k, done int, valid *[]bool) (lv []uint32, m int, err error) {
	if c.def.rep == 0 && c.def.lit == 0 {
		if err := c.def.nextRun(); err != nil {
			return nil, 0, err
		}
	}
	if c.def.rep >= k && c.def.val == 1 { // the common case: one run of defined rows
		c.def.rep -= k
		lv, m = nil, k
	} else if lv, m, err = c.definitions(k); err != nil {
		return nil, 0, err
	}
	if m == k {
		if *valid != nil {
			for range k {
				*valid = append(*valid, true)
			}
		}
		return nil, k, nil
	}
	lv = slices.Clone(lv) // c.levels is reused for indices
	if *valid == nil {
		*valid = make([]bool, done, done+k)
		for i := range *valid {
			(*valid)[i] = true
		}
	}
	for _, l := range lv {
		*valid = append(*valid, l == 1)
	}
	return lv, m, nil
}

// readStrings appends the next n rows of a byte-array column to b; valid
// (nil for required columns) gets their validity.
func (c *pageColumn) readStrings(b *Strings, valid *[]bool, n int) error {
	for n > 0 {
		if c.left == 0 {
			if err := c.nextPage(); err != nil {
				return err
			}
		}
		k := min(n, c.left)
		m := k
		var lv []uint32
		if c.nullable {
			var err error
			if lv, m, err = c.levelsFor(k, b.Len(), valid); err != nil {
				return err
			}
		}
		start := b.Len()
		if err := c.appendValues(b, m, k); err != nil {
			return err
		}
		if m != k {
			spreadStrings(b, start, lv)
		}
		c.left -= k
		n -= k
	}
	return nil
}

// appendValues appends the next m values of the page (of k rows left to
// read in it) to b.
func (c *pageColumn) appendValues(b *Strings, m, k int) error {
	if c.useLen {
		return c.appendLengths(b, m)
	}
	if !c.useIdx {
		rest, err := appendPlain(b, c.plain, m, c.limit)
		c.plain = rest
		return err
	}
	return c.indexRuns(m,
		func(j uint32, n int) error { return c.appendRepeated(b, j, n) },
		func(ix []uint32) error { return c.appendEntries(b, ix) })
}

// indexRuns walks the next k dictionary indices of a dictionary-encoded
// page as they come: runs of one index (a query's rows, in a query_id
// column), for which it calls run with the index and the run's length,
// and bit-packed stretches of others, for which it calls lits.
func (c *pageColumn) indexRuns(k int, run func(j uint32, n int) error, lits func(ix []uint32) error) error {
	for h := &c.idx; k > 0; {
		switch {
		case h.rep > 0:
			n := min(h.rep, k)
			if err := run(h.val, n); err != nil {
				return err
			}
			h.rep -= n
			k -= n
		case h.lit > 0:
			ix := c.scratch(min(h.lit, k))
			if err := h.read(ix); err != nil {
				return err
			}
			if err := lits(ix); err != nil {
				return err
			}
			k -= len(ix)
		default:
			if err := h.nextRun(); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendRepeated appends dictionary entry j n times to b, copying the
// copies already made (so a run of n takes about log2(n) copies).
func (c *pageColumn) appendRepeated(b *Strings, j uint32, n int) error {
	if int(j) >= c.ndict {
		return corruptf("dictionary index %d of %d entries", j, c.ndict)
	}
	e := c.dict.Data[c.dict.Offsets[j]:c.dict.Offsets[j+1]]
	start := len(b.Data)
	if int64(start)+int64(n)*int64(len(e)) > int64(c.limit) {
		return corruptf("string values larger than the input can justify")
	}
	total := n * len(e)
	buf := slices.Grow(b.Data, total)[:start+total]
	copied := copy(buf[start:], e)
	for copied < total {
		copied += copy(buf[start+copied:], buf[start:start+copied])
	}
	off := slices.Grow(b.Offsets, n)
	at := int32(start)
	for range n {
		at += int32(len(e))
		off = append(off, at)
	}
	b.Offsets, b.Data = off, buf
	return nil
}

// appendEntries appends the dictionary entries of indices ix to b.
func (c *pageColumn) appendEntries(b *Strings, ix []uint32) error {
	// Size the values first, then copy them into place.
	doff, ddata := c.dict.Offsets, c.dict.Data
	size := len(b.Data)
	for _, j := range ix {
		if int(j) >= c.ndict {
			return corruptf("dictionary index %d of %d entries", j, c.ndict)
		}
		size += int(doff[j+1] - doff[j])
		if size > c.limit {
			return corruptf("string values larger than the input can justify")
		}
	}
	off := slices.Grow(b.Offsets, len(ix))
	buf := slices.Grow(b.Data, size-len(b.Data))
	at := len(buf)
	buf = buf[:size]
	for _, j := range ix {
		at += copy(buf[at:], ddata[doff[j]:doff[j+1]])
		off = append(off, int32(at))
	}
	b.Offsets, b.Data = off, buf
	return nil
}

// spreadStrings spreads the values appended to b since string start over
// the rows of levels lv, inserting an empty string for each null.
func spreadStrings(b *Strings, start int, lv []uint32) {
	dense := slices.Clone(b.Offsets[start+1:])
	b.Offsets = b.Offsets[:start+1]
	k := 0
	for _, l := range lv {
		if l == 1 {
			b.Offsets = append(b.Offsets, dense[k])
			k++
		} else {
			b.Offsets = append(b.Offsets, b.Offsets[len(b.Offsets)-1])
		}
	}
}

// readFixed reads the next len(out)/width rows of a fixed-width column
// into out (a null row gets zero bytes); valid (nil for required columns)
// gets their validity.
func (c *pageColumn) readFixed(out []byte, valid *[]bool) error {
	w := c.width
	for done := 0; len(out) > 0; {
		if c.left == 0 {
			if err := c.nextPage(); err != nil {
				return err
			}
		}
		k := min(len(out)/w, c.left)
		m := k
		var lv []uint32
		if c.nullable {
			var err error
			if lv, m, err = c.levelsFor(k, done, valid); err != nil {
				return err
			}
		}
		dst := out[:k*w]
		if c.useIdx {
			ix := c.scratch(m)
			if err := c.idx.read(ix); err != nil {
				return err
			}
			if err := c.lookupFixed(dst, ix); err != nil {
				return err
			}
		} else {
			if m*w > len(c.plain) {
				return corruptf("page shorter than its values")
			}
			copy(dst, c.plain[:m*w])
			c.plain = c.plain[m*w:]
		}
		if m != k {
			// Spread the m dense values over the k rows, from the end.
			j := m - 1
			for i := k - 1; i >= 0; i-- {
				if lv[i] == 1 {
					copy(dst[i*w:(i+1)*w], dst[j*w:(j+1)*w])
					j--
				} else {
					clear(dst[i*w : (i+1)*w])
				}
			}
		}
		c.left -= k
		out = out[k*w:]
		done += k
	}
	return nil
}

// lookupFixed writes the fixed-width dictionary entries of indices ix to
// dst.
func (c *pageColumn) lookupFixed(dst []byte, ix []uint32) error {
	w, d := c.width, c.dictFix
	for _, j := range ix {
		if int(j) >= c.ndict {
			return corruptf("dictionary index %d of %d entries", j, c.ndict)
		}
	}
	switch w {
	case 4:
		dst = dst[:4*len(ix)]
		for i, j := range ix {
			binary.LittleEndian.PutUint32(dst[4*i:], binary.LittleEndian.Uint32(d[4*j:]))
		}
	case 8:
		dst = dst[:8*len(ix)]
		for i, j := range ix {
			binary.LittleEndian.PutUint64(dst[8*i:], binary.LittleEndian.Uint64(d[8*j:]))
		}
	}
	return nil
}

// hybrid decodes the RLE / bit-packed hybrid encoding of Parquet levels
// and dictionary indices.
type hybrid struct {
	data []byte
	bw   uint
	rep  int    // values left in the current RLE run
	val  uint32 // the value of that run
	lit  int    // values left in the current bit-packed run
	bits []byte // that run's bytes
	pos  uint   // the bit position of its next value in bits
}

func (h *hybrid) init(data []byte, bw uint) {
	*h = hybrid{data: data, bw: bw}
}

// read fills out with the next len(out) values.
func (h *hybrid) read(out []uint32) error {
	for len(out) > 0 {
		switch {
		case h.rep > 0:
			k := min(h.rep, len(out))
			v := h.val
			for i := range out[:k] {
				out[i] = v
			}
			h.rep -= k
			out = out[k:]
		case h.lit > 0:
			k := min(h.lit, len(out))
			bw, mask := h.bw, uint64(1)<<h.bw-1
			for i := range out[:k] {
				p := h.pos >> 3
				var w uint64
				if int(p)+8 <= len(h.bits) {
					w = binary.LittleEndian.Uint64(h.bits[p:])
				} else {
					var tmp [8]byte
					copy(tmp[:], h.bits[p:])
					w = binary.LittleEndian.Uint64(tmp[:])
				}
				out[i] = uint32(w >> (h.pos & 7) & mask)
				h.pos += bw
			}
			h.lit -= k
			out = out[k:]
		default:
			if err := h.nextRun(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *hybrid) nextRun() error {
	header, n := binary.Uvarint(h.data)
	if n <= 0 {
		return corruptf("RLE data ends before its values")
	}
	h.data = h.data[n:]
	count := header >> 1
	if header&1 == 0 {
		nb := int(h.bw+7) / 8
		if len(h.data) < nb || count == 0 || count > math.MaxInt32 {
			return corruptf("RLE run")
		}
		var v uint32
		for i := nb - 1; i >= 0; i-- {
			v = v<<8 | uint32(h.data[i])
		}
		if h.bw < 32 && v>>h.bw != 0 {
			return corruptf("RLE run value wider than its bit width")
		}
		h.data = h.data[nb:]
		h.rep, h.val = int(count), v
		return nil
	}
	if count == 0 || count > math.MaxInt32/8 {
		return corruptf("bit-packed run")
	}
	if h.bw == 0 {
		h.rep, h.val = int(count*8), 0
		return nil
	}
	// A final run may be cut short: keep the values its bytes hold.
	nb := min(count*uint64(h.bw), uint64(len(h.data)))
	vals := nb * 8 / uint64(h.bw)
	if vals == 0 {
		return corruptf("bit-packed run ends before its values")
	}
	h.bits, h.pos = h.data[:nb], 0
	h.lit = int(min(vals, count*8))
	h.data = h.data[nb:]
	return nil
}
