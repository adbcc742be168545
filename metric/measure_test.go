package metric

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := map[string]string{
		"R@5": "R@5", "recall@5": "R@5", "recall_5": "R@5", "recall.5": "R@5", "RECALL@5": "R@5",
		"retrieval_recall_at_5": "R@5",
		"P@10":                  "P@10", "precision@10": "P@10", "P_10": "P@10", "p.10": "P@10",
		"RR": "RR", "mrr": "RR", "recip_rank": "RR", "retrieval_mrr": "RR", "MRR@10": "RR@10", "rr@3": "RR@3",
		"nDCG@10": "nDCG@10", "ndcg@10": "nDCG@10", "ndcg_cut_10": "nDCG@10", "ndcg_cut.10": "nDCG@10",
		"nDCG": "nDCG", "ndcg": "nDCG",
		"nDCG(gain=exp)@10": "nDCG(gain=exp)@10", "ndcg(gain=linear)@5": "nDCG@5",
		"Success@5": "Success@5", "hit@5": "Success@5", "hit_rate@5": "Success@5", "success_5": "Success@5",
		"retrieval_hit_rate_at_3": "Success@3",
		"AP":                      "AP", "map": "AP", "MAP@10": "AP@10", "map_cut_10": "AP@10", "AP@100": "AP@100",
		"Rprec": "Rprec", "rprec": "Rprec",
		"Judged@10": "Judged@10", "Bpref": "Bpref", "bpref": "Bpref", "BPref": "Bpref",
		"NumQ": "NumQ", "num_q": "NumQ", "NumRel": "NumRel", "num_rel": "NumRel", "NumRet": "NumRet",
		"num_ret": "NumRet", "num_rel_ret": "NumRelRet", "NumRelRet": "NumRelRet",
	}
	for in, want := range cases {
		m, err := Parse(in)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if got := m.String(); got != want {
			t.Errorf("Parse(%q) = %s, want %s", in, got, want)
		}
		// The canonical name parses back to the same measure.
		if back, err := Parse(m.String()); err != nil || back != m {
			t.Errorf("round trip of %s: %v %v", m, back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for in, frag := range map[string]string{
		"":                  "empty",
		"bogus":             "unknown measure",
		"R":                 "needs a cutoff",
		"P@0":               "cutoff",
		"P@x":               "cutoff",
		"Rprec@5":           "no cutoff",
		"bpref@10":          "no cutoff",
		"ndcg_cut":          "needs a cutoff",
		"nDCG(gain=cube)@5": "unknown gain",
		"P(gain=exp)@5":     "nDCG only",
		"nDCG(rel=2)@5":     "unknown parameter",
		"nDCG(gain=exp@5":   "unbalanced",
	} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", in)
			continue
		}
		if !strings.Contains(err.Error(), frag) || !strings.Contains(err.Error(), "known measures") {
			t.Errorf("Parse(%q) = %v, want it to mention %q and list known measures", in, err, frag)
		}
	}
}

func TestTRECName(t *testing.T) {
	for in, want := range map[string]string{
		"R@5": "recall_5", "P@5": "P_5", "RR": "recip_rank", "nDCG@10": "ndcg_cut_10", "nDCG": "ndcg",
		"Success@5": "success_5", "AP": "map", "AP@10": "map_cut_10", "Rprec": "Rprec", "NumQ": "num_q",
		"NumRelRet": "num_rel_ret", "Judged@10": "Judged@10", "RR@10": "RR@10",
	} {
		m, _ := Parse(in)
		if got := m.TRECName(); got != want {
			t.Errorf("%s.TRECName() = %s, want %s", in, got, want)
		}
	}
}

func TestParseListDedups(t *testing.T) {
	ms, err := ParseList([]string{"mrr,RR, recall@5", "R@5", "ndcg@10"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Names(ms), " "); got != "RR R@5 nDCG@10" {
		t.Fatalf("ParseList = %s", got)
	}
}

func TestParseListCutoffLists(t *testing.T) {
	for in, want := range map[string]string{
		"recall.5,10":          "R@5 R@10",
		"P.5,7,3":              "P@5 P@7 P@3",
		"ndcg_cut_10,20,RR":    "nDCG@10 nDCG@20 RR",
		"P@1,5,map,recall_5,1": "P@1 P@5 AP R@5 R@1",
	} {
		ms, err := ParseList([]string{in})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := strings.Join(Names(ms), " "); got != want {
			t.Errorf("%s = %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"RR,10", "10", "map,5"} {
		if _, err := ParseList([]string{in}); err == nil {
			t.Errorf("%s: accepted a bare number with no measure to continue", in)
		}
	}
}
