package schema

import (
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/file"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
)

// flatBatchRows is the number of rows of the records a flat row group is
// read as.
const flatBatchRows = 128 << 10

// flatPlan reads the row groups of a Parquet file whose columns are all
// top-level primitive columns (the long forms) straight from the column
// chunk readers into Arrow buffers: a string value is copied once, from
// the decoded page (or the dictionary page) to the record's data buffer,
// and numbers are decoded in place. Files with nested columns go through
// pqarrow.
type flatPlan struct {
	pf     *file.Reader
	schema *arrow.Schema // the record schema: utf8, int32, int64, float32, float64 columns
	cols   []int         // the file column of each record field
	limit  int           // the most bytes of strings one column of a record may hold
	r      io.ReaderAt   // the file, of size bytes
	mm     mapping       // its mapping, when chunks are viewed there (nil: read)
	size   int64
	chunks bool // column chunks can be read whole (see chunkReadable)
	// mem, when the caller allows it, recycles the memory of released
	// records for the columns decoded page by page.
	mem *recycler
	// queryRuns is the field of a run's query ids, read as runs of one
	// id (QueryRunsType, in records of schema runSchema) when its chunk is
	// decoded page by page and has no nulls; -1 for a gold file.
	queryRuns int
	runSchema *arrow.Schema
}

// newFlatPlan returns a plan for pf, or nil when its columns are not all
// flat ones of the supported types. With skipRanks its records leave out
// a column named rank (Options.SkipRanks); for a run (role), they hold
// the query ids as runs where they can.
func newFlatPlan(pf *file.Reader, r io.ReaderAt, size int64, limit int, mem *recycler, skipRanks bool, role Role) *flatPlan {
	ps := pf.MetaData().Schema
	as, err := pqarrow.FromParquet(ps, nil, pf.MetaData().KeyValueMetadata())
	if err != nil || as.NumFields() != ps.NumColumns() || ps.NumColumns() == 0 {
		return nil
	}
	var fields []arrow.Field
	var cols []int
	for c := 0; c < ps.NumColumns(); c++ {
		col, f := ps.Column(c), as.Field(c)
		if col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 || col.ColumnPath().String() != f.Name {
			return nil
		}
		var want parquet.Type
		switch f.Type.ID() {
		case arrow.STRING:
			want = parquet.Types.ByteArray
		case arrow.INT32:
			want = parquet.Types.Int32
		case arrow.INT64:
			want = parquet.Types.Int64
		case arrow.FLOAT32:
			want = parquet.Types.Float
		case arrow.FLOAT64:
			want = parquet.Types.Double
		default:
			return nil
		}
		if col.PhysicalType() != want {
			return nil
		}
		if skipRanks && f.Name == FieldRank {
			continue
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: col.MaxDefinitionLevel() > 0})
		cols = append(cols, c)
	}
	if len(fields) == 0 {
		return nil
	}
	p := &flatPlan{pf: pf, schema: arrow.NewSchema(fields, nil), cols: cols, limit: min(limit, math.MaxInt32),
		r: r, size: size, chunks: chunkReadable(pf.MetaData()), mem: mem, queryRuns: -1}
	if i := fieldIndex(p.schema, FieldQueryID, "qid"); role == RoleRun && i >= 0 && fields[i].Type.ID() == arrow.STRING {
		runFields := p.schema.Fields()
		runFields[i].Type = QueryRunsType
		p.queryRuns, p.runSchema = i, arrow.NewSchema(runFields, nil)
	}
	return p
}

// fieldIndex returns the index of the first of names s has, or -1 (a
// column's accepted names: see column).
func fieldIndex(s *arrow.Schema, names ...string) int {
	for _, n := range names {
		if idx := s.FieldIndices(n); len(idx) > 0 {
			return idx[0]
		}
	}
	return -1
}

// readRowGroup reads row group g as records of up to flatBatchRows rows.
func (p *flatPlan) readRowGroup(g int) ([]arrow.Record, error) {
	rg := p.pf.RowGroup(g)
	readers := make([]file.ColumnChunkReader, len(p.schema.Fields()))
	pages := make([]*pageColumn, len(readers)) // columns decoded page by page
	sizes := make([]int64, len(readers))       // uncompressed bytes a row, a hint
	// Each chunk drops its whole pages when released; the pages two
	// chunks share, and those of columns left unread that a fault mapped
	// around a read one, go with the row group's.
	if p.mm != nil {
		defer p.mm.dropPages(p.rowGroupBytes(rg))
	}
	for c, fc := range p.cols {
		md, err := rg.MetaData().ColumnChunk(fc)
		if err != nil {
			return nil, err
		}
		if rg.NumRows() > 0 {
			sizes[c] = min(max(md.TotalUncompressedSize()/rg.NumRows(), 0), 256)
		}
		if desc := p.pf.MetaData().Schema.Column(fc); p.chunks && pageDecodable(md) {
			ch, err := readChunk(p.r, p.mm, p.size, md, p.limit)
			if err != nil {
				return nil, err
			}
			defer ch.release()
			if pages[c], err = newPageColumn(ch, desc.PhysicalType(), desc.MaxDefinitionLevel() > 0, p.limit); err != nil {
				return nil, err
			}
			defer pages[c].release()
			continue
		}
		cr, err := rg.Column(fc)
		if err != nil {
			return nil, err
		}
		readers[c] = cr
	}
	var recs []arrow.Record
	def := make([]int16, 4096)
	var scratch []parquet.ByteArray
	for left := rg.NumRows(); left > 0; {
		n := int(min(left, flatBatchRows))
		cols := make([]arrow.Array, len(readers))
		release := func() {
			for _, c := range cols {
				if c != nil {
					c.Release()
				}
			}
		}
		for c, cr := range readers {
			var col arrow.Array
			var err error
			switch pc := pages[c]; {
			case pc != nil && c == p.queryRuns && pc.byteArr && !pc.nullable:
				col, err = readQueryRuns(pc, n)
			case pc != nil:
				col, err = readPageColumn(pc, p.schema.Field(c).Type, n, p.mem)
			default:
				col, err = readFlatColumn(cr, p.schema.Field(c).Type, n, int(sizes[c])*n, def, &scratch)
			}
			if err != nil {
				release()
				return recs, fmt.Errorf("column %s: %w", p.schema.Field(c).Name, err)
			}
			cols[c] = col
		}
		s := p.schema
		if p.queryRuns >= 0 && cols[p.queryRuns].DataType().ID() == arrow.RUN_END_ENCODED {
			s = p.runSchema
		}
		recs = append(recs, NewRecord(s, cols, n))
		left -= int64(n)
	}
	return recs, nil
}

// rowGroupBytes returns the part of the mapping that holds row group
// rg's column chunks, every column's, read or not (nil if its metadata
// points outside the file).
func (p *flatPlan) rowGroupBytes(rg *file.RowGroupReader) []byte {
	lo, hi := int64(len(p.mm)), int64(0)
	for c := 0; c < rg.NumColumns(); c++ {
		md, err := rg.MetaData().ColumnChunk(c)
		if err != nil {
			return nil
		}
		start := md.DataPageOffset()
		if md.HasDictionaryPage() && md.DictionaryPageOffset() > 0 && md.DictionaryPageOffset() < start {
			start = md.DictionaryPageOffset()
		}
		n := md.TotalCompressedSize()
		if start < 0 || n < 0 || start > int64(len(p.mm)) || n > int64(len(p.mm))-start {
			return nil
		}
		lo, hi = min(lo, start), max(hi, start+n)
	}
	if lo >= hi {
		return nil
	}
	return p.mm[lo:hi]
}

// readFlatColumn reads the next n values of a flat column; strings are
// expected to take about bytes bytes.
func readFlatColumn(cr file.ColumnChunkReader, t arrow.DataType, n, bytes int, def []int16, scratch *[]parquet.ByteArray) (arrow.Array, error) {
	nullable := cr.Descriptor().MaxDefinitionLevel() > 0
	var valid []bool
	if nullable {
		valid = make([]bool, 0, n)
	}
	// levels notes the validity of the rows of one batch of levels.
	levels := func(total int64) {
		if nullable {
			for _, d := range def[:total] {
				valid = append(valid, d > 0)
			}
		}
	}
	var got int
	switch r := cr.(type) {
	case *file.ByteArrayColumnChunkReader:
		b := NewStrings(n, bytes)
		if cap(*scratch) < len(def) {
			*scratch = make([]parquet.ByteArray, len(def))
		}
		vals := (*scratch)[:len(def)]
		for got < n {
			total, nv, err := r.ReadBatch(int64(min(n-got, len(def))), vals, def, nil)
			if err != nil {
				return nil, err
			}
			if total == 0 {
				break
			}
			levels(total)
			if nullable && int64(nv) != total {
				k := 0
				for _, d := range def[:total] {
					if d > 0 {
						b.AppendBytes(vals[k])
						k++
					} else {
						b.AppendBytes(nil)
					}
				}
			} else {
				for _, v := range vals[:nv] {
					b.AppendBytes(v)
				}
			}
			got += int(total)
		}
		if got != n {
			return nil, fmt.Errorf("%d values, want %d", got, n)
		}
		return NullableStringArray(b.Offsets, b.Data, validOrNil(valid, nullable)), nil
	case *file.Int32ColumnChunkReader:
		v, err := readFixed(n, def, nullable, levels, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		return Int32Array(v, validOrNil(valid, nullable)), nil
	case *file.Int64ColumnChunkReader:
		v, err := readFixed(n, def, nullable, levels, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		return wrapFixed(arrow.PrimitiveTypes.Int64, v, validOrNil(valid, nullable), nil), nil
	case *file.Float32ColumnChunkReader:
		v, err := readFixed(n, def, nullable, levels, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		return wrapFixed(arrow.PrimitiveTypes.Float32, v, validOrNil(valid, nullable), nil), nil
	case *file.Float64ColumnChunkReader:
		v, err := readFixed(n, def, nullable, levels, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		return wrapFixed(arrow.PrimitiveTypes.Float64, v, validOrNil(valid, nullable), nil), nil
	}
	return nil, fmt.Errorf("%w: unexpected column reader %T for %s", ErrCorrupt, cr, t)
}

func validOrNil(valid []bool, nullable bool) []bool {
	if !nullable {
		return nil
	}
	return valid
}

// readFixed reads n fixed-width values, decoded in place; a null row
// gets the zero value.
func readFixed[T any](n int, def []int16, nullable bool, levels func(int64), read func(int64, []T, []int16, []int16) (int64, int, error)) ([]T, error) {
	out := make([]T, n)
	got := 0
	for got < n {
		batch := min(n-got, len(def))
		total, nv, err := read(int64(batch), out[got:got+batch], def, nil)
		if err != nil {
			return nil, err
		}
		if total == 0 {
			break
		}
		levels(total)
		if nullable && int64(nv) != total {
			// Spread the nv dense values over the rows, from the end.
			k := nv - 1
			for i := int(total) - 1; i >= 0; i-- {
				var zero T
				if def[i] > 0 {
					out[got+i] = out[got+k]
					k--
				} else {
					out[got+i] = zero
				}
			}
		}
		got += int(total)
	}
	if got != n {
		return nil, fmt.Errorf("%d values, want %d", got, n)
	}
	return out, nil
}

// wrapFixed wraps v as an Arrow array of type t (of v's width), whose
// memory goes back to mem (if not nil) on its last Release.
func wrapFixed[T any](t arrow.DataType, v []T, valid []bool, mem *recycler) arrow.Array {
	bm, nulls := validityBitmap(valid)
	vb := bufferOf(v, mem)
	defer vb.Release()
	d := array.NewData(t, len(v), []*memory.Buffer{bm, vb}, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// readFixedColumn reads the next n rows of a fixed-width column of type
// t, whose values are Ts, decoded page by page.
func readFixedColumn[T int32 | int64 | float32 | float64](pc *pageColumn, t arrow.DataType, n int, mem *recycler) (arrow.Array, error) {
	if pc.width != int(unsafe.Sizeof(T(0))) {
		return nil, fmt.Errorf("%w: column of physical width %d for %s", ErrCorrupt, pc.width, t)
	}
	var valid []bool              // nil while every row read is valid
	v := recycledSlice[T](mem, n) // readFixed writes every row
	if err := pc.readFixed(bytesOf(v), &valid); err != nil {
		if mem != nil {
			mem.Free(bytesOf(v[:cap(v)]))
		}
		return nil, err
	}
	return wrapFixed(t, v, validOrNil(valid, pc.nullable), mem), nil
}

// readPageColumn reads the next n rows of a column decoded page by page,
// into memory from mem (nil: new memory).
func readPageColumn(pc *pageColumn, t arrow.DataType, n int, mem *recycler) (arrow.Array, error) {
	var valid []bool // nil while every row read is valid
	switch t.ID() {
	case arrow.STRING:
		if !pc.byteArr {
			break
		}
		b := newRecycledStrings(mem, n, pc.sizeHint(n))
		if err := pc.readStrings(&b, &valid, n); err != nil {
			b.free(mem)
			return nil, err
		}
		return b.arrayOf(validOrNil(valid, pc.nullable), mem), nil
	case arrow.INT32:
		return readFixedColumn[int32](pc, t, n, mem)
	case arrow.INT64:
		return readFixedColumn[int64](pc, t, n, mem)
	case arrow.FLOAT32:
		return readFixedColumn[float32](pc, t, n, mem)
	case arrow.FLOAT64:
		return readFixedColumn[float64](pc, t, n, mem)
	}
	return nil, fmt.Errorf("%w: column of physical width %d for %s", ErrCorrupt, pc.width, t)
}
