package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/apache/arrow/go/v16/arrow/memory"
)

// The Arrow Go IPC reader trusts the lengths it finds in a file: a vector
// length in the schema, a message or body length, a block in the footer,
// an uncompressed size. A corrupt or hostile file can make it allocate
// terabytes, which kills the process outright (the runtime's out-of-memory
// is not a panic that can be recovered). CheckIPCStream and CheckIPCFile
// walk the file's framing and flatbuffer tables first and reject any length
// that does not fit in the bytes actually present; LimitedAllocator bounds
// what decompression may ask for. Together they make every allocation the
// reader makes proportional to the input.

// ErrIPCFraming marks an Arrow IPC stream or file whose framing is invalid.
var ErrIPCFraming = errors.New("invalid Arrow IPC framing")

const (
	ipcContinuation = 0xFFFFFFFF
	maxNesting      = 64
)

// Arrow flatbuffer schema: union tags of Message.header and vtable slots
// (4 + 2·field index) of the tables that carry vectors.
const (
	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3

	slotMessageHeaderType = 6
	slotMessageHeader     = 8
	slotMessageBodyLength = 10
	slotMessageCustomMeta = 12

	slotSchemaFields     = 6
	slotSchemaCustomMeta = 8
	slotSchemaFeatures   = 10

	slotFieldName       = 4
	slotFieldChildren   = 14
	slotFieldCustomMeta = 16

	slotBatchNodes    = 6
	slotBatchBuffers  = 8
	slotBatchVariadic = 12

	slotDictData = 6

	slotFooterSchema        = 6
	slotFooterDictionaries  = 8
	slotFooterRecordBatches = 10
	slotFooterCustomMeta    = 12

	sizeFieldNode   = 16
	sizeBuffer      = 16
	sizeFooterBlock = 24
)

// fbTable wraps a flatbuffer table with bounds checks on what the Arrow
// reader will later size allocations by.
type fbTable struct {
	flatbuffers.Table
}

func rootTable(b []byte) (fbTable, error) {
	if len(b) < 4 {
		return fbTable{}, fmt.Errorf("%w: %d-byte flatbuffer", ErrIPCFraming, len(b))
	}
	pos := flatbuffers.GetUOffsetT(b)
	if int(pos) > len(b)-4 {
		return fbTable{}, fmt.Errorf("%w: root offset %d beyond %d bytes", ErrIPCFraming, pos, len(b))
	}
	return fbTable{flatbuffers.Table{Bytes: b, Pos: pos}}, nil
}

// vector checks the vector in slot has room for its elements and returns
// its length and start (0, 0 when absent).
func (t fbTable) vector(slot flatbuffers.VOffsetT, elemSize int) (int, flatbuffers.UOffsetT, error) {
	o := flatbuffers.UOffsetT(t.Offset(slot))
	if o == 0 {
		return 0, 0, nil
	}
	start := t.Vector(o)
	n := t.VectorLen(o)
	if n < 0 || int64(start)+int64(n)*int64(elemSize) > int64(len(t.Bytes)) {
		return 0, 0, fmt.Errorf("%w: a vector of %d elements does not fit in %d bytes", ErrIPCFraming, n, len(t.Bytes))
	}
	return n, start, nil
}

// table returns the sub-table in slot, if any.
func (t fbTable) table(slot flatbuffers.VOffsetT) (fbTable, bool) {
	o := flatbuffers.UOffsetT(t.Offset(slot))
	if o == 0 {
		return fbTable{}, false
	}
	return fbTable{flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(o + t.Pos)}}, true
}

// element returns table element i of a vector of tables starting at start.
func (t fbTable) element(start flatbuffers.UOffsetT, i int) fbTable {
	at := start + flatbuffers.UOffsetT(i*4)
	return fbTable{flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(at)}}
}

func (t fbTable) string(slot flatbuffers.VOffsetT) error {
	_, _, err := t.vector(slot, 1)
	return err
}

func (t fbTable) keyValues(slot flatbuffers.VOffsetT) error {
	n, start, err := t.vector(slot, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		kv := t.element(start, i)
		if err := kv.string(4); err != nil {
			return err
		}
		if err := kv.string(6); err != nil {
			return err
		}
	}
	return nil
}

func (t fbTable) checkField(depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("%w: fields nested deeper than %d", ErrIPCFraming, maxNesting)
	}
	if err := t.string(slotFieldName); err != nil {
		return err
	}
	if err := t.keyValues(slotFieldCustomMeta); err != nil {
		return err
	}
	n, start, err := t.vector(slotFieldChildren, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := t.element(start, i).checkField(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

func (t fbTable) checkSchema() error {
	n, start, err := t.vector(slotSchemaFields, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := t.element(start, i).checkField(0); err != nil {
			return err
		}
	}
	if err := t.keyValues(slotSchemaCustomMeta); err != nil {
		return err
	}
	_, _, err = t.vector(slotSchemaFeatures, 8)
	return err
}

func (t fbTable) checkRecordBatch() error {
	if _, _, err := t.vector(slotBatchNodes, sizeFieldNode); err != nil {
		return err
	}
	if _, _, err := t.vector(slotBatchBuffers, sizeBuffer); err != nil {
		return err
	}
	_, _, err := t.vector(slotBatchVariadic, 8)
	return err
}

// checkMessage checks one message's metadata and returns its body length.
func checkMessage(meta []byte) (bodyLen int64, err error) {
	defer func() {
		if p := recover(); p != nil { // an offset pointing outside the buffer
			err = fmt.Errorf("%w: %v", ErrIPCFraming, p)
		}
	}()
	t, err := rootTable(meta)
	if err != nil {
		return 0, err
	}
	if err := t.keyValues(slotMessageCustomMeta); err != nil {
		return 0, err
	}
	bodyLen = t.GetInt64Slot(slotMessageBodyLength, 0)
	if bodyLen < 0 {
		return 0, fmt.Errorf("%w: negative body length", ErrIPCFraming)
	}
	h, ok := t.table(slotMessageHeader)
	if !ok {
		return bodyLen, nil
	}
	switch t.GetByteSlot(slotMessageHeaderType, 0) {
	case headerSchema:
		err = h.checkSchema()
	case headerRecordBatch:
		err = h.checkRecordBatch()
	case headerDictionaryBatch:
		if data, ok := h.table(slotDictData); ok {
			err = data.checkRecordBatch()
		}
	}
	return bodyLen, err
}

// readMessage reads the framed message at off of r (size bytes): it
// returns the offset after it, or done at the end-of-stream marker.
func readMessage(r io.ReaderAt, off, size int64) (end int64, done bool, err error) {
	rest := size - off
	if rest == 0 {
		return off, true, nil
	}
	if rest < 4 {
		return 0, false, fmt.Errorf("%w: %d stray bytes at %d", ErrIPCFraming, rest, off)
	}
	var word [4]byte
	if _, err := r.ReadAt(word[:], off); err != nil {
		return 0, false, fmt.Errorf("read message at %d: %w", off, err)
	}
	off += 4
	var metaLen int64
	switch w := binary.LittleEndian.Uint32(word[:]); w {
	case 0:
		return off, true, nil
	case ipcContinuation:
		if size-off < 4 {
			return 0, false, fmt.Errorf("%w: truncated message length at %d", ErrIPCFraming, off)
		}
		if _, err := r.ReadAt(word[:], off); err != nil {
			return 0, false, fmt.Errorf("read message at %d: %w", off, err)
		}
		metaLen = int64(int32(binary.LittleEndian.Uint32(word[:])))
		off += 4
		if metaLen == 0 {
			return off, true, nil
		}
	default:
		metaLen = int64(int32(w)) // pre-0.15 framing without the marker
	}
	if metaLen < 0 || metaLen > size-off {
		return 0, false, fmt.Errorf("%w: message of %d bytes at %d, %d left", ErrIPCFraming, metaLen, off, size-off)
	}
	meta := make([]byte, metaLen)
	if _, err := r.ReadAt(meta, off); err != nil {
		return 0, false, fmt.Errorf("read message at %d: %w", off, err)
	}
	bodyLen, err := checkMessage(meta)
	if err != nil {
		return 0, false, err
	}
	off += metaLen
	if bodyLen > size-off {
		return 0, false, fmt.Errorf("%w: body of %d bytes at %d, %d left", ErrIPCFraming, bodyLen, off, size-off)
	}
	return off + bodyLen, false, nil
}

// CheckIPCStream checks the framing of an Arrow IPC stream of size bytes
// read through r, message by message, without reading the bodies.
func CheckIPCStream(r io.ReaderAt, size int64) error {
	off := int64(0)
	for {
		end, done, err := readMessage(r, off, size)
		if err != nil || done {
			return err
		}
		off = end
	}
}

var arrowMagic = []byte("ARROW1")

// CheckIPCFile checks an Arrow IPC file read through r (size bytes): the
// magic numbers, the footer's schema and blocks, and every block's message.
func CheckIPCFile(r io.ReaderAt, size int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrIPCFraming, p)
		}
	}()
	tail := int64(len(arrowMagic) + 4)
	if size < 2*int64(len(arrowMagic))+4+4 {
		return fmt.Errorf("%w: %d bytes is too small for an Arrow file", ErrIPCFraming, size)
	}
	end := make([]byte, tail)
	if _, err := r.ReadAt(end, size-tail); err != nil {
		return fmt.Errorf("read footer: %w", err)
	}
	if !bytes.Equal(end[4:], arrowMagic) {
		return fmt.Errorf("%w: no ARROW1 magic at the end", ErrIPCFraming)
	}
	footerLen := int64(int32(binary.LittleEndian.Uint32(end)))
	if footerLen <= 0 || footerLen > size-tail-8 {
		return fmt.Errorf("%w: footer of %d bytes in a %d-byte file", ErrIPCFraming, footerLen, size)
	}
	footer := make([]byte, footerLen)
	if _, err := r.ReadAt(footer, size-tail-footerLen); err != nil {
		return fmt.Errorf("read footer: %w", err)
	}
	t, err := rootTable(footer)
	if err != nil {
		return err
	}
	if s, ok := t.table(slotFooterSchema); ok {
		if err := s.checkSchema(); err != nil {
			return err
		}
	}
	if err := t.keyValues(slotFooterCustomMeta); err != nil {
		return err
	}
	for _, slot := range []flatbuffers.VOffsetT{slotFooterDictionaries, slotFooterRecordBatches} {
		n, start, err := t.vector(slot, sizeFooterBlock)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			at := int(start) + i*sizeFooterBlock
			blkOff := int64(binary.LittleEndian.Uint64(footer[at:]))
			metaLen := int64(int32(binary.LittleEndian.Uint32(footer[at+8:])))
			bodyLen := int64(binary.LittleEndian.Uint64(footer[at+16:]))
			if blkOff < 0 || metaLen <= 0 || bodyLen < 0 || blkOff > size || metaLen > size-blkOff || bodyLen > size-blkOff-metaLen {
				return fmt.Errorf("%w: block %d (offset %d, %d+%d bytes) outside the %d-byte file", ErrIPCFraming, i, blkOff, metaLen, bodyLen, size)
			}
			if _, _, err := readMessage(io.NewSectionReader(r, blkOff, metaLen+bodyLen), 0, metaLen+bodyLen); err != nil {
				return fmt.Errorf("block %d: %w", i, err)
			}
		}
	}
	return nil
}

// LimitedAllocator refuses (with a panic the readers recover into an
// error) any single allocation above Limit bytes: a corrupt size field
// must not take the process down.
type LimitedAllocator struct {
	memory.Allocator
	Limit int
}

// ErrAllocationTooLarge is the panic value of a refused allocation.
var ErrAllocationTooLarge = errors.New("allocation larger than the input can justify")

// Allocate allocates size bytes, or panics with ErrAllocationTooLarge.
func (a LimitedAllocator) Allocate(size int) []byte {
	if size > a.Limit || size < 0 {
		panic(fmt.Errorf("%w: %d bytes (limit %d)", ErrAllocationTooLarge, size, a.Limit))
	}
	return a.Allocator.Allocate(size)
}

// Reallocate grows b to size bytes, or panics with ErrAllocationTooLarge.
func (a LimitedAllocator) Reallocate(size int, b []byte) []byte {
	if size > a.Limit || size < 0 {
		panic(fmt.Errorf("%w: %d bytes (limit %d)", ErrAllocationTooLarge, size, a.Limit))
	}
	return a.Allocator.Reallocate(size, b)
}

// AllocationLimit is the largest single allocation reading n bytes of
// Arrow data may need: generous for any real compression ratio.
func AllocationLimit(n int64) int {
	const floor, ceiling = 256 << 20, 16 << 30
	return int(min(max(256*n, floor), ceiling))
}
