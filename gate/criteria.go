package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
)

// Severity says what a failing gate does.
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"   // blocks the merge (exit code 1)
	SeverityWarning Severity = "warning" // reported, does not block
)

// Criteria is a parsed ship-criteria file.
type Criteria struct {
	File  string
	Gates []Gate
}

// Gate is one ship criterion.
type Gate struct {
	Name    string
	Measure metric.Measure
	// Cost, when set, names the live retrieval's cost the gate checks
	// instead of a measure (one of CostFigures): its threshold is a
	// ceiling and its regression_max the largest allowed rise, in the
	// figure's unit.
	Cost string
	// Tag restricts the gate to a tag group ("category=legal"); MinQueries
	// is the smallest group size that gets a verdict.
	Tag        string
	MinQueries int
	// Threshold is the absolute floor; RegressionMax the largest allowed
	// drop from the baseline. Either may be absent (nil).
	Threshold     *float64
	RegressionMax *float64
	Severity      Severity
	// Significant makes a drop count only when the paired test finds it
	// significant at Alpha (default 0.05).
	Significant bool
	Alpha       float64
	Line        int // line of the gate in the file
	TagLine     int // line of its tag: key, if any
	// Judgments says which values a measure gate checks: JudgmentsHuman
	// (the gold set as given, the default) or JudgmentsFilled (with the
	// LLM judgments of --judgments filled in). Criteria set it for every
	// gate with a top-level judgments: key; a gate may override it.
	Judgments string
}

// The judgments a gate's values rest on.
const (
	JudgmentsHuman  = "human"
	JudgmentsFilled = "filled"
)

func validJudgments(s string) bool { return s == JudgmentsHuman || s == JudgmentsFilled }

var gateKeys = []string{"name", "metric", "tag", "min_queries", "threshold", "regression_max", "severity", "significant", "alpha", "judgments"}

// LoadCriteria reads and validates a criteria file. Errors are
// *schema.InputError naming the file and line.
func LoadCriteria(path string) (*Criteria, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read criteria: %w", err)
	}
	return ParseCriteria(path, data)
}

// ParseCriteria parses criteria from data; path names it in errors.
func ParseCriteria(path string, data []byte) (*Criteria, error) {
	var errs schema.ErrorList
	bad := func(line int, field string, format string, args ...any) {
		errs.Add(&schema.InputError{File: path, Line: int64(max(line, 1)), Field: field, Err: fmt.Errorf(format, args...)})
	}
	doc, err := decodeOne(path, data)
	if err != nil {
		return nil, err
	}
	for _, d := range duplicateKeys(&doc) {
		bad(d.line, d.key, "repeated key (first at line %d): a YAML mapping keeps only one of them, so the other would be dropped silently", d.first)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	c := &Criteria{File: path}
	if len(doc.Content) == 0 {
		bad(1, "", "empty criteria file: want a gates: list")
		return nil, errs.Err()
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		bad(root.Line, "", "want a mapping with a gates: list")
		return nil, errs.Err()
	}
	var gatesNode *yaml.Node
	defaultJudgments := JudgmentsHuman
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "gates":
			gatesNode = v
		case "version":
			if v.Value != "1" {
				bad(v.Line, "version", "unsupported criteria version %q (want 1)", v.Value)
			}
		case "judgments":
			if !validJudgments(v.Value) {
				bad(v.Line, "judgments", "want human or filled, got %q", v.Value)
			}
			defaultJudgments = v.Value
		default:
			bad(k.Line, k.Value, "unknown key (known: gates, judgments, version)")
		}
	}
	if gatesNode == nil {
		bad(root.Line, "gates", "missing: want a list of gates")
		return nil, errs.Err()
	}
	if gatesNode.Kind != yaml.SequenceNode {
		bad(gatesNode.Line, "gates", "want a list")
		return nil, errs.Err()
	}
	names := map[string]int{}
	for _, gn := range gatesNode.Content {
		g, ok := parseGate(gn, bad)
		if !ok {
			continue
		}
		if g.Judgments == "" && g.Cost == "" {
			g.Judgments = defaultJudgments
		}
		if prev, dup := names[g.Name]; dup {
			bad(g.Line, "name", "gate %q already defined at line %d", g.Name, prev)
			continue
		}
		names[g.Name] = g.Line
		c.Gates = append(c.Gates, g)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(c.Gates) == 0 {
		return nil, &schema.InputError{File: path, Line: int64(gatesNode.Line), Field: "gates", Err: errors.New("no gates")}
	}
	return c, nil
}

// decodeOne decodes the one YAML document of a criteria file. A second
// document (after ---) is an error: its gates would otherwise be ignored.
func decodeOne(path string, data []byte) (yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return doc, yamlError(path, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return doc, nil
	case err != nil:
		return doc, yamlError(path, err)
	}
	return doc, &schema.InputError{File: path, Line: int64(max(next.Line, 1)), Err: errors.New(
		"a second YAML document starts here (after ---): a criteria file is one document, with every gate in one gates: list")}
}

// yamlError turns a YAML syntax error into an input error at its line.
func yamlError(path string, err error) error {
	line := 1
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		if i := strings.Index(err.Error(), "line "); i >= 0 {
			fmt.Sscanf(err.Error()[i:], "line %d", &line)
		}
	}
	return &schema.InputError{File: path, Line: int64(line), Err: fmt.Errorf("invalid YAML: %v", err)}
}

// duplicate is a mapping key repeated in the same mapping.
type duplicate struct {
	key         string
	line, first int
}

// duplicateKeys finds every key repeated within one mapping, at any depth
// of the tree. YAML decoders keep the last of them: in a criteria file
// that drops a gates: list or a gate's threshold without a word.
func duplicateKeys(n *yaml.Node) []duplicate {
	var out []duplicate
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			first := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				id := k.Tag + "\x00" + k.Value
				if k.Kind != yaml.ScalarNode {
					continue
				}
				if line, dup := first[id]; dup {
					out = append(out, duplicate{key: k.Value, line: k.Line, first: line})
					continue
				}
				first[id] = k.Line
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return out
}

func parseGate(n *yaml.Node, bad func(int, string, string, ...any)) (Gate, bool) {
	g := Gate{Line: n.Line, Severity: SeverityError, Alpha: 0.05, MinQueries: 1}
	if n.Kind != yaml.MappingNode {
		bad(n.Line, "", "want a gate (a mapping with name, threshold, …)")
		return g, false
	}
	ok := true
	var metricName string
	seen := map[string]bool{}
	type limit struct {
		key  string
		line int
		x    float64
	}
	var limits []limit // their range depends on what the gate checks
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		seen[k.Value] = true // repeated keys are refused before (duplicateKeys)
		num := func() (float64, bool) {
			x, err := strconv.ParseFloat(v.Value, 64)
			if err != nil || v.Kind != yaml.ScalarNode || math.IsNaN(x) || math.IsInf(x, 0) {
				// ParseFloat accepts "NaN" and "Inf"; every comparison
				// with NaN is false, so it would switch the gate off.
				bad(v.Line, k.Value, "want a finite number, got %q", v.Value)
				return 0, false
			}
			return x, true
		}
		switch k.Value {
		case "name":
			g.Name = v.Value
		case "metric":
			metricName = v.Value
		case "tag":
			if name, value, found := strings.Cut(v.Value, "="); !found || name == "" || value == "" {
				bad(v.Line, "tag", "want name=value, e.g. category=legal, got %q", v.Value)
				ok = false
			}
			g.Tag, g.TagLine = v.Value, v.Line
		case "min_queries":
			x, err := strconv.Atoi(v.Value)
			if err != nil || x < 0 {
				bad(v.Line, "min_queries", "want a whole number ≥ 0, got %q", v.Value)
				ok = false
			}
			g.MinQueries = x
		case "threshold", "regression_max":
			x, good := num()
			if !good {
				ok = false
				continue
			}
			limits = append(limits, limit{k.Value, v.Line, x})
			if k.Value == "threshold" {
				g.Threshold = &x
			} else {
				g.RegressionMax = &x
			}
		case "severity":
			switch Severity(strings.ToLower(v.Value)) {
			case SeverityError:
				g.Severity = SeverityError
			case SeverityWarning, "warn":
				g.Severity = SeverityWarning
			default:
				bad(v.Line, "severity", "want error or warning, got %q", v.Value)
				ok = false
			}
		case "significant":
			b, err := strconv.ParseBool(v.Value)
			if err != nil {
				bad(v.Line, "significant", "want true or false, got %q", v.Value)
				ok = false
			}
			g.Significant = b
		case "judgments":
			if !validJudgments(v.Value) {
				bad(v.Line, "judgments", "want human or filled, got %q", v.Value)
				ok = false
			}
			g.Judgments = v.Value
		case "alpha":
			x, good := num()
			if !good || x <= 0 || x >= 1 {
				if good {
					bad(v.Line, "alpha", "%v: want a level between 0 and 1 (e.g. 0.05)", x)
				}
				ok = false
				continue
			}
			g.Alpha = x
		default:
			bad(k.Line, k.Value, "unknown key (known: %s)", strings.Join(gateKeys, ", "))
			ok = false
		}
	}
	if g.Name == "" {
		bad(n.Line, "name", "missing: every gate needs a name")
		return g, false
	}
	if metricName == "" {
		metricName = g.Name
	}
	if cost := strings.ToLower(metricName); slices.Contains(CostFigures, cost) {
		g.Cost = cost
		for _, l := range limits {
			if l.x < 0 {
				bad(l.line, l.key, "%v is negative: %s is a ceiling in %s", l.x, l.key, costUnit(cost))
				ok = false
			}
		}
		if g.Significant {
			bad(n.Line, "significant", "applies to quality measures, which have per-query pairs; %s has none", cost)
			ok = false
		}
		if g.Judgments == JudgmentsFilled {
			bad(n.Line, "judgments", "applies to quality measures; %s does not depend on judgments", cost)
			ok = false
		}
		if !seen["threshold"] && !seen["regression_max"] {
			bad(n.Line, "", "gate %q has neither threshold nor regression_max", g.Name)
			return g, false
		}
		if g.Tag == "" && seen["min_queries"] {
			bad(n.Line, "min_queries", "applies to gates with a tag")
			ok = false
		}
		return g, ok
	}
	for _, l := range limits {
		if l.x < 0 || l.x > 1 {
			bad(l.line, l.key, "%v is outside [0,1]: measures are fractions (0.85 means 85%%)", l.x)
			ok = false
		}
	}
	m, err := metric.Parse(metricName)
	if err != nil {
		if seen["metric"] {
			bad(n.Line, "metric", "%v", err)
		} else {
			bad(n.Line, "name", "cannot tell the measure from the name %q; add metric: (e.g. metric: R@5, or a cost of a live retrieval: %s). %v",
				g.Name, strings.Join(CostFigures, ", "), err)
		}
		return g, false
	}
	if m.Summed() {
		bad(n.Line, "metric", "%s is a count, not a score in [0,1]; gate on a mean measure", m)
		return g, false
	}
	g.Measure = m
	if !seen["threshold"] && !seen["regression_max"] {
		bad(n.Line, "", "gate %q has neither threshold nor regression_max", g.Name)
		return g, false
	}
	if g.Tag == "" && seen["min_queries"] {
		bad(n.Line, "min_queries", "applies to gates with a tag")
		ok = false
	}
	return g, ok
}

// Tags returns the distinct tag groups the criteria gate measures on, in
// order (the groups a paired comparison covers); nil for nil criteria.
func (c *Criteria) Tags() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, g := range c.Gates {
		if g.Cost == "" && g.Tag != "" && !slices.Contains(out, g.Tag) {
			out = append(out, g.Tag)
		}
	}
	return out
}

// CostFigures are the costs of a live retrieval a gate may check: latency
// percentiles (p50, p90, p95, p99), the largest and the mean latency in
// milliseconds, and the number of queries that got no answer.
var CostFigures = []string{"latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms",
	"latency_mean_ms", "failed_queries"}

// costUnit is a cost figure's unit.
func costUnit(cost string) string {
	if cost == "failed_queries" {
		return UnitQueries
	}
	return UnitMS
}

// Measures returns the distinct measures the criteria gate on, in order
// (cost gates check no measure).
func (c *Criteria) Measures() []metric.Measure {
	var out []metric.Measure
	for _, g := range c.Gates {
		if g.Cost == "" && !slices.Contains(out, g.Measure) {
			out = append(out, g.Measure)
		}
	}
	return out
}
