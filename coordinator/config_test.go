package coordinator

import (
	"testing"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/judgment"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/summary"
)

// A resumed job scores with the options its manifest recorded:
// --judged-only and --depth survive the round trip, for scoring and for
// the counts, and the job stays valid.
func TestJobConfigRoundTripKeepsJudgedOnly(t *testing.T) {
	job := Job{
		Gold:   Input{Path: "gold.qrels"},
		Run:    Input{Path: "run.trec"},
		Metric: metric.Config{Measures: []metric.Measure{{Kind: metric.KindBpref}}, RelLevel: 2, JudgedOnly: true},
		Ingest: ingest.Config{RelLevel: 2, Depth: 40, JudgedOnly: true},
	}
	var back Job
	var o DistOptions
	if err := ApplyConfig(jobConfig(&job, DistOptions{Shards: 3}), &back, &o); err != nil {
		t.Fatal(err)
	}
	if !back.Metric.JudgedOnly || !back.Ingest.JudgedOnly || back.Ingest.Depth != 40 || back.Metric.Measures[0].Kind != metric.KindBpref {
		t.Fatalf("resumed job: metric %+v, ingest %+v", back.Metric, back.Ingest)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	back.Ingest.JudgedOnly = false
	if err := back.Validate(); err == nil {
		t.Fatal("a job dropping unjudged documents for scoring but not counting them is valid")
	}
}

// With --judged-only, Judged@k reads condensed rankings: the judgments
// section gives no coverage of the top k rather than a wrong one.
func TestNoCoverageWhenJudgedOnly(t *testing.T) {
	human := &summary.Summary{Measures: []summary.Measure{{Name: "Judged@10", Value: 0.6}}}
	filled := &summary.Summary{Measures: []summary.Measure{{Name: "Judged@10", Value: 0.9}}}
	if j := judgmentsSection(&Fill{Judgments: &judgment.Set{}}, fillCounts{}, human, filled); len(j.Coverage) != 1 {
		t.Fatalf("coverage %+v", j.Coverage)
	}
	human.Config.JudgedOnly, filled.Config.JudgedOnly = true, true
	if j := judgmentsSection(&Fill{Judgments: &judgment.Set{}}, fillCounts{}, human, filled); len(j.Coverage) != 0 {
		t.Fatalf("coverage with --judged-only %+v", j.Coverage)
	}
}
