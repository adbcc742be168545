package keyfile

import (
	"errors"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/evalgate/evalgate/schema"
)

var essentials = []string{"base_url", "model"}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		file string
		line int64
		want string
	}{
		{"", 1, "empty test file: want at least base_url and model"},
		{"# only a comment\n", 1, "empty test file"},
		{"- a\n- b\n", 1, "want a mapping of keys (base_url, model, …)"},
		{"a: [\n", 1, "invalid YAML"},
		{"a: 1\n\nb: 2\n---\nc: 3\n", 4, "a second YAML document: test files hold one (remove the ---)"},
		{"a: 1\nb: c: d\n", 2, "invalid YAML"},
	}
	for _, tc := range tests {
		_, _, err := Decode("llm.yaml", []byte(tc.file), "test file", essentials)
		var ie *schema.InputError
		if !errors.As(err, &ie) || ie.File != "llm.yaml" || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want line %d saying %q", tc.file, err, tc.line, tc.want)
		}
	}
}

func TestSettings(t *testing.T) {
	const file = `n: 7
x: 0.25
rate: 12.5
d: 1500ms
b: true
alias: &a 3
m: *a
`
	f, root, err := Decode("f.yaml", []byte(file), "test file", essentials)
	if err != nil {
		t.Fatal(err)
	}
	f.Mapping(root, "", []string{"n", "x", "rate", "d", "b", "alias", "m"})
	var (
		n, m int
		x, r float64
		d    time.Duration
		b    bool
	)
	f.Int("n", 1, 10, &n)
	f.Int("m", 1, 10, &m)
	f.Float("x", 0, 2, &x)
	f.Rate("rate", 100, &r)
	f.Duration("d", time.Millisecond, time.Hour, &d)
	f.Bool("b", &b)
	f.Int("absent", 1, 10, &n)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 7 || m != 3 || x != 0.25 || r != 12.5 || d != 1500*time.Millisecond || !b {
		t.Errorf("n %d m %d x %v rate %v d %s b %v", n, m, x, r, d, b)
	}
	if f.Line("d") != 4 || f.Line("absent") != 0 || f.Node("absent") != nil {
		t.Errorf("lines: d %d", f.Line("d"))
	}
}

// TestProblemsCollected: every problem is reported, each with its line
// and key, and messages pass through Redact.
func TestProblemsCollected(t *testing.T) {
	const file = `n: ten
n: 3
x: .nan
rate: -1
d: 10
b: s3cr3t
l: [1]
e:
z: 1
? [k]
: v
y: 5
`
	f, root, err := Decode("f.yaml", []byte(file), "test file", essentials)
	if err != nil {
		t.Fatal(err)
	}
	f.Redact = func(s string) string { return strings.ReplaceAll(s, "s3cr3t", "[redacted]") }
	f.Mapping(root, "", []string{"n", "x", "rate", "d", "b", "l", "e", "y"})
	var (
		n    int
		x, r float64
		d    time.Duration
		b    bool
	)
	f.Int("n", 1, 10, &n)
	f.Float("x", 0, 2, &x)
	f.Rate("rate", 100, &r)
	f.Duration("d", time.Millisecond, time.Hour, &d)
	f.Bool("b", &b)
	f.Int("l", 0, 1, &n)
	f.Int("e", 0, 1, &n)
	f.Float("y", 0, 2, &x)
	want := []string{ // in file order
		`f.yaml:1: field "n": want a whole number, got "ten"`,
		`f.yaml:2: field "n": repeated key (first at line 1)`,
		`f.yaml:3: field "x": want a number, got ".nan"`,
		`f.yaml:4: field "rate": -1 is outside [0, 100] (0 means unlimited)`,
		`f.yaml:5: field "d": want a duration with a unit, such as 10s or 1500ms, got "10"`,
		`f.yaml:6: field "b": want true or false, got "[redacted]"`,
		`f.yaml:7: field "l": want a single value, found a list`,
		`f.yaml:8: field "e": empty value`,
		`f.yaml:9: field "z": unknown key`,
		`f.yaml:10: want a key name, found a list`,
		`(and 1 more errors)`, // line 12, y outside [0, 2]
	}
	var list *schema.ErrorList
	if !errors.As(f.Err(), &list) || list.Len() != 11 {
		t.Fatalf("errors %v, want 11", f.Err())
	}
	if got := strings.Split(list.Error(), "\n"); len(got) != len(want) {
		t.Fatalf("errors:\n%s", list.Error())
	} else {
		for i, w := range want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("error %d: %q, want prefix %q", i, got[i], w)
			}
		}
	}
	if n != 0 || x != 0 || r != 0 || d != 0 || b {
		t.Error("a bad value was stored")
	}
}

func TestTemplatePositions(t *testing.T) {
	const file = "a: |\n  line one\n  {{.X}\nb: 'folded\n  text'\n"
	f, root, err := Decode("f.yaml", []byte(file), "test file", essentials)
	if err != nil {
		t.Fatal(err)
	}
	f.Mapping(root, "", []string{"a", "b"})
	a, b := PositionOf(f.Node("a")), PositionOf(f.Node("b"))
	if a.FileLine(2) != 3 || a.FileLine(0) != 2 || b.FileLine(2) != 4 {
		t.Errorf("a %+v line 2 -> %d; b %+v line 2 -> %d", a, a.FileLine(2), b, b.FileLine(2))
	}
	_, perr := template.New("a").Parse(f.Node("a").Value)
	line, msg := TemplateError(perr)
	if line != 2 || strings.HasPrefix(msg, "template:") || a.FileLine(line) != 3 {
		t.Errorf("TemplateError(%v) = %d, %q", perr, line, msg)
	}
	if line, msg := TemplateError(errors.New("template: no line")); line != 0 || msg != "no line" {
		t.Errorf("no line: %d %q", line, msg)
	}
}
