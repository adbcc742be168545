package gate

import (
	"errors"
	"fmt"
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
}

var gateKeys = []string{"name", "metric", "tag", "min_queries", "threshold", "regression_max", "severity", "significant", "alpha"}

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
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 1
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			if i := strings.Index(err.Error(), "line "); i >= 0 {
				fmt.Sscanf(err.Error()[i:], "line %d", &line)
			}
		}
		return nil, &schema.InputError{File: path, Line: int64(line), Err: fmt.Errorf("invalid YAML: %v", err)}
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
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "gates":
			gatesNode = v
		case "version":
			if v.Value != "1" {
				bad(v.Line, "version", "unsupported criteria version %q (want 1)", v.Value)
			}
		default:
			bad(k.Line, k.Value, "unknown key (known: gates, version)")
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

func parseGate(n *yaml.Node, bad func(int, string, string, ...any)) (Gate, bool) {
	g := Gate{Line: n.Line, Severity: SeverityError, Alpha: 0.05, MinQueries: 1}
	if n.Kind != yaml.MappingNode {
		bad(n.Line, "", "want a gate (a mapping with name, threshold, …)")
		return g, false
	}
	ok := true
	var metricName string
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			bad(k.Line, k.Value, "repeated key")
			ok = false
			continue
		}
		seen[k.Value] = true
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
			if x < 0 || x > 1 {
				bad(v.Line, k.Value, "%v is outside [0,1]: measures are fractions (0.85 means 85%%)", x)
				ok = false
				continue
			}
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
	m, err := metric.Parse(metricName)
	if err != nil {
		if seen["metric"] {
			bad(n.Line, "metric", "%v", err)
		} else {
			bad(n.Line, "name", "cannot tell the measure from the name %q; add metric: (e.g. metric: R@5). %v", g.Name, err)
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

// Tags returns the distinct tag groups the criteria gate on, in order;
// nil for nil criteria.
func (c *Criteria) Tags() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, g := range c.Gates {
		if g.Tag != "" && !slices.Contains(out, g.Tag) {
			out = append(out, g.Tag)
		}
	}
	return out
}

// Measures returns the distinct measures the criteria gate on, in order.
func (c *Criteria) Measures() []metric.Measure {
	var out []metric.Measure
	for _, g := range c.Gates {
		if !slices.Contains(out, g.Measure) {
			out = append(out, g.Measure)
		}
	}
	return out
}
