package metric

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind identifies a family of measures.
type Kind uint8

// The measure families. The zero Kind is invalid.
const (
	KindInvalid   Kind = iota
	KindRecall         // R@k: relevant retrieved in the top k / relevant
	KindPrecision      // P@k: relevant retrieved in the top k / k
	KindRR             // RR, RR@k: 1 / rank of the first relevant document
	KindNDCG           // nDCG, nDCG@k: normalized discounted cumulative gain
	KindSuccess        // Success@k: 1 if any relevant document is in the top k
	KindAP             // AP, AP@k: average precision (trec_eval map, map_cut)
	KindRprec          // Rprec: precision at rank R (R = number of relevant)
	KindJudged         // Judged@k: fraction of the top k judged (grade >= 0); 1 - trec_eval unj_k
	KindNumQ           // NumQ: number of queries (summed, not averaged)
	KindNumRel         // NumRel: number of relevant documents (summed)
	KindNumRet         // NumRet: number of retrieved documents (summed)
	KindNumRelRet      // NumRelRet: number of relevant retrieved documents (summed)
	KindBpref          // Bpref: binary preference over judged documents (trec_eval bpref)

	kindEnd // one past the last valid Kind
)

// Gain selects the nDCG gain function.
type Gain uint8

const (
	// GainLinear uses the grade itself (trec_eval ndcg_cut).
	GainLinear Gain = iota
	// GainExp uses 2^grade - 1 (Burges et al.).
	GainExp
)

// MaxCutoff is the largest cutoff a measure may name.
const MaxCutoff = 1 << 20

// Measure is one measure with its parameters. Measures are comparable values.
type Measure struct {
	Kind Kind
	// K is the cutoff (rank depth); 0 means the whole ranking, for the kinds
	// where the cutoff is optional (RR, nDCG, AP).
	K    int
	Gain Gain
}

// Summed reports whether the measure is reported as a total over queries
// rather than a mean (NumQ, NumRel, NumRet, NumRelRet).
func (m Measure) Summed() bool {
	switch m.Kind {
	case KindNumQ, KindNumRel, KindNumRet, KindNumRelRet:
		return true
	}
	return false
}

// String returns the canonical ir_measures-style name, e.g. "R@5",
// "nDCG(gain=exp)@10", "RR".
func (m Measure) String() string {
	var base string
	switch m.Kind {
	case KindRecall:
		base = "R"
	case KindPrecision:
		base = "P"
	case KindRR:
		base = "RR"
	case KindNDCG:
		base = "nDCG"
		if m.Gain == GainExp {
			base = "nDCG(gain=exp)"
		}
	case KindSuccess:
		base = "Success"
	case KindAP:
		base = "AP"
	case KindRprec:
		return "Rprec"
	case KindJudged:
		base = "Judged"
	case KindNumQ:
		return "NumQ"
	case KindNumRel:
		return "NumRel"
	case KindNumRet:
		return "NumRet"
	case KindNumRelRet:
		return "NumRelRet"
	case KindBpref:
		return "Bpref"
	default:
		return fmt.Sprintf("invalid(%d)", m.Kind)
	}
	if m.K > 0 {
		return base + "@" + strconv.Itoa(m.K)
	}
	return base
}

// TRECName returns trec_eval's name for the measure where trec_eval has one
// (P_5, recall_5, recip_rank, ndcg_cut_10, success_5, map, map_cut_10,
// Rprec, bpref, ndcg, num_q, num_rel, num_ret, num_rel_ret) and the canonical name
// otherwise.
func (m Measure) TRECName() string {
	k := strconv.Itoa(m.K)
	switch m.Kind {
	case KindRecall:
		return "recall_" + k
	case KindPrecision:
		return "P_" + k
	case KindRR:
		if m.K == 0 {
			return "recip_rank"
		}
	case KindNDCG:
		if m.Gain == GainLinear {
			if m.K == 0 {
				return "ndcg"
			}
			return "ndcg_cut_" + k
		}
	case KindSuccess:
		return "success_" + k
	case KindAP:
		if m.K == 0 {
			return "map"
		}
		return "map_cut_" + k
	case KindRprec:
		return "Rprec"
	case KindBpref:
		return "bpref"
	case KindNumQ:
		return "num_q"
	case KindNumRel:
		return "num_rel"
	case KindNumRet:
		return "num_ret"
	case KindNumRelRet:
		return "num_rel_ret"
	}
	return m.String()
}

// Describe returns a plain-language description of the measure for readers
// who are not IR specialists (used in reports and --help).
func (m Measure) Describe() string {
	k := strconv.Itoa(m.K)
	switch m.Kind {
	case KindRecall:
		return "share of the relevant documents found in the top " + k
	case KindPrecision:
		return "share of the top " + k + " results that are relevant"
	case KindRR:
		if m.K > 0 {
			return "1 / rank of the first relevant result, 0 if none in the top " + k
		}
		return "1 / rank of the first relevant result (mean reciprocal rank)"
	case KindNDCG:
		if m.K > 0 {
			return "ranking quality of the top " + k + ", graded, 1 = ideal order"
		}
		return "ranking quality of the whole ranking, graded, 1 = ideal order"
	case KindSuccess:
		return "share of queries with at least one relevant result in the top " + k
	case KindAP:
		if m.K > 0 {
			return "average precision over the top " + k + " (mean = MAP@" + k + ")"
		}
		return "average precision over the whole ranking (mean = MAP)"
	case KindRprec:
		return "precision at rank R, R = number of relevant documents"
	case KindJudged:
		return "share of the top " + k + " results that have a judgment (a grade of 0 or more)"
	case KindNumQ:
		return "number of queries"
	case KindNumRel:
		return "number of relevant documents"
	case KindNumRet:
		return "number of retrieved documents"
	case KindNumRelRet:
		return "number of relevant documents retrieved"
	case KindBpref:
		return "how often relevant results rank above judged non-relevant ones; unjudged results are ignored"
	}
	return ""
}

// family describes how names map to a kind.
type family struct {
	kind   Kind
	cutoff cutoffRule
}

type cutoffRule uint8

const (
	cutoffRequired cutoffRule = iota
	cutoffOptional
	cutoffNone
)

// families maps every accepted base name (lower case) to its family.
var families = map[string]family{
	"r":                 {KindRecall, cutoffRequired},
	"recall":            {KindRecall, cutoffRequired},
	"p":                 {KindPrecision, cutoffRequired},
	"precision":         {KindPrecision, cutoffRequired},
	"rr":                {KindRR, cutoffOptional},
	"mrr":               {KindRR, cutoffOptional},
	"recip_rank":        {KindRR, cutoffOptional},
	"reciprocal_rank":   {KindRR, cutoffOptional},
	"ndcg":              {KindNDCG, cutoffOptional},
	"ndcg_cut":          {KindNDCG, cutoffRequired},
	"success":           {KindSuccess, cutoffRequired},
	"hit":               {KindSuccess, cutoffRequired},
	"hits":              {KindSuccess, cutoffRequired},
	"hit_rate":          {KindSuccess, cutoffRequired},
	"hitrate":           {KindSuccess, cutoffRequired},
	"ap":                {KindAP, cutoffOptional},
	"map":               {KindAP, cutoffOptional},
	"map_cut":           {KindAP, cutoffRequired},
	"average_precision": {KindAP, cutoffOptional},
	"rprec":             {KindRprec, cutoffNone},
	"r-prec":            {KindRprec, cutoffNone},
	"r_precision":       {KindRprec, cutoffNone},
	"judged":            {KindJudged, cutoffRequired},
	"bpref":             {KindBpref, cutoffNone},
	"numq":              {KindNumQ, cutoffNone},
	"num_q":             {KindNumQ, cutoffNone},
	"numrel":            {KindNumRel, cutoffNone},
	"num_rel":           {KindNumRel, cutoffNone},
	"numret":            {KindNumRet, cutoffNone},
	"num_ret":           {KindNumRet, cutoffNone},
	"numrelret":         {KindNumRelRet, cutoffNone},
	"num_rel_ret":       {KindNumRelRet, cutoffNone},
}

// KnownNames lists the accepted forms, for error messages and --help.
const KnownNames = "R@k (recall@k, recall_k, recall.k), P@k (precision@k, P_k), " +
	"RR and RR@k (mrr, mrr@k, recip_rank), nDCG and nDCG@k (ndcg@k, ndcg_cut_k; " +
	"nDCG(gain=exp)@k for 2^rel-1), Success@k (hit@k, hit_rate@k, success_k), " +
	"AP and AP@k (map, map@k, map_cut_k), Rprec, Bpref (bpref), Judged@k, NumQ, NumRel, NumRet, " +
	"NumRelRet; any name may carry the prefix retrieval_ and write @k as _at_k " +
	"(retrieval_recall_at_5, retrieval_mrr)"

// Parse parses one measure name, case-insensitively.
func Parse(name string) (Measure, error) {
	m, err := parse(strings.TrimSpace(name))
	if err != nil {
		return Measure{}, fmt.Errorf("parse measure %q: %w; known measures: %s", name, err, KnownNames)
	}
	return m, nil
}

func parse(name string) (Measure, error) {
	s := strings.ToLower(name)
	if s == "" {
		return Measure{}, fmt.Errorf("empty name")
	}
	s = strings.TrimPrefix(s, "retrieval_")
	s = strings.ReplaceAll(s, "_at_", "@")

	// Split off the cutoff: "name@k", "name_k", "name.k".
	base, kText := s, ""
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		base, kText = s[:i], s[i+1:]
	} else if i := strings.LastIndexAny(s, "_."); i >= 0 && isDigits(s[i+1:]) {
		base, kText = s[:i], s[i+1:]
	}

	// Parameters in parentheses: only nDCG(gain=linear|exp).
	gain := GainLinear
	if i := strings.IndexByte(base, '('); i >= 0 {
		if !strings.HasSuffix(base, ")") {
			return Measure{}, fmt.Errorf("unbalanced parameter list")
		}
		params := base[i+1 : len(base)-1]
		base = base[:i]
		for _, p := range strings.Split(params, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok {
				return Measure{}, fmt.Errorf("parameter %q is not key=value", p)
			}
			k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `'"`)
			if k != "gain" {
				return Measure{}, fmt.Errorf("unknown parameter %q (only gain=linear|exp, on nDCG)", k)
			}
			switch v {
			case "linear", "lin":
				gain = GainLinear
			case "exp", "exponential":
				gain = GainExp
			default:
				return Measure{}, fmt.Errorf("unknown gain %q (want linear or exp)", v)
			}
		}
	}

	f, ok := families[base]
	if !ok {
		return Measure{}, fmt.Errorf("unknown measure")
	}
	if gain != GainLinear && f.kind != KindNDCG {
		return Measure{}, fmt.Errorf("gain applies to nDCG only")
	}
	m := Measure{Kind: f.kind, Gain: gain}
	if kText != "" {
		if f.cutoff == cutoffNone {
			return Measure{}, fmt.Errorf("%s takes no cutoff", m.String())
		}
		k, err := strconv.Atoi(kText)
		if err != nil || k < 1 || k > MaxCutoff {
			return Measure{}, fmt.Errorf("cutoff %q is not an integer in [1,%d]", kText, MaxCutoff)
		}
		m.K = k
	} else if f.cutoff == cutoffRequired {
		return Measure{}, fmt.Errorf("%s needs a cutoff, e.g. %s@10", base, base)
	}
	return m, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseList parses comma-separated measure names from each element of
// names, dropping duplicates (the first spelling wins) and keeping order.
// A bare number continues the name before it, as trec_eval's -m does:
// "recall.5,10" is recall.5 and recall.10, "P@1,5" is P@1 and P@5.
func ParseList(names []string) ([]Measure, error) {
	var out []Measure
	seen := map[Measure]bool{}
	for _, group := range names {
		prefix := "" // of the last name with a cutoff: "recall." of "recall.5"
		for _, n := range strings.Split(group, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			if isDigits(n) && prefix != "" {
				n = prefix + n // trec_eval's list form: recall.5,10 is recall.5 and recall.10
			}
			m, err := Parse(n)
			if err != nil {
				return nil, err
			}
			prefix = ""
			if i := strings.LastIndexAny(n, ".@_"); i >= 0 && isDigits(n[i+1:]) {
				prefix = n[:i+1]
			}
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// DefaultMeasures is the set scored when the user names none.
func DefaultMeasures() []Measure {
	return []Measure{
		{Kind: KindRecall, K: 1}, {Kind: KindRecall, K: 5}, {Kind: KindRecall, K: 10}, {Kind: KindRecall, K: 100},
		{Kind: KindPrecision, K: 1}, {Kind: KindPrecision, K: 5}, {Kind: KindPrecision, K: 10},
		{Kind: KindRR},
		{Kind: KindNDCG, K: 10},
		{Kind: KindAP},
		{Kind: KindSuccess, K: 1}, {Kind: KindSuccess, K: 5}, {Kind: KindSuccess, K: 10},
		{Kind: KindJudged, K: 10},
	}
}

// Names returns the canonical names of ms.
func Names(ms []Measure) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}
