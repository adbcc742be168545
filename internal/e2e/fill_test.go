package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/judgment"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// fillFixture writes LLM judgments for the unjudged documents of the top
// 10 of every third query of a TREC run (a few for judged documents and
// unknown queries too, which must not fill), and the qrels a person would
// get by adding the filling ones to the gold set.
func fillFixture(t *testing.T, gold, run string) (judgments, merged string) {
	t.Helper()
	judgedPairs := map[string]bool{}
	goldText, _ := os.ReadFile(gold)
	for _, l := range strings.Split(strings.TrimSpace(string(goldText)), "\n") {
		f := strings.Fields(l)
		judgedPairs[f[0]+" "+f[2]] = true
	}
	runText, _ := os.ReadFile(run)
	var js, extra strings.Builder
	rank := map[string]int{}
	for i, l := range strings.Split(strings.TrimSpace(string(runText)), "\n") {
		f := strings.Fields(l)
		q, d := f[0], f[2]
		rank[q]++
		if rank[q] > 10 || len(q)%3 != i%3 {
			continue
		}
		grade := (len(d) + i) % 4
		if judgedPairs[q+" "+d] {
			fmt.Fprintf(&js, `{"query_id":%q,"doc_id":%q,"grade":%d,"model":"m"}`+"\n", q, d, 3-grade) // the human grade wins
			continue
		}
		fmt.Fprintf(&js, `{"query_id":%q,"doc_id":%q,"grade":%d,"model":"m","prompt_sha256":"p"}`+"\n", q, d, grade)
		fmt.Fprintf(&extra, "%s 0 %s %d\n", q, d, grade)
	}
	js.WriteString(`{"query_id":"no-such-query","doc_id":"d1","grade":3,"model":"m"}` + "\n")
	dir := t.TempDir()
	judgments, merged = filepath.Join(dir, "j.jsonl"), filepath.Join(dir, "merged.qrels")
	os.WriteFile(judgments, []byte(js.String()), 0o644)
	os.WriteFile(merged, append(goldText, []byte(extra.String())...), 0o644)
	return judgments, merged
}

// TestFilledEqualsMergedQrels: the values with LLM judgments filled in are
// the values of the gold set with those judgments added as qrels, bit for
// bit, in one process and through the queue.
func TestFilledEqualsMergedQrels(t *testing.T) {
	gold, run := genData(t, 1200, schema.FormatTREC, false)
	jfile, merged := fillFixture(t, gold, run)
	set := &judgment.Set{}
	if err := set.ReadFile(jfile); err != nil {
		t.Fatal(err)
	}
	fill := &coordinator.Fill{Files: []string{jfile}, Judgments: set}
	want := mustScore(t, newJob(t, merged, run))
	values := func(s *summary.Summary) string {
		return fmt.Sprint(s.Measures, s.Groups, s.Counts.ScoredQueries, s.Counts.GoldJudgments)
	}
	job := newJob(t, gold, run)
	job.Fill = fill
	local := mustScore(t, job)
	if local.Filled == nil || values(local.Filled) != values(want) {
		t.Fatalf("filled in:\n%v\nscored on merged qrels:\n%v", local.Filled, values(want))
	}
	if local.Filled.Inputs.Gold.Digest != want.Inputs.Gold.Digest {
		t.Fatalf("filled gold digest %s, merged qrels %s", local.Filled.Inputs.Gold.Digest, want.Inputs.Gold.Digest)
	}
	if j := local.Judgments; j.Filled == 0 || j.HumanWins == 0 || j.UnknownQueries != 1 || len(j.Coverage) == 0 {
		t.Fatalf("judgments section %+v", j)
	}
	if values(local) == values(want) {
		t.Fatal("the human values equal the filled ones: the judgments changed nothing")
	}
	s := startServer(t)
	startWorkers(t, s, 2, nil)
	dj := newJob(t, gold, run)
	dj.Fill = fill
	out, err := coordinator.RunDistributed(context.Background(), dj, connect(t, s, "coordinator"), coordinator.DistOptions{Shards: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := comparable(t, out.Summary), comparable(t, local); got != want {
		t.Fatalf("distributed with judgments differs from score:\n%s\nwant\n%s", got, want)
	}
}
