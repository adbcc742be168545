package coordinator

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
	"github.com/evalgate/evalgate/synth"
)

var testMeasures = func() []metric.Measure {
	ms, err := metric.ParseList([]string{"R@1,R@5,R@10,R@100,P@1,P@5,P@10,RR,RR@10,nDCG@10,nDCG(gain=exp)@10,nDCG,AP,AP@10,Success@1,Success@5,Rprec,Judged@10,NumQ,NumRel,NumRet,NumRelRet"})
	if err != nil {
		panic(err)
	}
	return ms
}()

func genData(t *testing.T, o synth.Options) (gold, run string) {
	t.Helper()
	dir := t.TempDir()
	gold, run = synth.Paths(dir, o.Format)
	if err := synth.Write(context.Background(), o, gold, run); err != nil {
		t.Fatal(err)
	}
	return gold, run
}

func newJob(gold, run string) Job {
	return Job{
		Gold:   Input{Path: gold},
		Run:    Input{Path: run},
		Metric: metric.Config{Measures: testMeasures, RelLevel: 1},
		Ingest: ingest.Config{RelLevel: 1},
	}
}

func comparableJSON(t *testing.T, s *summary.Summary) string {
	t.Helper()
	var b bytes.Buffer
	if err := s.Comparable().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSameBitsForAnyParallelism scores the same input with different
// goroutine counts and unit sizes: the summaries must be byte-identical.
func TestSameBitsForAnyParallelism(t *testing.T) {
	gold, run := genData(t, synth.Options{Queries: 3000, Depth: 60, Seed: 7, Format: schema.FormatJSONL, Tags: true})
	var want string
	for _, c := range []struct{ par, unit int }{{1, 1 << 20}, {2, 7}, {5, 64}, {3, 1}, {2, 2048}} {
		job := newJob(gold, run)
		job.Ingest.Parallelism, job.Ingest.UnitQueries = c.par, c.unit
		out, err := Score(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		got := comparableJSON(t, out.Summary)
		if want == "" {
			want = got
			if len(out.Summary.Groups) != 8 {
				t.Fatalf("want 8 tag groups, got %d", len(out.Summary.Groups))
			}
			continue
		}
		if got != want {
			t.Fatalf("parallelism %d, unit %d: summary differs", c.par, c.unit)
		}
	}
}

// TestSplitInputsMergeToSameBits splits one input into 1, 7 and 64 parts
// (random assignment of queries), scores each part on its own, merges the
// partial sums in a random order and compares with the whole: the
// encodings and every reduced value must be identical.
func TestSplitInputsMergeToSameBits(t *testing.T) {
	o := synth.Options{Queries: 2000, Depth: 50, Seed: 11, Format: schema.FormatJSONL, Tags: true}
	gold, run := genData(t, o)
	whole, err := Score(context.Background(), newJob(gold, run))
	if err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := whole.Partial.MarshalBinary()
	wantValues := whole.Partial.Reduce()
	goldLines, runLines := readLines(t, gold), readLines(t, run)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, parts := range []int{1, 7, 64} {
		assign := make([]int, o.Queries)
		for i := range assign {
			assign[i] = rng.IntN(parts)
		}
		dir := t.TempDir()
		partials := make([]*metric.Partial, parts)
		for p := 0; p < parts; p++ {
			var g, r bytes.Buffer
			for i := range assign {
				if assign[i] == p {
					g.WriteString(goldLines[i] + "\n")
					r.WriteString(runLines[i] + "\n")
				}
			}
			if g.Len() == 0 {
				partials[p] = metric.NewPartial(testMeasures)
				continue
			}
			gp, rp := filepath.Join(dir, "g.jsonl"), filepath.Join(dir, "r.jsonl")
			os.WriteFile(gp, g.Bytes(), 0o644)
			os.WriteFile(rp, r.Bytes(), 0o644)
			out, err := Score(context.Background(), newJob(gp, rp))
			if err != nil {
				t.Fatal(err)
			}
			partials[p] = out.Partial
		}
		merged := metric.NewPartial(testMeasures)
		for _, p := range rng.Perm(parts) {
			if err := merged.Merge(partials[p]); err != nil {
				t.Fatal(err)
			}
		}
		gotBytes, _ := merged.MarshalBinary()
		if !bytes.Equal(gotBytes, wantBytes) {
			t.Fatalf("%d parts: merged partial encodes differently", parts)
		}
		got := merged.Reduce()
		if len(got) != len(wantValues) {
			t.Fatalf("%d parts: %d groups, want %d", parts, len(got), len(wantValues))
		}
		for gi := range got {
			for mi, v := range got[gi].Values {
				w := wantValues[gi].Values[mi]
				if math.Float64bits(v.Value) != math.Float64bits(w.Value) {
					t.Fatalf("%d parts: group %q %s = %v, want %v", parts, got[gi].Name, v.Measure, v.Value, w.Value)
				}
			}
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestFormatsAgree scores the same data written as TREC, JSONL, Arrow and
// Parquet: the measures, counts and digests agree, ordering documents by
// score (when the readers may skip ranks) and by rank.
func TestFormatsAgree(t *testing.T) {
	for _, by := range []ingest.RankBy{ingest.RankByScore, ingest.RankByRank} {
		t.Run(by.String(), func(t *testing.T) { testFormatsAgree(t, by) })
	}
}

func testFormatsAgree(t *testing.T, by ingest.RankBy) {
	var want *summary.Summary
	// Long Parquet and Arrow runs (synth writes list runs), converted
	// from the TREC run: with a rank column, which the Parquet reader
	// leaves unread when scores order the documents.
	gold, trec := genData(t, synth.Options{Queries: 800, Depth: 40, Seed: 5, Format: schema.FormatTREC})
	longRuns := map[string]string{}
	for _, f := range []schema.Format{schema.FormatParquet, schema.FormatArrow} {
		longRuns[f.String()+"-long"] = convertRun(t, trec, f)
	}
	for _, f := range []string{"trec", "jsonl", "arrow", "parquet", "parquet-long", "arrow-long"} {
		format, _ := schema.ParseFormat(strings.TrimSuffix(f, "-long"))
		g, run := gold, longRuns[f]
		if run == "" {
			g, run = genData(t, synth.Options{Queries: 800, Depth: 40, Seed: 5, Format: format})
		}
		job := newJob(g, run)
		job.Ingest.RankBy = by
		out, err := Score(context.Background(), job)
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		s := out.Summary
		if s.Inputs.Run.Format != format.String() {
			t.Fatalf("%v: run format recorded as %s", f, s.Inputs.Run.Format)
		}
		if want == nil {
			want = s
			continue
		}
		for i, m := range s.Measures {
			if m != want.Measures[i] {
				t.Fatalf("%v: %s = %v, TREC gives %v", f, m.Name, m.Value, want.Measures[i].Value)
			}
		}
		if s.Counts != want.Counts || s.Inputs.Gold.Digest != want.Inputs.Gold.Digest || s.Inputs.Run.Digest != want.Inputs.Run.Digest {
			t.Fatalf("%v: counts or digests differ", f)
		}
	}
}

// convertRun writes a TREC run as a long run in format f.
func convertRun(t *testing.T, trec string, f schema.Format) string {
	t.Helper()
	r, err := schema.Open(context.Background(), trec, schema.RoleRun, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := filepath.Join(t.TempDir(), "run."+f.String())
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := schema.Convert(context.Background(), r, out, path, f, schema.WriterOptions{RowGroupRows: 4096}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUngroupedRunSameBits shuffles the lines of a TREC run: the job
// notices, reads the run whole, and produces the same summary.
func TestUngroupedRunSameBits(t *testing.T) {
	gold, run := genData(t, synth.Options{Queries: 500, Depth: 30, Seed: 9, Format: schema.FormatTREC})
	want, err := Score(context.Background(), newJob(gold, run))
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, run)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	shuffled := filepath.Join(t.TempDir(), "run.trec")
	os.WriteFile(shuffled, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	got, err := Score(context.Background(), newJob(gold, shuffled))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range got.Summary.Measures {
		if m != want.Summary.Measures[i] {
			t.Fatalf("%s = %v, grouped run gives %v", m.Name, m.Value, want.Summary.Measures[i].Value)
		}
	}
	if got.Summary.Inputs.Run.Digest != want.Summary.Inputs.Run.Digest || got.Summary.Counts != want.Summary.Counts {
		t.Fatal("digest or counts differ")
	}
}
