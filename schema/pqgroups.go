package schema

import (
	"fmt"

	"github.com/apache/arrow/go/v16/arrow"
)

// flatGroup is a row group of rows rows: cols[c] holds the arrays of
// column c, views of recs.
type flatGroup struct {
	cols [][]arrow.Array
	rows int
	recs []arrow.Record
}

// encodedGroup is a group handed to submit: encoded by a goroutine of its
// own into enc, one chunkEncoder a column, then written by writeGroups.
type encodedGroup struct {
	rows  int
	enc   []*chunkEncoder
	err   error         // set before ready is closed
	ready chan struct{} // closed when enc holds the group's chunks
}

func (f *flatFileWriter) newEncoders() []*chunkEncoder {
	enc := make([]*chunkEncoder, len(f.cols))
	for i := range f.cols {
		enc[i] = newChunkEncoder(&f.cols[i], f.codec)
	}
	return enc
}

// submit takes over g's records, starts encoding g, and returns the
// error of an earlier group, if one failed. Groups are encoded
// concurrently, each by one goroutine with an encoder set of its own, and
// written in the order submitted: a conversion's row groups are small
// (DefaultRowGroupRows) and their columns unequal (the doc ids take most
// of the time), so groups, not the columns of one, are what keeps the
// cores busy. submit waits while every encoder set is in use, which
// bounds the rows held to those of cap(f.sets) groups.
func (f *flatFileWriter) submit(g flatGroup) error {
	if f.order == nil {
		f.order, f.done = make(chan *encodedGroup, cap(f.sets)), make(chan struct{})
		go f.writeGroups()
	}
	if err := f.errs.get(); err != nil {
		releaseAll(g.recs)
		return err
	}
	e := &encodedGroup{rows: g.rows, enc: <-f.sets, ready: make(chan struct{})}
	f.order <- e // never waits: fewer groups are queued than there are sets
	go func() {
		defer close(e.ready)
		e.err = f.encodeGroup(e.enc, g)
		releaseAll(g.recs)
	}()
	return nil
}

// encodeGroup encodes each column of g with its encoder in enc.
func (f *flatFileWriter) encodeGroup(enc []*chunkEncoder, g flatGroup) error {
	for c, e := range enc {
		if err := protect(func() error { return e.encode(g.cols[c]) }); err != nil {
			return err
		}
		if e.numValues != int64(g.rows) {
			return fmt.Errorf("write row group: column %s has %d rows, want %d", e.col.name, e.numValues, g.rows)
		}
	}
	return nil
}

// writeGroups writes the groups in the order submitted, each once it is
// encoded, and hands its encoder set back; after a failure it only waits
// for them. It is the only goroutine that writes to out after the start.
func (f *flatFileWriter) writeGroups() {
	defer close(f.done)
	for e := range f.order {
		<-e.ready
		if f.errs.get() == nil {
			err := e.err
			if err == nil {
				err = f.writeGroup(e)
			}
			f.errs.record(err)
		}
		f.sets <- e.enc
	}
}

// wait waits for the submitted groups to be written and returns the
// first error.
func (f *flatFileWriter) wait() error {
	if f.order != nil {
		close(f.order)
		<-f.done
		f.order = nil
	}
	return f.errs.get()
}

func releaseAll(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// writeGroup writes the chunks of an encoded group and notes them for
// the footer.
func (f *flatFileWriter) writeGroup(e *encodedGroup) error {
	g := groupMeta{rows: int64(e.rows), chunks: make([]chunkMeta, len(e.enc))}
	for c, enc := range e.enc {
		m := chunkMeta{start: f.pos, dataOff: f.pos + enc.dataOff, numValues: enc.numValues,
			uncompressed: enc.uncompressed, compress: enc.compressed, dictEnc: enc.dictEnc}
		if enc.hasDict {
			m.dictOff = f.pos
		}
		for _, p := range enc.parts {
			f.write(enc.view(p))
		}
		g.chunks[c] = m
	}
	f.groups = append(f.groups, g)
	f.rows += int64(e.rows)
	return f.out.errs.get()
}
