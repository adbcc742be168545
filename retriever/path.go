package retriever

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/evalgate/evalgate/internal/httpcall"
)

// Path locates a value inside a JSON answer: keys joined by dots, [n] for
// the n-th element of a list (from 0), ["key"] for a key that holds a dot
// or a bracket, and "." alone for the value itself. Examples: hits.hits,
// result.points, data.Get.Chunk, root.children, [0].items, _additional.id,
// fields["doc.id"].
//
// The zero Path is the value itself.
type Path struct {
	text  string
	steps []pathStep
}

// pathStep is one key (index < 0) or one list index.
type pathStep struct {
	key   string
	index int
}

// maxIndexDigits bounds a list index so it never overflows an int.
const maxIndexDigits = 9

// ParsePath parses a path. The error names the byte offset and the cause.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, errors.New("empty path (use . for the value itself)")
	}
	if s == "." {
		return Path{text: s}, nil
	}
	p := Path{text: s}
	// afterStep: a key or an index has just ended, so what follows is
	// '.', '[' or the end; otherwise a bare key or '[' comes next.
	afterStep, afterDot := false, false
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '.':
			if !afterStep {
				return Path{}, fmt.Errorf("offset %d: empty key before '.'", i)
			}
			afterStep, afterDot = false, true
			i++
		case c == '[':
			if afterDot {
				return Path{}, fmt.Errorf("offset %d: want a key after '.', got '['", i)
			}
			st, n, err := parseBracket(s[i:])
			if err != nil {
				return Path{}, fmt.Errorf("offset %d: %w", i, err)
			}
			p.steps = append(p.steps, st)
			i += n
			afterStep, afterDot = true, false
		case c == ']':
			return Path{}, fmt.Errorf("offset %d: ']' without '['", i)
		default:
			if afterStep {
				return Path{}, fmt.Errorf("offset %d: want '.' or '[' before %q", i, rest(s[i:]))
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' && s[j] != ']' {
				j++
			}
			p.steps = append(p.steps, pathStep{key: s[i:j], index: -1})
			i = j
			afterStep, afterDot = true, false
		}
	}
	if afterDot {
		return Path{}, fmt.Errorf("offset %d: empty key after the last '.'", len(s))
	}
	return p, nil
}

// parseBracket parses "[n]" or `["key"]` at the start of s and returns the
// step and the bytes it used.
func parseBracket(s string) (pathStep, int, error) {
	if len(s) > 1 && s[1] == '"' {
		q, err := strconv.QuotedPrefix(s[1:])
		if err != nil {
			return pathStep{}, 0, errors.New(`unterminated or invalid quoted key: want ["key"]`)
		}
		key, err := strconv.Unquote(q)
		if err != nil || key == "" {
			return pathStep{}, 0, errors.New(`invalid quoted key: want a non-empty ["key"]`)
		}
		end := 1 + len(q)
		if end >= len(s) || s[end] != ']' {
			return pathStep{}, 0, errors.New(`want ']' after the quoted key`)
		}
		return pathStep{key: key, index: -1}, end + 1, nil
	}
	j := 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == 1 || j >= len(s) || s[j] != ']' {
		return pathStep{}, 0, fmt.Errorf("want [n] with n a whole number ≥ 0, or [\"key\"], got %q", rest(s))
	}
	if j-1 > maxIndexDigits {
		return pathStep{}, 0, fmt.Errorf("index %s is too large", s[1:j])
	}
	n, _ := strconv.Atoi(s[1:j])
	return pathStep{index: n}, j + 1, nil
}

// rest quotes at most a few bytes of s for an error.
func rest(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// String returns the path as written.
func (p Path) String() string {
	if p.text == "" {
		return "."
	}
	return p.text
}

// IsRoot reports whether the path is the value itself.
func (p Path) IsRoot() bool { return len(p.steps) == 0 }

// Lookup returns the value at the path in v, a value decoded by
// encoding/json (objects as map[string]any, lists as []any). The error
// says where the path left the answer and what was there instead.
func (p Path) Lookup(v any) (any, error) {
	for i, st := range p.steps {
		if st.index < 0 {
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: want an object with key %q, found %s", p.prefix(i), st.key, describe(v))
			}
			next, ok := obj[st.key]
			if !ok {
				return nil, fmt.Errorf("%s: no key %q in %s", p.prefix(i), st.key, describe(v))
			}
			v = next
			continue
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: want a list for [%d], found %s", p.prefix(i), st.index, describe(v))
		}
		if st.index >= len(list) {
			return nil, fmt.Errorf("%s: no element [%d] in %s", p.prefix(i), st.index, describe(v))
		}
		v = list[st.index]
	}
	return v, nil
}

// parentHasNo reports whether the path's last step is a key that the
// object at the path's parent lacks (the object itself being there).
func (p Path) parentHasNo(v any) bool {
	n := len(p.steps)
	if n == 0 || p.steps[n-1].index >= 0 {
		return false
	}
	parent, err := Path{steps: p.steps[:n-1]}.Lookup(v)
	if err != nil {
		return false
	}
	obj, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	_, has := obj[p.steps[n-1].key]
	return !has
}

// prefix renders the first n steps, for errors ("the answer" for none).
func (p Path) prefix(n int) string {
	if n == 0 {
		return "the answer"
	}
	var b strings.Builder
	for i, st := range p.steps[:n] {
		switch {
		case st.index >= 0:
			fmt.Fprintf(&b, "[%d]", st.index)
		case strings.ContainsAny(st.key, ".[]") || st.key == "":
			fmt.Fprintf(&b, "[%s]", strconv.Quote(st.key))
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.key)
		}
	}
	return b.String()
}

// describe says what a decoded JSON value is, briefly: the keys of an
// object, the length of a list, a short excerpt of a string.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		if len(x) == 0 {
			return "an empty object"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		more := ""
		if len(keys) > 8 {
			more = fmt.Sprintf(" and %d more", len(keys)-8)
			keys = keys[:8]
		}
		return fmt.Sprintf("an object with keys %s%s", strings.Join(keys, ", "), more)
	case []any:
		if len(x) == 0 {
			return "an empty list"
		}
		return fmt.Sprintf("a list of %d", len(x))
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("the string %q…", httpcall.TruncateUTF8(x, 40))
		}
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return "the number " + string(x)
	case bool:
		return fmt.Sprintf("%v", x)
	}
	return fmt.Sprintf("a %T", v)
}
