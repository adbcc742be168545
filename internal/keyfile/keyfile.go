package keyfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalgate/evalgate/schema"
)

// File is one YAML file of keys being parsed.
type File struct {
	// Name names the file in errors, as the user gave it.
	Name string
	// Redact, if set, is applied to every message before it is recorded.
	Redact func(string) string

	errs  schema.ErrorList
	nodes map[string]*yaml.Node // value node of each key seen ("embed.url", …)
	keys  map[string]*yaml.Node // key node of each key seen
	lines map[string]int
}

// Decode decodes the single YAML document of data, which must be a
// mapping. what names the kind of file in messages ("retriever file"),
// and keys are its essential keys, listed when the file is empty or not
// a mapping. The error is a *schema.InputError.
func Decode(name string, data []byte, what string, keys []string) (*File, *yaml.Node, error) {
	f := &File{Name: name, nodes: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}, lines: map[string]int{}}
	empty := fmt.Sprintf("empty %s: want at least %s", what, andList(keys))
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, f.InputErr(1, "", "%s", empty)
		}
		return nil, nil, f.InputErr(errLine(err), "", "invalid YAML: %v", err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		line := next.Line
		if err != nil {
			line = errLine(err)
		}
		return nil, nil, f.InputErr(line, "", "a second YAML document: %ss hold one (remove the ---)", what)
	}
	if len(doc.Content) == 0 {
		return nil, nil, f.InputErr(1, "", "%s", empty)
	}
	root := Resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, nil, f.InputErr(root.Line, "", "want a mapping of keys (%s, …)", strings.Join(keys, ", "))
	}
	return f, root, nil
}

func andList(keys []string) string {
	if len(keys) < 2 {
		return strings.Join(keys, "")
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
}

// errLine finds the line a yaml.v3 error names, 1 when it names none.
func errLine(err error) int {
	line := 1
	if i := strings.Index(err.Error(), "line "); i >= 0 {
		fmt.Sscanf(err.Error()[i:], "line %d", &line)
	}
	return line
}

// Resolve follows aliases (*name) to the node they stand for.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// KindName names the kind of a node in messages: mapping, list, alias or
// scalar.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "scalar"
}

// InputErr returns an error at a line for a key, without recording it.
func (f *File) InputErr(line int, key, format string, args ...any) error {
	return &schema.InputError{File: f.Name, Line: int64(max(line, 1)), Field: key, Err: fmt.Errorf(format, args...)}
}

// Bad records a problem at a line (1 when unknown) for a key.
func (f *File) Bad(line int, key string, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if f.Redact != nil {
		msg = f.Redact(msg)
	}
	f.errs.Add(&schema.InputError{File: f.Name, Line: int64(max(line, 1)), Field: key, Err: errors.New(msg)})
}

// Err returns the problems recorded so far (a schema.ErrorList), or nil.
func (f *File) Err() error { return f.errs.Err() }

// Mapping records the keys of a mapping node under prefix ("" for the top
// level, "embed." for a section), refusing unknown and repeated ones.
func (f *File) Mapping(n *yaml.Node, prefix string, known []string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := Resolve(n.Content[i]), Resolve(n.Content[i+1])
		name := prefix + k.Value
		switch {
		case k.Kind != yaml.ScalarNode:
			f.Bad(k.Line, "", "want a key name, found a %s", KindName(k))
		case !slices.Contains(known, k.Value):
			f.Bad(k.Line, name, "unknown key (known: %s)", strings.Join(known, ", "))
		case f.keys[name] != nil:
			f.Bad(k.Line, name, "repeated key (first at line %d)", f.keys[name].Line)
		default:
			f.Set(name, k, v)
		}
	}
}

// Set records key with its key and value nodes (for the entries of a
// mapping the caller walks itself, such as headers).
func (f *File) Set(key string, k, v *yaml.Node) {
	f.keys[key], f.nodes[key] = k, v
	f.lines[key] = k.Line
}

// Node returns the value node of a key, nil when the file does not set it.
func (f *File) Node(key string) *yaml.Node { return f.nodes[key] }

// Line returns the file line of a key, 0 when the file does not set it.
func (f *File) Line(key string) int { return f.lines[key] }

// Lines returns the line of every key recorded (the File's own map).
func (f *File) Lines() map[string]int { return f.lines }

// Scalar returns the text and line of a key's scalar value; ok is false
// when the key is not set, or (recorded as a problem) is not a scalar or
// is empty.
func (f *File) Scalar(key string) (s string, line int, ok bool) {
	v := f.nodes[key]
	if v == nil {
		return "", 0, false
	}
	if v.Kind != yaml.ScalarNode {
		f.Bad(v.Line, key, "want a single value, found a %s", KindName(v))
		return "", v.Line, false
	}
	if v.Tag == "!!null" {
		f.Bad(v.Line, key, "empty value")
		return "", v.Line, false
	}
	return v.Value, v.Line, true
}

// Int reads a whole number in [lo, hi] into dst, when the key is set.
func (f *File) Int(key string, lo, hi int, dst *int) {
	s, line, ok := f.Scalar(key)
	if !ok {
		return
	}
	x, err := strconv.Atoi(s)
	if err != nil {
		f.Bad(line, key, "want a whole number, got %q", s)
		return
	}
	if x < lo || x > hi {
		f.Bad(line, key, "%d is outside [%d, %d]", x, lo, hi)
		return
	}
	*dst = x
}

// Float reads a finite number in [lo, hi] into dst, when the key is set.
func (f *File) Float(key string, lo, hi float64, dst *float64) {
	s, line, ok := f.Scalar(key)
	if !ok {
		return
	}
	x, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
		f.Bad(line, key, "want a number, got %q", s)
	case x < lo || x > hi:
		f.Bad(line, key, "%v is outside [%g, %g]", x, lo, hi)
	default:
		*dst = x
	}
}

// Rate reads a number of requests per second in [0, hi] (0 meaning
// unlimited) into dst, when the key is set.
func (f *File) Rate(key string, hi float64, dst *float64) {
	s, line, ok := f.Scalar(key)
	if !ok {
		return
	}
	x, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
		f.Bad(line, key, "want a number of requests per second (0 for unlimited), got %q", s)
	case x < 0 || x > hi:
		f.Bad(line, key, "%v is outside [0, %g] (0 means unlimited)", x, hi)
	default:
		*dst = x
	}
}

// Duration reads a Go duration with a unit in [lo, hi] into dst, when the
// key is set.
func (f *File) Duration(key string, lo, hi time.Duration, dst *time.Duration) {
	s, line, ok := f.Scalar(key)
	if !ok {
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		f.Bad(line, key, "want a duration with a unit, such as 10s or 1500ms, got %q", s)
		return
	}
	if d < lo || d > hi {
		if lo > 0 {
			f.Bad(line, key, "%s is outside [%s, %s]", d, lo, hi)
		} else {
			f.Bad(line, key, "%s is outside [0s, %s]", d, hi)
		}
		return
	}
	*dst = d
}

// Bool reads true or false into dst, when the key is set.
func (f *File) Bool(key string, dst *bool) {
	s, line, ok := f.Scalar(key)
	if !ok {
		return
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		f.Bad(line, key, "want true or false, got %q", s)
		return
	}
	*dst = b
}

// Position maps the lines of a template held in a scalar value to file
// lines. A literal block scalar (|) starts on the line after its key and
// keeps its lines; any other scalar is folded onto one template line,
// which maps to its first line.
type Position struct {
	Line  int  // the value's line
	Block bool // a literal block scalar
}

// PositionOf returns the Position of a value node.
func PositionOf(v *yaml.Node) Position {
	return Position{Line: v.Line, Block: v.Style&yaml.LiteralStyle != 0}
}

// FileLine returns the file line of line n (from 1; 0 when unknown) of
// the value's text.
func (p Position) FileLine(n int) int {
	if p.Block {
		return p.Line + max(n, 1)
	}
	return p.Line
}

// templateErrRE splits text/template's "template: name:line[:col]: msg".
var templateErrRE = regexp.MustCompile(`^template: [^:]*:(\d+):(?:\d+:)? ?(.*)$`)

// TemplateError returns the template line (0 when it names none) and the
// message of a text/template error, without its "template: name:line:"
// prefix.
func TemplateError(err error) (int, string) {
	msg := err.Error()
	if m := templateErrRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, strings.TrimPrefix(msg, "template: ")
}
