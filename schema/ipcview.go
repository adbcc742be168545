package schema

import (
	"encoding/binary"
	"errors"
	"sync/atomic"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/endian"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// errNoView marks a record batch that viewRecord leaves to the Arrow
// reader: compressed buffers, a type it does not lay out, a buffer that
// is not aligned for its values.
var errNoView = errors.New("record batch cannot be viewed in place")

// RecordBatch table slots (Message.header when its type is RecordBatch).
const (
	slotBatchLength      = 4
	slotBatchCompression = 10
)

// viewRecord decodes the record batch whose Message metadata is meta and
// whose body readBody returns, once the metadata shows the batch can be
// viewed, without copying: every buffer of the record is a view of the
// body. The body is Go memory the record keeps alive (rel nil), or part of
// a mapping that is never unmapped, whose pages rel drops when the last of
// the record's buffers is released (strings taken from the record may
// outlive it: they read the pages back from the page cache). It returns
// errNoView for a batch to leave to the Arrow reader, and readBody's
// error.
func viewRecord(s *arrow.Schema, meta []byte, readBody func() ([]byte, error), rel *pageRelease) (rec arrow.Record, err error) {
	defer func() {
		if recover() != nil { // an offset outside the metadata: leave it to the Arrow reader
			rec, err = nil, errNoView
		}
	}()
	if s.Endianness() != endian.NativeEndian {
		return nil, errNoView
	}
	m, err := rootTable(meta)
	if err != nil {
		return nil, errNoView
	}
	if m.GetByteSlot(slotMessageHeaderType, 0) != headerRecordBatch {
		return nil, errNoView
	}
	h, ok := m.table(slotMessageHeader)
	if !ok {
		return nil, errNoView
	}
	if _, ok := h.table(slotBatchCompression); ok {
		return nil, errNoView
	}
	if n, _, err := h.vector(slotBatchVariadic, 8); err != nil || n > 0 {
		return nil, errNoView
	}
	l := &batchLayout{fb: h.Bytes, rel: rel}
	if l.nNodes, l.nodes, err = h.vector(slotBatchNodes, sizeFieldNode); err != nil {
		return nil, errNoView
	}
	if l.nBufs, l.bufs, err = h.vector(slotBatchBuffers, sizeBuffer); err != nil {
		return nil, errNoView
	}
	if l.body, err = readBody(); err != nil {
		return nil, err
	}
	rows := h.GetInt64Slot(slotBatchLength, 0)
	cols := make([]arrow.Array, 0, s.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release() // the record holds its own references
		}
	}()
	for _, f := range s.Fields() {
		d, err := l.array(f.Type, 0)
		if err != nil {
			return nil, err
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	if rows < 0 || int64(int(rows)) != rows {
		return nil, errNoView
	}
	return array.NewRecord(s, cols, rows), nil
}

// batchLayout walks a record batch's field nodes and buffers in the
// order the IPC format lays them out (depth first).
type batchLayout struct {
	fb            []byte // the metadata flatbuffer
	nodes, bufs   flatbuffers.UOffsetT
	nNodes, nBufs int
	node, buf     int // the next of each
	body          []byte
	rel           *pageRelease // nil: the body is Go memory
}

func (l *batchLayout) nextNode() (length, nulls int64, err error) {
	if l.node >= l.nNodes {
		return 0, 0, errNoView
	}
	at := int(l.nodes) + l.node*sizeFieldNode
	l.node++
	length = int64(binary.LittleEndian.Uint64(l.fb[at:]))
	nulls = int64(binary.LittleEndian.Uint64(l.fb[at+8:]))
	if length < 0 || nulls < 0 || nulls > length || int64(int(length)) != length {
		return 0, 0, errNoView
	}
	return length, nulls, nil
}

// nextBuffer returns the next buffer as a view of the body, nil when it
// is empty or skip is set; its offset must be a multiple of align.
func (l *batchLayout) nextBuffer(align int64, skip bool) (*memory.Buffer, error) {
	if l.buf >= l.nBufs {
		return nil, errNoView
	}
	at := int(l.bufs) + l.buf*sizeBuffer
	l.buf++
	off := int64(binary.LittleEndian.Uint64(l.fb[at:]))
	n := int64(binary.LittleEndian.Uint64(l.fb[at+8:]))
	if off < 0 || n < 0 || off > int64(len(l.body)) || n > int64(len(l.body))-off || off%align != 0 {
		return nil, errNoView
	}
	if skip || n == 0 {
		return nil, nil
	}
	view := l.body[off : off+n : off+n]
	if l.rel == nil {
		return memory.NewBufferBytes(view), nil
	}
	l.rel.refs.Add(1)
	return memory.NewBufferWithAllocator(view, l.rel), nil
}

// array lays out one array of type t and its children.
func (l *batchLayout) array(t arrow.DataType, depth int) (d *array.Data, err error) {
	if depth > maxNesting {
		return nil, errNoView
	}
	length, nulls, err := l.nextNode()
	if err != nil {
		return nil, err
	}
	if t, ok := t.(*arrow.RunEndEncodedType); ok {
		return l.runEndEncoded(t, length, nulls, depth)
	}
	var bufs []*memory.Buffer
	var children []arrow.ArrayData
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.Release() // NewData holds its own references
			}
		}
		for _, c := range children {
			c.Release()
		}
	}()
	add := func(align int64, skip bool) error {
		b, err := l.nextBuffer(align, skip)
		bufs = append(bufs, b)
		return err
	}
	if err := add(1, nulls == 0); err != nil { // validity
		return nil, err
	}
	switch t := t.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		if err := add(4, false); err != nil {
			return nil, err
		}
		if err := add(1, false); err != nil {
			return nil, err
		}
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		if err := add(8, false); err != nil {
			return nil, err
		}
		if err := add(1, false); err != nil {
			return nil, err
		}
	case *arrow.ListType, *arrow.MapType, *arrow.LargeListType:
		align := int64(4)
		if t.ID() == arrow.LARGE_LIST {
			align = 8
		}
		if err := add(align, false); err != nil {
			return nil, err
		}
		c, err := l.array(t.(arrow.ListLikeType).Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		children = append(children, c)
	case *arrow.StructType:
		for _, f := range t.Fields() {
			c, err := l.array(f.Type, depth+1)
			if err != nil {
				return nil, err
			}
			children = append(children, c)
		}
	case *arrow.BooleanType:
		if err := add(1, false); err != nil {
			return nil, err
		}
	case arrow.FixedWidthDataType:
		w := t.BitWidth() / 8
		if t.BitWidth()%8 != 0 || w == 0 || t.ID() == arrow.DICTIONARY || t.ID() == arrow.EXTENSION {
			return nil, errNoView
		}
		if err := add(alignOf(w), false); err != nil {
			return nil, err
		}
	default:
		return nil, errNoView
	}
	return array.NewData(t, int(length), bufs, children, int(nulls), 0), nil
}

// runEndEncoded lays out a run-end encoded array of length rows: no
// buffers of its own (not even validity), then its run ends, then its
// values. Run ends of the array's type without nulls only: the Arrow
// reader reports the others.
func (l *batchLayout) runEndEncoded(t *arrow.RunEndEncodedType, length, nulls int64, depth int) (*array.Data, error) {
	if nulls != 0 || !t.ValidRunEndsType(t.RunEnds()) {
		return nil, errNoView
	}
	ends, err := l.array(t.RunEnds(), depth+1)
	if err != nil {
		return nil, err
	}
	defer ends.Release()
	if ends.NullN() != 0 {
		return nil, errNoView
	}
	values, err := l.array(t.Encoded(), depth+1)
	if err != nil {
		return nil, err
	}
	defer values.Release()
	return array.NewData(t, int(length), []*memory.Buffer{nil}, []arrow.ArrayData{ends, values}, 0, 0), nil
}

// alignOf is the alignment a buffer of w-byte values needs: the largest
// power of two up to 8 that divides w.
func alignOf(w int) int64 {
	switch {
	case w%8 == 0:
		return 8
	case w%4 == 0:
		return 4
	case w%2 == 0:
		return 2
	}
	return 1
}

// pageRelease is the allocator of the buffers of a record viewing a
// mapping: it never allocates, and when the last of its buffers is freed it
// drops the pages of the record's message from the process (they stay in
// the page cache).
type pageRelease struct {
	mm   mapping
	msg  []byte // the message, a part of mm
	refs atomic.Int64
}

func (p *pageRelease) Allocate(int) []byte           { panic("schema: a viewed buffer cannot grow") }
func (p *pageRelease) Reallocate(int, []byte) []byte { panic("schema: a viewed buffer cannot grow") }

func (p *pageRelease) Free([]byte) {
	if p.refs.Add(-1) == 0 {
		p.mm.drop(p.msg)
	}
}
