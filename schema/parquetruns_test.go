package schema

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
)

// TestParquetQueryRunsFromOtherWriters reads runs whose query ids come
// in runs of every length, a query's rows in several places, from files
// Arrow's writer made: dictionary-encoded (short runs of indices are
// bit-packed there, long ones RLE), PLAIN and DELTA_LENGTH_BYTE_ARRAY,
// in small pages. The ids come back as runs, with every row's id right.
func TestParquetQueryRunsFromOtherWriters(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var ids []string
	for len(ids) < 20_000 {
		id := fmt.Sprintf("q%d", rng.IntN(40))
		n := 1 + rng.IntN(3)
		if rng.IntN(10) == 0 {
			n = 50 + rng.IntN(200)
		}
		for range n {
			ids = append(ids, id)
		}
	}
	rec := runLongRecord(ids)
	defer rec.Release()
	for _, tc := range []struct {
		name  string
		props []parquet.WriterProperty
	}{
		{"dictionary", nil},
		{"plain", []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}},
		{"delta length", []parquet.WriterProperty{parquet.WithDictionaryDefault(false),
			parquet.WithEncodingFor(FieldQueryID, parquet.Encodings.DeltaLengthByteArray)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "run.parquet")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			props := parquet.NewWriterProperties(append(tc.props, parquet.WithDataPageSize(2<<10), parquet.WithMaxRowGroupLength(7_000))...)
			writeWithPqarrow(t, f, rec, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			checkOwnRead(t, p, RoleRun, rec)
			if id := firstBatch(t, p, RoleRun).Record.Column(0).DataType().ID(); id != arrow.RUN_END_ENCODED {
				t.Fatalf("query ids of type %v, want runs", id)
			}
		})
	}
}
