package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet/file"
)

// runRows returns a JSON batch of queries q<from>..q<to-1>, perQuery rows
// each; the row numbered bad (1-based over the whole file, 0: none) has an
// empty doc id.
func runRows(from, to, perQuery, first, bad int) string {
	var b strings.Builder
	b.WriteString("[")
	row := first
	for q := from; q < to; q++ {
		for k := 0; k < perQuery; k++ {
			if row > first {
				b.WriteString(",")
			}
			doc := fmt.Sprintf("d%d", k)
			if row == bad {
				doc = ""
			}
			fmt.Fprintf(&b, `{"query_id": "q%d", "doc_id": %q, "score": %d, "rank": %d}`, q, doc, perQuery-k, k+1)
			row++
		}
	}
	b.WriteString("]")
	return b.String()
}

// TestParallelUnitsKeepRowNumbers reads files of many units (Parquet row
// groups, Arrow record batches) with errors in late units: the errors
// name the rows of the whole file, and a clean file reads back in order.
func TestParallelUnitsKeepRowNumbers(t *testing.T) {
	dir := t.TempDir()
	mem := memory.NewGoAllocator()
	// 10 batches of 4 queries × 3 rows: rows 1..120.
	for _, bad := range []int{0, 7, 95} {
		var batches []string
		for i := 0; i < 10; i++ {
			batches = append(batches, runRows(4*i, 4*i+4, 3, 12*i+1, bad))
		}
		recs := recordsFromJSON(t, mem, RunLong(), batches...)
		for _, f := range columnarFormats {
			p := filepath.Join(dir, fmt.Sprintf("bad%d%s", bad, f.ext))
			out, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			w, err := NewRecordWriterWith(out, f.format, RunLong(), WriterOptions{RowGroupRows: 10})
			if err != nil {
				t.Fatal(err)
			}
			writeAll(t, w, recs...)
			out.Close()
			c, err := readFile(t, p, RoleRun, Options{Parallelism: 3})
			if bad == 0 {
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if got := len(c.RunLong); got != 120 {
					t.Fatalf("%s: %d rows, want 120", p, got)
				}
				for i, r := range c.RunLong {
					if want := fmt.Sprintf("q%d", i/3); r.QID != want || r.Rank != int32(i%3+1) {
						t.Fatalf("%s: row %d is query %s rank %d, want %s rank %d", p, i+1, r.QID, r.Rank, want, i%3+1)
					}
				}
				continue
			}
			errs := inputErrors(t, err)
			if len(errs) != 1 || errs[0].Row != int64(bad) || errs[0].Field != FieldDocID {
				t.Errorf("%s: errors %v, want one at row %d, field doc_id", p, errs, bad)
			}
		}
		release(recs)
	}
}

// TestParquetRowGroupsEndAtQueries checks that convert's Parquet writer
// cuts row groups at the first query boundary after the target size.
func TestParquetRowGroupsEndAtQueries(t *testing.T) {
	recs := recordsFromJSON(t, memory.NewGoAllocator(), RunLong(), runRows(0, 5, 4, 1, 0), runRows(5, 9, 4, 21, 0))
	defer release(recs)
	p := filepath.Join(t.TempDir(), "run.parquet")
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewRecordWriterWith(out, FormatParquet, RunLong(), WriterOptions{RowGroupRows: 6})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var sizes []int64
	for g := 0; g < pf.NumRowGroups(); g++ {
		sizes = append(sizes, pf.RowGroup(g).NumRows())
	}
	// 4 rows a query, at least 6 a group: 8, 8, 8, 8, 4.
	if fmt.Sprint(sizes) != "[8 8 8 8 4]" {
		t.Errorf("row groups of %v rows, want [8 8 8 8 4]", sizes)
	}
}

// TestMappedBatchesMatchFileReader decodes every batch of an Arrow IPC
// file from views of its mapping and through the Arrow file reader: the
// records must be equal.
func TestMappedBatchesMatchFileReader(t *testing.T) {
	var batches []string
	for i := 0; i < 5; i++ {
		batches = append(batches, runRows(4*i, 4*i+4, 3, 12*i+1, 0))
	}
	recs := recordsFromJSON(t, memory.NewGoAllocator(), RunLong(), batches...)
	defer release(recs)
	p := writeColumnar(t, t.TempDir(), "run.arrow", FormatArrow, RunLong(), recs)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	src, err := newIPCFileSource(f, info.Size(), Options{Allocator: memory.DefaultAllocator})
	if err != nil {
		t.Fatal(err)
	}
	s := src.(*ipcFileSource)
	defer s.close()
	if s.mapped == nil {
		t.Skip("file not mapped on this platform")
	}
	if len(s.mapped.blocks) != s.r.NumRecords() {
		t.Fatalf("%d mapped blocks, %d records", len(s.mapped.blocks), s.r.NumRecords())
	}
	for i := 0; i < s.r.NumRecords(); i++ {
		got, err := s.mapped.record(i, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.r.RecordAt(i)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, want) {
			t.Errorf("batch %d: %v, want %v", i, got, want)
		}
		got.Release()
		want.Release()
	}
}
