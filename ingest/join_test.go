package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zeebo/xxh3"

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
		res, err = j.JoinSpilled(context.Background(), r, h)
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

// TestRankedRunsNeedNoSort checks that a run already in ranking order
// (read without sorting) and the same run in another order (sorted) give
// the same rows, and that --strict names the same places either way.
func TestRankedRunsNeedNoSort(t *testing.T) {
	g := loadGold(t, tieGold)
	rng := rand.New(rand.NewPCG(1, 2))
	docs := []string{"a", "b", "c", "x", "y", "z"}
	for trial := 0; trial < 200; trial++ {
		var lines []string
		for i := 0; i < 1+rng.IntN(8); i++ {
			score := float64(rng.IntN(4)) // ties, repeated docs
			lines = append(lines, fmt.Sprintf("q1 Q0 %s %d %g t\n", docs[rng.IntN(len(docs))], i+1, score))
		}
		shuffled := strings.Join(lines, "")
		ranked := mustJoin(t, g, shuffled, Config{RelLevel: 1})
		// Rank the lines as trec_eval does, so that the join reads them as
		// they come.
		slices.SortStableFunc(lines, func(a, b string) int {
			fa, fb := strings.Fields(a), strings.Fields(b)
			if fa[4] != fb[4] {
				return strings.Compare(fb[4], fa[4]) // one-digit scores
			}
			return strings.Compare(fb[2], fa[2])
		})
		inOrder := mustJoin(t, g, strings.Join(lines, ""), Config{RelLevel: 1})
		if !slices.Equal(ranked.rows[0].run, inOrder.rows[0].run) || ranked.stats != inOrder.stats {
			t.Fatalf("run\n%s\nin ranking order\n%s\ngives %v %+v, want %v %+v", shuffled, strings.Join(lines, ""),
				inOrder.rows[0].run, inOrder.stats, ranked.rows[0].run, ranked.stats)
		}
	}
	// A ranked run with repeats, refused by --strict with both places.
	run := "q1 Q0 c 1 9.0 t\nq1 Q0 a 2 8.0 t\nq1 Q0 c 3 5.0 t\nq1 Q0 a 4 1.0 t\n"
	_, err := join(t, g, "run.trec", run, Config{RelLevel: 1, Strict: true}, false)
	for _, frag := range []string{"run.trec:3:", "also at line 1", "run.trec:4:", "also at line 2"} {
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("strict error %v lacks %q", err, frag)
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

func TestJudgedOnlyCountsUnjudgedAfterDepth(t *testing.T) {
	// a: relevant, b: judged non-relevant, n: in the gold set with a
	// negative grade (unjudged, as in trec_eval), u, v, w: not in it.
	g := loadGold(t, "q1 0 a 1\nq1 0 b 0\nq1 0 n -1\n")
	run := "q1 Q0 u 1 9 t\nq1 Q0 a 2 8 t\nq1 Q0 n 3 7 t\nq1 Q0 v 4 6 t\nq1 Q0 b 5 5 t\nq1 Q0 w 6 4 t\n"
	j := mustJoin(t, g, run, Config{RelLevel: 1, Depth: 5, JudgedOnly: true})
	// The depth cut comes first (w is cut), then u, n and v are counted;
	// the row keeps them for the kernel to drop.
	if j.stats.DepthTruncated != 1 || j.stats.UnjudgedDropped != 3 || len(j.rows[0].run) != 5 {
		t.Fatalf("truncated %d, unjudged %d, run %v", j.stats.DepthTruncated, j.stats.UnjudgedDropped, j.rows[0].run)
	}
	if j := mustJoin(t, g, run, Config{RelLevel: 1, Depth: 5}); j.stats.UnjudgedDropped != 0 {
		t.Fatalf("without JudgedOnly: %d unjudged dropped", j.stats.UnjudgedDropped)
	}
}

func TestUnjudged(t *testing.T) {
	grades := []int32{2, 0, -1}
	if n := Unjudged(grades, []uint32{3, 0, 2, 1, 4}); n != 3 {
		t.Fatalf("Unjudged = %d, want 3 (ids 3, 2, 4)", n)
	}
	if n := Unjudged(nil, []uint32{0, 1}); n != 2 {
		t.Fatalf("Unjudged without judgments = %d, want 2", n)
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
	keys := []string{"doc-1", "doc-10", "doc-1 ", "Doc-1", ""}
	again := make([]string, len(keys))
	for i, k := range keys {
		again[i] = strings.Clone(k)
	}
	tab.reset(keys, again)
	for i, k := range keys {
		if id, found := tab.lookupOrInsert(int32(i), xxh3.HashString(k), uint32(i)); found || id != uint32(i) {
			t.Fatalf("insert %q: id %d found %v", k, id, found)
		}
	}
	for i, k := range again {
		if id, found := tab.lookupOrInsert(int32(len(keys)+i), xxh3.HashString(k), 99); !found || id != uint32(i) {
			t.Fatalf("lookup %q: id %d found %v", k, id, found)
		}
	}
	// Equal hashes alone do not make equal keys.
	if _, found := tab.lookupOrInsert(int32(len(keys)+1), xxh3.HashString(keys[0]), 99); found {
		t.Fatal("a different key with the same hash was found")
	}
	// A reset forgets everything without clearing.
	tab.reset(keys[:1], nil)
	if _, found := tab.lookupOrInsert(0, xxh3.HashString("doc-1"), 0); found {
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

// shuffledRun is a run over many queries with duplicates, ties, queries
// only in the run and gold queries it lacks, as grouped TREC text and as
// the same lines in a random order.
func shuffledRun(t *testing.T, seed uint64) (gold, grouped, shuffled string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	var g, run strings.Builder
	var lines []string
	for q := 0; q < 300; q++ {
		qid := fmt.Sprintf("q%03d", q)
		if q%17 != 3 { // some queries only in the run
			for d := 0; d < 1+q%4; d++ {
				fmt.Fprintf(&g, "%s 0 d%d %d\n", qid, (q+d)%23, (q+d)%3)
			}
		}
		if q%11 == 5 { // some gold queries missing from the run
			continue
		}
		for d := 0; d < 5+q%9; d++ {
			// d%7 repeats a doc id (a duplicate); scores tie every fourth line.
			line := fmt.Sprintf("%s Q0 d%d %d %d.%d t\n", qid, (q*3+d%7)%23, d+1, 9-d%4, d%3)
			run.WriteString(line)
			lines = append(lines, line)
		}
	}
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return g.String(), run.String(), strings.Join(lines, "")
}

func TestJoinSpilledEqualsGroupedJoin(t *testing.T) {
	for _, perFile := range []int{2048, 16, 1} {
		t.Run(fmt.Sprintf("%d queries per file", perFile), func(t *testing.T) {
			defer func(old int) { spillMinQueries = old }(spillMinQueries)
			spillMinQueries = perFile
			gold, grouped, shuffled := shuffledRun(t, uint64(perFile))
			g := loadGold(t, gold)
			for _, cfg := range []Config{
				{RelLevel: 1},
				{RelLevel: 2, Depth: 4, RankBy: RankByRank},
				{RelLevel: 1, SkipNoRelevant: true, OnlyRunQueries: true},
			} {
				spillDir := t.TempDir()
				cfg.SpillDir = spillDir
				want := mustJoin(t, g, grouped, cfg)
				for _, arrowFile := range []bool{false, true} {
					name := "run.trec"
					run := shuffled
					if arrowFile {
						// Rows, not lines: positions are negative, in reverse.
						name, run = "run.arrow", toArrow(t, shuffled)
					}
					if _, err := join(t, g, name, run, cfg, false); !errors.Is(err, ErrRunNotGrouped) {
						t.Fatalf("Join of the shuffled run: %v, want ErrRunNotGrouped", err)
					}
					got, err := join(t, g, name, run, cfg, true)
					if err != nil {
						t.Fatal(err)
					}
					// The example of a query only in the run is the first one
					// in the file, which the shuffle changed.
					if g.Lookup(got.stats.RunOnlyExample) >= 0 || !strings.Contains(shuffled, got.stats.RunOnlyExample+" ") {
						t.Fatalf("run-only example %q", got.stats.RunOnlyExample)
					}
					got.stats.RunOnlyExample = want.stats.RunOnlyExample
					if got.stats != want.stats {
						t.Fatalf("%+v: stats\n%+v, want\n%+v", cfg, got.stats, want.stats)
					}
					// The same rows, in gold-set order, numbered in that order.
					byID := map[string]row{}
					for _, r := range want.rows {
						byID[r.qid] = r
					}
					if len(got.rows) != len(want.rows) {
						t.Fatalf("%d rows, want %d", len(got.rows), len(want.rows))
					}
					for i, r := range got.rows {
						w := byID[r.qid]
						if r.seq != int64(i) || !slices.Equal(r.run, w.run) || !slices.Equal(r.grades, w.grades) {
							t.Fatalf("%+v: row %d %+v, want %+v with seq %d", cfg, i, r, w, i)
						}
						if i > 0 && g.Lookup(r.qid) < g.Lookup(got.rows[i-1].qid) && r.seq < want.stats.RunQueries-want.stats.RunOnlyQueries {
							t.Fatalf("row %d (%s) before %s: not in gold order", i, r.qid, got.rows[i-1].qid)
						}
					}
					if left, _ := os.ReadDir(spillDir); len(left) != 0 {
						t.Fatalf("spill directory not removed: %v", left)
					}
				}
			}
		})
	}
}

// toArrow converts TREC run text to an Arrow IPC file and returns its
// bytes, in batches of 100 rows.
func toArrow(t *testing.T, run string) string {
	t.Helper()
	r, err := schema.Open(context.Background(), writeFile(t, "run.trec", run), schema.RoleRun, schema.Options{BlockSize: 4000})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	if _, err := schema.Convert(context.Background(), r, &out, "run.arrow", schema.FormatArrow, schema.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestJoinSpilledErrorsNameSourceLines(t *testing.T) {
	defer func(old int) { spillMinQueries = old }(spillMinQueries)
	spillMinQueries = 1
	g := loadGold(t, tieGold+"q2 0 b 1\n")
	// q1's lines are split by q2's; "a" repeats at lines 1 and 4.
	run := "q1 Q0 a 1 1.0 t\nq2 Q0 b 1 1.0 t\nq1 Q0 c 2 9.0 t\nq1 Q0 a 3 8.0 t\n"
	spillDir := t.TempDir()
	_, err := join(t, g, "run.trec", run, Config{RelLevel: 1, Strict: true, SpillDir: spillDir}, true)
	if !errors.Is(err, schema.ErrDuplicate) {
		t.Fatalf("strict: %v, want ErrDuplicate", err)
	}
	for _, frag := range []string{"run.trec:1:", "also at line 4"} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("strict error %q lacks %q", err, frag)
		}
	}
	if left, _ := os.ReadDir(spillDir); len(left) != 0 {
		t.Fatalf("spill directory not removed after an error: %v", left)
	}
	// The same run as Arrow rows.
	_, err = join(t, g, "run.arrow", toArrow(t, run), Config{RelLevel: 1, Strict: true, SpillDir: spillDir}, true)
	for _, frag := range []string{"run.arrow: row 1:", "also at row 4"} {
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("strict error %v lacks %q", err, frag)
		}
	}
}

func TestDecodeSpillRefusesTruncatedRecords(t *testing.T) {
	sp := &spill{per: 1, pending: make([][]byte, 1), files: make([]*os.File, 1)}
	if err := sp.add(0, -42, 1.5, -7, true, "doc"); err != nil {
		t.Fatal(err)
	}
	if err := sp.add(0, 3, 2.5, 0, false, ""); err != nil {
		t.Fatal(err)
	}
	rec := sp.pending[0]
	lines, err := decodeSpill(rec)
	if err != nil || len(lines) != 2 {
		t.Fatalf("decode: %v, %d lines", err, len(lines))
	}
	if l := lines[0]; l.pos != -42 || l.score != 1.5 || !l.valid || l.rank != -7 || string(rec[l.doc:l.docTo]) != "doc" {
		t.Fatalf("first record %+v", l)
	}
	if l := lines[1]; l.pos != 3 || l.valid || l.doc != l.docTo {
		t.Fatalf("second record %+v", l)
	}
	first := int(lines[0].docTo) // the first record's length: its doc id ends it
	for n := 1; n < len(rec); n++ {
		got, err := decodeSpill(rec[:n])
		switch {
		case n == first && (err != nil || len(got) != 1):
			t.Fatalf("the first record alone: %v, %d lines", err, len(got))
		case n != first && !errors.Is(err, errSpillCorrupt):
			t.Fatalf("records cut at %d bytes: %v, want errSpillCorrupt", n, err)
		}
	}
}

// TestRankedHandsOnDocIDs: Config.Ranked sees each scored query's ranking
// as doc ids, in ranking order, without repeats, cut at the depth.
func TestRankedHandsOnDocIDs(t *testing.T) {
	g := loadGold(t, tieGold+"q2 0 b 1\n")
	run := "q1 Q0 a 1 1.0 t\nq1 Q0 c 2 9.0 t\nq1 Q0 a 3 8.0 t\nq1 Q0 z 4 5.0 t\nq2 Q0 y 1 2 t\n"
	var mu sync.Mutex
	got := map[string][]string{}
	cfg := Config{RelLevel: 1, Depth: 2, Ranked: func(gi int32, ranked []string) {
		mu.Lock()
		got[g.QueryID(gi)] = slices.Clone(ranked)
		mu.Unlock()
	}}
	mustJoin(t, g, run, cfg)
	if !slices.Equal(got["q1"], []string{"c", "a"}) || !slices.Equal(got["q2"], []string{"y"}) {
		t.Fatalf("rankings %v", got)
	}
}
