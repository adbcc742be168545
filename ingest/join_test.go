package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadGold(t *testing.T, qrels string) *Gold {
	t.Helper()
	r, err := schema.Open(context.Background(), writeFile(t, "gold.qrels", qrels), schema.RoleGold, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g, err := LoadGold(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// row is one joined query as the kernel would see it.
type row struct {
	seq    int64
	qid    string
	grades []int32
	run    []uint32
	groups []string
}

type joined struct {
	rows  []row
	stats Stats
}

func join(t *testing.T, g *Gold, runName, run string, cfg Config, buffered bool) (*joined, error) {
	t.Helper()
	r, err := schema.Open(context.Background(), writeFile(t, runName, run), schema.RoleRun, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var mu sync.Mutex
	out := &joined{}
	h := Handlers{Commit: func(u *Unit) error {
		mu.Lock()
		defer mu.Unlock()
		rec := u.Rows.Record()
		defer rec.Release()
		v, err := schema.ViewShardBatch(rec)
		if err != nil {
			return err
		}
		if err := v.Validate(); err != nil {
			return err
		}
		for i := 0; i < v.Rows; i++ {
			var groups []string
			for k := v.GroupOff[i]; k < v.GroupOff[i+1]; k++ {
				groups = append(groups, v.GroupVal.Value(int(k)))
			}
			out.rows = append(out.rows, row{
				seq: v.Seq[i], qid: v.QueryID.Value(i), groups: groups,
				grades: slices.Clone(v.Grades[v.GradeOff[i]:v.GradeOff[i+1]]),
				run:    slices.Clone(v.Run[v.RunOff[i]:v.RunOff[i+1]]),
			})
		}
		return nil
	}}
	j := NewJoiner(g, cfg)
	var res *Result
	if buffered {
		res, err = j.JoinBuffered(context.Background(), r, h)
	} else {
		res, err = j.Join(context.Background(), r, h)
	}
	if err != nil {
		return nil, err
	}
	out.stats = res.Stats
	return out, nil
}

func mustJoin(t *testing.T, g *Gold, run string, cfg Config) *joined {
	t.Helper()
	j, err := join(t, g, "run.trec", run, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

const tieGold = "q1 0 a 1\nq1 0 c 2\nq1 0 x 0\n"

func TestRankingTieBreakIsTrecEvals(t *testing.T) {
	g := loadGold(t, tieGold)
	// Equal scores: trec_eval orders by doc id descending (byte order).
	// The rank column is ignored by default.
	run := "q1 Q0 a 1 5.0 t\nq1 Q0 c 2 5.0 t\nq1 Q0 b 3 5.0 t\nq1 Q0 z 4 7.5 t\n"
	j := mustJoin(t, g, run, Config{RelLevel: 1})
	// judged order: c(2)=0, a(1)=1, x(0)=2; unjudged get 3,4,... in rank order
	// ranking: z(7.5), then c, b, a
	want := []uint32{3, 0, 4, 1}
	if got := j.rows[0].run; !slices.Equal(got, want) {
		t.Fatalf("ranking ids %v, want %v", got, want)
	}
	if !slices.Equal(j.rows[0].grades, []int32{2, 1, 0}) {
		t.Fatalf("grades %v", j.rows[0].grades)
	}
	// --rank-by rank follows the rank column.
	j = mustJoin(t, g, run, Config{RelLevel: 1, RankBy: RankByRank})
	if got, want := j.rows[0].run, []uint32{1, 0, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("rank-by rank ids %v, want %v", got, want)
	}
}

func TestDuplicatesKeepBestRanked(t *testing.T) {
	g := loadGold(t, tieGold)
	run := "q1 Q0 a 1 1.0 t\nq1 Q0 c 2 9.0 t\nq1 Q0 a 3 8.0 t\nq1 Q0 c 4 0.5 t\n"
	j := mustJoin(t, g, run, Config{RelLevel: 1})
	if got, want := j.rows[0].run, []uint32{0, 1}; !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v (c at 9.0, a at 8.0)", got, want)
	}
	if j.stats.DuplicateDocs != 2 || j.stats.QueriesWithDupes != 1 {
		t.Fatalf("duplicates %d in %d queries", j.stats.DuplicateDocs, j.stats.QueriesWithDupes)
	}
	_, err := join(t, g, "run.trec", run, Config{RelLevel: 1, Strict: true}, false)
	if !errors.Is(err, schema.ErrDuplicate) {
		t.Fatalf("strict: %v, want ErrDuplicate", err)
	}
	// The error names both places.
	for _, frag := range []string{"run.trec:1:", "also at line 3", `doc "a"`, "run.trec:4:", "also at line 2"} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("strict error %q lacks %q", err, frag)
		}
	}
}

func TestDepthCutoff(t *testing.T) {
	g := loadGold(t, tieGold)
	run := "q1 Q0 u 1 9 t\nq1 Q0 v 2 8 t\nq1 Q0 c 3 7 t\nq1 Q0 a 4 6 t\n"
	j := mustJoin(t, g, run, Config{RelLevel: 1, Depth: 2})
	if len(j.rows[0].run) != 2 || j.stats.DepthTruncated != 2 {
		t.Fatalf("depth 2: run %v, truncated %d", j.rows[0].run, j.stats.DepthTruncated)
	}
}

func TestAveragingSets(t *testing.T) {
	gold := "q1 0 a 1\nq2 0 b 1\nq3 0 c 0\nq5 0 e 2\n"
	run := "q1 Q0 a 1 1 t\nq4 Q0 z 1 1 t\nq3 Q0 c 1 1 t\n" // q2, q5 missing; q4 only in run; q3 no relevant
	g := loadGold(t, gold)
	ids := func(j *joined) []string {
		var out []string
		for _, r := range j.rows {
			out = append(out, r.qid)
		}
		return out
	}
	// Default (trec_eval -c): every gold query; missing ones after the run's, in gold order.
	j := mustJoin(t, g, run, Config{RelLevel: 1})
	if got := ids(j); !slices.Equal(got, []string{"q1", "q3", "q2", "q5"}) {
		t.Fatalf("default rows %v", got)
	}
	s := j.stats
	if s.GoldQueries != 4 || s.RunQueries != 3 || s.ScoredQueries != 4 || s.RunOnlyQueries != 1 ||
		s.MissingFromRun != 2 || s.MissingScored != 2 || s.NoRelevant != 1 || s.RunOnlyExample != "q4" {
		t.Fatalf("default stats %+v", s)
	}
	for i, r := range j.rows {
		if r.seq != int64(i) {
			t.Fatalf("row %d has seq %d", i, r.seq)
		}
	}
	// trec_eval without -c.
	j = mustJoin(t, g, run, Config{RelLevel: 1, OnlyRunQueries: true})
	if got := ids(j); !slices.Equal(got, []string{"q1", "q3"}) || j.stats.MissingScored != 0 || j.stats.MissingFromRun != 2 {
		t.Fatalf("only-run rows %v stats %+v", got, j.stats)
	}
	// Leave out queries without a relevant document.
	j = mustJoin(t, g, run, Config{RelLevel: 1, SkipNoRelevant: true})
	if got := ids(j); !slices.Equal(got, []string{"q1", "q2", "q5"}) || j.stats.NoRelevantSkipped != 1 || j.stats.NoRelevant != 0 {
		t.Fatalf("skip-no-relevant rows %v stats %+v", got, j.stats)
	}
	// At level 2 only q5 has a relevant document.
	j = mustJoin(t, g, run, Config{RelLevel: 2, SkipNoRelevant: true})
	if got := ids(j); !slices.Equal(got, []string{"q5"}) || j.stats.NoRelevantSkipped != 3 {
		t.Fatalf("level 2 rows %v stats %+v", got, j.stats)
	}
}

func TestUngroupedRun(t *testing.T) {
	gold := "q1 0 a 1\nq2 0 b 1\n"
	grouped := "q1 Q0 a 1 3 t\nq1 Q0 x 2 2 t\nq2 Q0 y 1 3 t\nq2 Q0 b 2 2 t\n"
	interleaved := "q1 Q0 a 1 3 t\nq2 Q0 y 1 3 t\nq1 Q0 x 2 2 t\nq2 Q0 b 2 2 t\n"
	g := loadGold(t, gold)
	want := mustJoin(t, g, grouped, Config{RelLevel: 1})
	if _, err := join(t, g, "run.trec", interleaved, Config{RelLevel: 1}, false); !errors.Is(err, ErrRunNotGrouped) {
		t.Fatalf("interleaved run: %v, want ErrRunNotGrouped", err)
	}
	got, err := join(t, g, "run.trec", interleaved, Config{RelLevel: 1}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.rows) != len(want.rows) {
		t.Fatalf("%d rows, want %d", len(got.rows), len(want.rows))
	}
	for i := range want.rows {
		w, g := want.rows[i], got.rows[i]
		if w.qid != g.qid || w.seq != g.seq || !slices.Equal(w.run, g.run) || !slices.Equal(w.grades, g.grades) {
			t.Fatalf("row %d: buffered %+v, grouped %+v", i, g, w)
		}
	}
	if got.stats != want.stats {
		t.Fatalf("stats %+v vs %+v", got.stats, want.stats)
	}
}

func TestQueriesSpanningBlocksAndUnits(t *testing.T) {
	// Many queries with many lines, small text blocks and small units:
	// groups cross batch and unit boundaries, the result must not change.
	var gold, run strings.Builder
	for q := 0; q < 50; q++ {
		qid := "q" + string(rune('A'+q%26)) + string(rune('a'+q/26))
		gold.WriteString(qid + " 0 d1 1\n" + qid + " 0 d7 2\n")
		for d := 0; d < 40; d++ {
			run.WriteString(qid + " Q0 d" + string(rune('0'+d%10)) + string(rune('a'+d/10)) + " 1 " + string(rune('9'-d%10)) + ".5 t\n")
		}
	}
	g := loadGold(t, gold.String())
	p := writeFile(t, "run.trec", run.String())
	var all [][]row
	for _, opt := range []struct{ block, unit int }{{1 << 20, 2048}, {97, 1}, {333, 7}} {
		r, err := schema.Open(context.Background(), p, schema.RoleRun, schema.Options{BlockSize: opt.block, Parallelism: 3})
		if err != nil {
			t.Fatal(err)
		}
		var rows []row
		_, err = NewJoiner(g, Config{RelLevel: 1, UnitQueries: opt.unit, Parallelism: 3}).Join(context.Background(), r, Handlers{
			Commit: func(u *Unit) error {
				rec := u.Rows.Record()
				defer rec.Release()
				v, _ := schema.ViewShardBatch(rec)
				for i := 0; i < v.Rows; i++ {
					rows = append(rows, row{seq: v.Seq[i], qid: v.QueryID.Value(i), run: slices.Clone(v.Run[v.RunOff[i]:v.RunOff[i+1]])})
				}
				return nil
			}})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rows)
	}
	for k := 1; k < len(all); k++ {
		if len(all[k]) != len(all[0]) {
			t.Fatalf("variant %d: %d rows, want %d", k, len(all[k]), len(all[0]))
		}
		for i := range all[0] {
			a, b := all[0][i], all[k][i]
			if a.qid != b.qid || a.seq != b.seq || !slices.Equal(a.run, b.run) {
				t.Fatalf("variant %d row %d differs: %+v vs %+v", k, i, b, a)
			}
		}
	}
	if len(all[0]) != 50 || len(all[0][0].run) != 40 {
		t.Fatalf("got %d rows of %d ids", len(all[0]), len(all[0][0].run))
	}
}

func TestGoldDuplicates(t *testing.T) {
	g := loadGold(t, "q1 0 a 1\nq1 0 a 1\nq1 0 b 2\n")
	if g.IdenticalDuplicates != 1 || len(g.Grades(0)) != 2 {
		t.Fatalf("identical duplicate: %d dropped, %d kept", g.IdenticalDuplicates, len(g.Grades(0)))
	}
	r, err := schema.Open(context.Background(), writeFile(t, "g.qrels", "q1 0 a 1\nq2 0 c 1\nq1 0 a 3\n"), schema.RoleGold, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = LoadGold(context.Background(), r)
	if !errors.Is(err, schema.ErrDuplicate) || !strings.Contains(err.Error(), "g.qrels:3") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("conflicting grades: %v", err)
	}
}

func TestGoldDigestIgnoresOrderAndFormat(t *testing.T) {
	a := loadGold(t, "q1 0 a 1\nq1 0 b 2\nq2 0 c 1\n")
	b := loadGold(t, "# comment\nq2 0 c 1\nq1 0 b 2\nq1 0 a 1\nq1 0 a 1\n")
	c := loadGold(t, "q1 0 a 1\nq1 0 b 3\nq2 0 c 1\n")
	if a.Digest() != b.Digest() {
		t.Fatal("digest depends on line order or repeats")
	}
	if a.Digest() == c.Digest() {
		t.Fatal("digest ignores a changed grade")
	}
	r, err := schema.Open(context.Background(), writeFile(t, "g.jsonl",
		`{"query_id":"q1","relevance_map":{"a":1,"b":2}}`+"\n"+`{"qid":"q2","relevant_ids":["c"]}`+"\n"), schema.RoleGold, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	j, err := LoadGold(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if j.Digest() != a.Digest() {
		t.Fatal("digest of the same gold set differs between TREC and JSONL")
	}
}

func TestListRunDuplicateQuery(t *testing.T) {
	g := loadGold(t, "q1 0 a 1\n")
	run := `{"query_id":"q1","retrieved_ids":["a"]}` + "\n" + `{"query_id":"q1","retrieved_ids":["b"]}` + "\n"
	_, err := join(t, g, "run.jsonl", run, Config{RelLevel: 1}, false)
	if !errors.Is(err, schema.ErrDuplicate) || !strings.Contains(err.Error(), "run.jsonl:2") {
		t.Fatalf("repeated query in a JSONL run: %v", err)
	}
}

func TestListRunKeepsListOrderWithoutScores(t *testing.T) {
	g := loadGold(t, "q1 0 a 1\nq1 0 b 2\n")
	j, err := join(t, g, "run.jsonl", `{"query_id":"q1","retrieved_ids":["z","a","b","a"]}`+"\n", Config{RelLevel: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	// judged: b=0 (grade 2), a=1; z unjudged → 2; the second "a" is a duplicate
	if got, want := j.rows[0].run, []uint32{2, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	if j.stats.DuplicateDocs != 1 {
		t.Fatalf("duplicates %d", j.stats.DuplicateDocs)
	}
}

func TestRankByRankNeedsRanks(t *testing.T) {
	g := loadGold(t, "q1 0 a 1\n")
	_, err := join(t, g, "run.trec", "q1 Q0 a x 1.0 t\n", Config{RelLevel: 1, RankBy: RankByRank}, false)
	if !errors.Is(err, schema.ErrNumber) || !strings.Contains(err.Error(), "run.trec:1") {
		t.Fatalf("non-integer rank with --rank-by rank: %v", err)
	}
	if _, err := join(t, g, "run.trec", "q1 Q0 a x 1.0 t\n", Config{RelLevel: 1}, false); err != nil {
		t.Fatalf("non-integer rank is ignored by default, as in trec_eval: %v", err)
	}
}

func TestInternComparesStrings(t *testing.T) {
	var tab internTable
	tab.reset(4)
	keys := []string{"doc-1", "doc-10", "doc-1 ", "Doc-1", ""}
	for i, k := range keys {
		if id, found := tab.lookupOrInsert(k, uint32(i)); found || id != uint32(i) {
			t.Fatalf("insert %q: id %d found %v", k, id, found)
		}
	}
	for i, k := range keys {
		if id, found := tab.lookupOrInsert(strings.Clone(k), 99); !found || id != uint32(i) {
			t.Fatalf("lookup %q: id %d found %v", k, id, found)
		}
	}
	// A reset forgets everything without clearing.
	tab.reset(4)
	if _, found := tab.lookupOrInsert("doc-1", 0); found {
		t.Fatal("reset table still finds an old key")
	}
}

func TestTags(t *testing.T) {
	r, err := schema.Open(context.Background(), writeFile(t, "g.jsonl",
		`{"query_id":"q1","relevant_ids":["a"],"tags":{"category":"policy"},"difficulty":"hard"}`+"\n"), schema.RoleGold, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g, err := LoadGold(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	j, err := join(t, g, "run.trec", "q1 Q0 a 1 1 t\n", Config{RelLevel: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := j.rows[0].groups; !slices.Equal(got, []string{"category=policy", "difficulty=hard"}) {
		t.Fatalf("groups %v", got)
	}
}
