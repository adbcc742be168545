package ingest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/evalgate/evalgate/schema"
)

// goldText writes a qrels file of nq queries with 1-9 judgments each, in
// query order or, with shuffle, in shuffled line order, with some identical repeats and, when conflicts is
// set, some conflicting grades. It returns the text and the expected
// grade of every judgment (the first one read, for conflicts).
func goldText(nq int, shuffle, conflicts bool) ([]byte, map[string]map[string]int32) {
	r := rand.New(rand.NewPCG(7, 9))
	want := map[string]map[string]int32{}
	var lines []string
	for q := 0; q < nq; q++ {
		qid := fmt.Sprintf("q%06d", q)
		want[qid] = map[string]int32{}
		for range 1 + r.IntN(9) {
			doc := fmt.Sprintf("d%07d", r.IntN(5_000_000))
			g := int32(r.IntN(5))
			if _, ok := want[qid][doc]; ok {
				continue
			}
			want[qid][doc] = g
			line := fmt.Sprintf("%s 0 %s %d\n", qid, doc, g)
			lines = append(lines, line)
			if r.IntN(50) == 0 {
				lines = append(lines, line)
			}
			if conflicts && r.IntN(200) == 0 {
				lines = append(lines, fmt.Sprintf("%s 0 %s %d\n", qid, doc, g+1))
			}
		}
	}
	if shuffle {
		r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
	}
	return b.Bytes(), want
}

// loadGoldProcs loads path with GOMAXPROCS set to procs, in small blocks so
// that the file makes many batches.
func loadGoldProcs(t testing.TB, path string, procs int) (*Gold, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	r, err := schema.Open(context.Background(), path, schema.RoleGold, schema.Options{BlockSize: 64 << 10})
	if err != nil {
		return nil, err // a file that does not open is an error like any other
	}
	defer r.Close()
	return LoadGold(context.Background(), r)
}

func TestLoadGoldParallelSameAsSerial(t *testing.T) {
	text, want := goldText(20000, true, false)
	path := filepath.Join(t.TempDir(), "gold.qrels")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	serial, err := loadGoldProcs(t, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	par, err := loadGoldProcs(t, path, 4)
	if err != nil {
		t.Fatal(err)
	}
	if serial.NumQueries() != len(want) || par.NumQueries() != len(want) {
		t.Fatalf("queries: serial %d, parallel %d, want %d", serial.NumQueries(), par.NumQueries(), len(want))
	}
	if serial.Digest() != par.Digest() || serial.Judgments != par.Judgments || serial.IdenticalDuplicates != par.IdenticalDuplicates {
		t.Fatalf("serial %s %d %d, parallel %s %d %d", serial.Digest(), serial.Judgments, serial.IdenticalDuplicates,
			par.Digest(), par.Judgments, par.IdenticalDuplicates)
	}
	if serial.IdenticalDuplicates == 0 {
		t.Fatal("the test data has no repeated judgments")
	}
	for qid, docs := range want {
		for _, g := range []*Gold{serial, par} {
			i := g.Lookup(qid)
			if i < 0 || g.QueryID(i) != qid {
				t.Fatalf("query %s: index %d", qid, i)
			}
			grades := g.Grades(i)
			if len(grades) != len(docs) {
				t.Fatalf("query %s: %d judgments, want %d", qid, len(grades), len(docs))
			}
			for j, gr := range grades {
				d := g.Doc(i, j)
				if docs[d] != gr {
					t.Fatalf("query %s doc %s: grade %d, want %d", qid, d, gr, docs[d])
				}
				if j > 0 && (grades[j-1] < gr || grades[j-1] == gr && g.Doc(i, j-1) >= d) {
					t.Fatalf("query %s: judgment %d out of order", qid, j)
				}
			}
		}
		if serial.Lookup(qid) != par.Lookup(qid) {
			t.Fatalf("query %s: index %d serially, %d in parallel", qid, serial.Lookup(qid), par.Lookup(qid))
		}
	}
}

func TestLoadGoldParallelConflictsSameAsSerial(t *testing.T) {
	text, _ := goldText(20000, true, true)
	path := filepath.Join(t.TempDir(), "gold.qrels")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	_, serr := loadGoldProcs(t, path, 1)
	_, perr := loadGoldProcs(t, path, 4)
	if serr == nil || perr == nil {
		t.Fatalf("want conflicts refused: serial %v, parallel %v", serr, perr)
	}
	if serr.Error() != perr.Error() {
		t.Fatalf("serial:\n%v\nparallel:\n%v", serr, perr)
	}
	if !bytes.Contains([]byte(serr.Error()), []byte("more errors")) {
		t.Fatalf("want more conflicts than the error limit:\n%v", serr)
	}
}

// BenchmarkLoadGold loads a 200,000-query qrels file (about 1 M lines, in
// query order as most tools write them);
// run with -cpu 1,2 to compare serial and parallel loading. It also
// reports the process's CPU time per load (cpu-ms/op), which a machine
// shared with other work disturbs less than the wall time.
func BenchmarkLoadGold(b *testing.B) { benchmarkLoadGold(b, false) }

// BenchmarkLoadGoldShuffled is BenchmarkLoadGold with the lines in random
// order: every query's judgments are spread over the file.
func BenchmarkLoadGoldShuffled(b *testing.B) { benchmarkLoadGold(b, true) }

func benchmarkLoadGold(b *testing.B, shuffle bool) {
	text, _ := goldText(200000, shuffle, false)
	path := filepath.Join(b.TempDir(), "gold.qrels")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	cpu0 := cpuTime()
	for b.Loop() {
		r, err := schema.Open(context.Background(), path, schema.RoleGold, schema.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := LoadGold(context.Background(), r); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime returns the user and system CPU time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLookupNext checks that LookupNext finds what Lookup finds, whether
// the queries come in the gold set's order or not.
func TestLookupNext(t *testing.T) {
	g := loadGold(t, "q1 0 a 1\nq2 0 a 1\nq3 0 a 1\nq4 0 a 1\n")
	for _, tc := range []struct {
		prev int32
		id   string
	}{
		{-1, "q1"}, {0, "q2"}, {1, "q3"}, {2, "q4"}, // in order
		{3, "q1"}, {-1, "q3"}, {0, "q4"}, {2, "q2"}, // out of order
		{3, "nope"}, {-1, "nope"}, {1, ""}, // absent
	} {
		if got, want := g.LookupNext(tc.prev, tc.id), g.Lookup(tc.id); got != want {
			t.Errorf("LookupNext(%d, %q) = %d, Lookup = %d", tc.prev, tc.id, got, want)
		}
	}
	if g.LookupNext(0, "q2") != 1 || g.LookupNext(3, "q1") != 0 {
		t.Error("LookupNext misses a query")
	}
}
