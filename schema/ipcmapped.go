package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/ipc"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// mappedBatches reads the record batches of a memory-mapped Arrow IPC file
// whose schema has no dictionaries. A batch viewRecord can lay out is read
// with one read call into a buffer its arrays view; for any other, the
// Arrow reader gets its metadata and body as views of the mapping and
// copies each buffer once (where its file reader copies every body whole
// first). The file's framing has been checked (CheckIPCFile).
type mappedBatches struct {
	mm          mapping
	schema      message // the stream's schema message, after the file's magic
	blocks      []message
	arrowSchema *arrow.Schema // the file's schema
	ra          io.ReaderAt   // the file
	// viewed is set once a record viewing the mapping was handed out: the
	// mapping must then stay.
	viewed atomic.Bool
}

// message is an IPC message in the mapping: its metadata flatbuffer and
// body.
type message struct {
	meta, body []byte
	bodyOff    int64 // the body's offset in the file
}

// newMappedBatches returns the batches of the mapped file mm, or nil when
// the file does not suit (dictionaries, unexpected framing).
func newMappedBatches(mm mapping, ra io.ReaderAt, s *arrow.Schema) (b *mappedBatches) {
	if mm == nil || hasDictionary(s) {
		return nil
	}
	defer func() {
		if recover() != nil { // an offset outside the footer
			b = nil
		}
	}()
	size := int64(len(mm))
	tail := int64(len(arrowMagic) + 4)
	var word [4]byte
	if _, err := ra.ReadAt(word[:], size-tail); err != nil {
		return nil
	}
	footerLen := int64(int32(binary.LittleEndian.Uint32(word[:])))
	if footerLen <= 0 || footerLen > size-tail {
		return nil
	}
	footer := make([]byte, footerLen)
	if _, err := ra.ReadAt(footer, size-tail-footerLen); err != nil {
		return nil
	}
	t, err := rootTable(footer)
	if err != nil {
		return nil
	}
	sch, err := frameAt(mm, ra, 8, 0)
	if err != nil {
		return nil
	}
	n, start, err := t.vector(flatbuffers.VOffsetT(slotFooterRecordBatches), sizeFooterBlock)
	if err != nil {
		return nil
	}
	b = &mappedBatches{mm: mm, schema: sch, arrowSchema: s, ra: ra}
	for i := 0; i < n; i++ {
		at := int(start) + i*sizeFooterBlock
		off := int64(binary.LittleEndian.Uint64(footer[at:]))
		metaLen := int64(int32(binary.LittleEndian.Uint32(footer[at+8:])))
		bodyLen := int64(binary.LittleEndian.Uint64(footer[at+16:]))
		m, err := frameAt(mm, ra, off, metaLen)
		if err != nil || bodyLen > size-off-metaLen {
			return nil
		}
		m.body = mm[off+metaLen : off+metaLen+bodyLen]
		m.bodyOff = off + metaLen
		b.blocks = append(b.blocks, m)
	}
	return b
}

// frameAt returns the metadata of the framed message at off, metaLen
// bytes with its prefix (0: as long as the prefix says).
func frameAt(mm mapping, ra io.ReaderAt, off, metaLen int64) (message, error) {
	size := int64(len(mm))
	if off < 0 || off+8 > size {
		return message{}, ErrIPCFraming
	}
	// Read the prefix through ra rather than the mapping: touching the
	// mapping would map pages around it for the whole run.
	var word [8]byte
	if _, err := ra.ReadAt(word[:], off); err != nil {
		return message{}, err
	}
	prefix := int64(8)
	n := int64(int32(binary.LittleEndian.Uint32(word[4:])))
	if binary.LittleEndian.Uint32(word[:4]) != ipcContinuation {
		return message{}, ErrIPCFraming // pre-0.15 framing: leave it to the Arrow reader
	}
	check := metaLen == 0 // CheckIPCFile checked the blocks, not this
	if check {
		metaLen = prefix + n
	}
	if n < 0 || metaLen < prefix || n > metaLen-prefix || metaLen > size-off {
		return message{}, ErrIPCFraming
	}
	if check {
		meta := make([]byte, metaLen-prefix)
		if _, err := ra.ReadAt(meta, off+prefix); err != nil {
			return message{}, err
		}
		if _, err := checkMessage(meta); err != nil {
			return message{}, err
		}
	}
	return message{meta: mm[off+prefix : off+metaLen]}, nil
}

func hasDictionary(s *arrow.Schema) bool {
	var walk func(t arrow.DataType) bool
	walk = func(t arrow.DataType) bool {
		switch t := t.(type) {
		case *arrow.DictionaryType:
			return true
		case arrow.NestedType:
			for _, f := range t.Fields() {
				if walk(f.Type) {
					return true
				}
			}
		}
		return false
	}
	for _, f := range s.Fields() {
		if walk(f.Type) {
			return true
		}
	}
	return false
}

// viewMappedMinSize is the smallest file whose batches are views of the
// mapping itself. Such a mapping is never unmapped (strings taken from its
// records may be used after the file is closed), so it holds address space
// and the file until the process exits; smaller files, which a process may
// read by the thousand, are read into memory instead. A variable for
// tests.
var viewMappedMinSize = 64 << 20

// view decodes batch i as views (viewRecord): of the mapping when the
// file is large, else of memory it reads the batch into.
func (b *mappedBatches) view(i int) (arrow.Record, error) {
	blk := &b.blocks[i]
	metaOff := blk.bodyOff - int64(len(blk.meta))
	if len(b.mm) >= viewMappedMinSize {
		rel := &pageRelease{mm: b.mm, msg: b.mm[metaOff : blk.bodyOff+int64(len(blk.body))]}
		rec, err := viewRecord(b.arrowSchema, blk.meta, func() ([]byte, error) { return blk.body, nil }, rel)
		if err == nil {
			b.viewed.Store(true)
		}
		return rec, err
	}
	// Read into memory of our own, not through the mapping: a fault
	// there maps a whole folio of the page cache into the process.
	meta := make([]byte, len(blk.meta))
	if _, err := b.ra.ReadAt(meta, metaOff); err != nil {
		return nil, fmt.Errorf("read record batch %d: %w", i, err)
	}
	return viewRecord(b.arrowSchema, meta, func() ([]byte, error) {
		body := make([]byte, len(blk.body))
		if _, err := b.ra.ReadAt(body, blk.bodyOff); err != nil {
			return nil, fmt.Errorf("read record batch %d: %w", i, err)
		}
		return body, nil
	}, nil)
}

// record decodes batch i.
func (b *mappedBatches) record(i int, mem memory.Allocator) (arrow.Record, error) {
	if i < 0 || i >= len(b.blocks) {
		return nil, fmt.Errorf("record batch %d of %d", i, len(b.blocks))
	}
	rec, err := b.view(i)
	if err == nil {
		return rec, nil
	}
	if !errors.Is(err, errNoView) {
		return nil, err
	}
	mr := &viewMessages{msgs: []message{b.schema, b.blocks[i]}}
	r, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("no record batch in block")
	}
	rec = r.Record()
	rec.Retain()
	// The record holds copies: the body's pages are not needed again.
	b.mm.drop(b.blocks[i].body)
	return rec, nil
}

// viewMessages yields messages viewing the mapping.
type viewMessages struct {
	msgs []message
	i    int
}

func (v *viewMessages) Message() (*ipc.Message, error) {
	if v.i >= len(v.msgs) {
		return nil, io.EOF
	}
	m := v.msgs[v.i]
	v.i++
	return ipc.NewMessage(memory.NewBufferBytes(m.meta), memory.NewBufferBytes(m.body)), nil
}

func (v *viewMessages) Retain()  {}
func (v *viewMessages) Release() {}
