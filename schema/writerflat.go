package schema

import (
	"context"
	"encoding/base64"
	"sync"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/flight"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/file"
	"github.com/apache/arrow/go/v16/parquet/metadata"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
)

// flatGroupWriter writes the row groups of a schema of flat columns (the
// long forms) with the columns encoded concurrently: each row group is a
// buffered row group whose column chunk writers are independent (each
// has its own page buffer, encoder and statistics) until the group is
// closed, which copies them to the file in order. pqarrow's FileWriter
// encodes one column after the other; here the encoding of a row group
// takes the time of its largest column (the doc ids) rather than the sum.
type flatGroupWriter struct {
	pw       *file.Writer
	schema   *arrow.Schema
	props    pqarrow.ArrowWriterProperties
	workers  int
	nullable []bool
}

// isFlatSchema reports whether every field of s is a utf8, int32, int64,
// float32 or float64 column.
func isFlatSchema(s *arrow.Schema) bool {
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.STRING, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64:
		default:
			return false
		}
	}
	return s.NumFields() > 0
}

// newFlatGroupWriter returns a writer of a Parquet file of schema s, with
// the key-value metadata pqarrow's FileWriter writes (the schema's own and
// the Arrow schema, base64-encoded under ARROW:schema).
func newFlatGroupWriter(w *asyncWriter, s *arrow.Schema, props *parquet.WriterProperties, workers int) (*flatGroupWriter, error) {
	arrProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
	ps, err := pqarrow.ToParquet(s, props, arrProps)
	if err != nil {
		return nil, err
	}
	meta := make(metadata.KeyValueMetadata, 0)
	md := s.Metadata()
	for i := 0; i < md.Len(); i++ {
		meta.Append(md.Keys()[i], md.Values()[i])
	}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(s, memory.DefaultAllocator)))
	g := &flatGroupWriter{
		pw:      file.NewParquetWriter(w, ps.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta)),
		schema:  s,
		props:   arrProps,
		workers: max(workers, 1),
	}
	for _, f := range s.Fields() {
		g.nullable = append(g.nullable, f.Nullable)
	}
	return g, nil
}

// writeGroup writes one row group: cols[c] holds the chunks of column c.
func (g *flatGroupWriter) writeGroup(cols [][]arrow.Array) error {
	rgw := g.pw.AppendBufferedRowGroup()
	writers := make([]file.ColumnChunkWriter, len(cols))
	for c := range cols {
		cw, err := rgw.Column(c)
		if err != nil {
			return err
		}
		writers[c] = cw
	}
	errs := make([]error, len(cols))
	next := make(chan int, len(cols))
	for c := range cols {
		next <- c
	}
	close(next)
	var wg sync.WaitGroup
	for range min(g.workers, len(cols)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				errs[c] = protect(func() error { return g.writeColumn(writers[c], c, cols[c]) })
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return rgw.Close()
}

// writeColumn writes the chunks of column c with a write context of its
// own (pqarrow's contexts hold buffers that columns written concurrently
// must not share).
func (g *flatGroupWriter) writeColumn(cw file.ColumnChunkWriter, c int, chunks []arrow.Array) error {
	ctx := pqarrow.NewArrowWriteContext(context.Background(), &g.props)
	var def []int16
	for _, a := range chunks {
		if g.nullable[c] {
			def = def[:0]
			for i := range a.Len() {
				var d int16
				if a.IsValid(i) {
					d = 1
				}
				def = append(def, d)
			}
		}
		if err := pqarrow.WriteArrowToColumn(ctx, cw, a, def, nil, g.nullable[c]); err != nil {
			return err
		}
	}
	return nil
}

func (g *flatGroupWriter) close() error { return g.pw.Close() }

// flushFlat writes the open row group through g.
func (p *parquetWriter) flushFlat() error {
	cols := make([][]arrow.Array, p.schema.NumFields())
	for c := range cols {
		if c == 0 && p.dictQID {
			if d := p.queryDictionary(); d != nil {
				defer d.Release()
				cols[0] = []arrow.Array{d}
				continue
			}
		}
		for _, r := range p.pending {
			cols[c] = append(cols[c], r.Column(c))
		}
	}
	return p.flat.writeGroup(cols)
}
