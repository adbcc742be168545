package secret

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestExpand(t *testing.T) {
	env := envOf(map[string]string{"TOKEN": "t0k", "EMPTY": "", "HOST": "api.example.com"})
	tests := []struct {
		in, want string
		secrets  []string
	}{
		{"plain", "plain", nil},
		{"Bearer ${TOKEN}", "Bearer t0k", []string{"t0k"}},
		{"https://${HOST}/v1", "https://api.example.com/v1", []string{"api.example.com"}},
		{"${UNSET:-http://localhost:8000/v1}", "http://localhost:8000/v1", nil},
		{"${EMPTY:-fallback}", "fallback", nil},
		{"${UNSET:-}", "", nil},
		{"$$5 and $HOME and $", "$5 and $HOME and $", nil},
		{"${TOKEN}${TOKEN}", "t0kt0k", []string{"t0k"}},
		{"{{.Query}}", "{{.Query}}", nil},
	}
	for _, tc := range tests {
		e := NewExpander(env)
		got, err := e.Expand(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got != tc.want || strings.Join(e.Secrets(), ",") != strings.Join(tc.secrets, ",") {
			t.Errorf("%q: %q with secrets %q, want %q with %q", tc.in, got, e.Secrets(), tc.want, tc.secrets)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	env := envOf(map[string]string{"EMPTY": ""})
	tests := []struct {
		in     string
		offset int
		want   string
	}{
		{"a ${UNSET}", 2, "environment variable UNSET is not set or empty (write ${UNSET:-default} for a default, ${UNSET:-} for an empty value)"},
		{"${EMPTY}", 0, "environment variable EMPTY is not set or empty"},
		{"x ${OPEN", 2, "unterminated ${"},
		{"${1A}", 0, `"${1A}": want ${NAME} or ${NAME:-default}`},
		{"${}", 0, `"${}": want`},
		{"${A B}", 0, "NAME of letters, digits and _"},
	}
	for _, tc := range tests {
		_, err := NewExpander(env).Expand(tc.in)
		if err == nil || err.Offset != tc.offset || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want offset %d saying %q", tc.in, err, tc.offset, tc.want)
		}
	}
}

// TestPlaceholders: a value is never template text, and placeholders are
// filled or unfilled to the reference as written.
func TestPlaceholders(t *testing.T) {
	e := NewExpander(envOf(map[string]string{"A": "{{.Query}}"}))
	ph, err := e.Placeholders("x ${A} ${B:-d} $$")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ph, "{{") || strings.Contains(ph, "$") == false {
		t.Fatalf("placeholders %q", ph)
	}
	fill, unfill := e.Replacers()
	if got := fill.Replace(ph); got != "x {{.Query}} d $" {
		t.Errorf("fill: %q", got)
	}
	if got := unfill.Replace(ph); got != "x ${A} ${B:-d} $" {
		t.Errorf("unfill: %q", got)
	}
	// Another file's expander uses another nonce: its placeholders are
	// not this one's.
	other := NewExpander(envOf(nil))
	ph2, _ := other.Placeholders("${B:-d}")
	if fill.Replace(ph2) != ph2 {
		t.Errorf("a placeholder of another expander was filled: %q", ph2)
	}
}

func TestRedactor(t *testing.T) {
	const tok = `s3"cr/t+1`
	r := NewRedactor([]string{tok, "s3"})
	tests := map[string]string{
		"Bearer " + tok:           "Bearer [redacted]",
		`{"auth":"s3\"cr/t+1"}`:   `{"auth":"[redacted]"}`,
		"?key=s3%22cr%2Ft%2B1":    "?key=[redacted]",
		"/p/s3%22cr%2Ft+1":        "/p/[redacted]",
		"only s3 here":            "only [redacted] here",
		"nothing secret":          "nothing secret",
		`{"k":"s3\u0022cr/t+1"}`:  `{"k":"[redacted]\u0022cr/t+1"}`, // \u0022 is not a form json.Encoder writes: only "s3" is caught
		`{"k":"s3\"cr\/t+1"}`:     `{"k":"[redacted]\"cr\/t+1"}`,
		tok + tok:                 "[redacted][redacted]",
		"s3\"cr/t+1 and s3\"cr/t": "[redacted] and [redacted]\"cr/t",
	}
	for in, want := range tests {
		if got := r.Replace(in); got != want {
			t.Errorf("Replace(%q) = %q, want %q", in, got, want)
		}
	}
	if r.Span() < len(`s3%22cr%2Ft%2B1`) {
		t.Errorf("span %d", r.Span())
	}
	var none *Redactor
	if none.Replace("x") != "x" || none.Span() != 0 || (&Redactor{}).Replace("x") != "x" {
		t.Error("a nil or zero Redactor changed its input")
	}
}

func TestAdd(t *testing.T) {
	e := NewExpander(envOf(nil))
	e.Add("sk-literal")
	e.Add("")
	e.Add("sk-literal")
	if got := e.Secrets(); len(got) != 1 || got[0] != "sk-literal" {
		t.Errorf("secrets %q", got)
	}
	if got := e.Redactor().Replace("key sk-literal"); got != "key [redacted]" {
		t.Errorf("redacted %q", got)
	}
}

func TestRedactError(t *testing.T) {
	kind := errors.New("kind")
	r := NewRedactor([]string{"tok"})
	err := RedactError(fmt.Errorf("get http://x/?k=tok: %w", kind), r, context.Canceled, kind)
	if err.Error() != "get http://x/?k=[redacted]: kind" || !errors.Is(err, kind) || errors.Is(err, context.Canceled) {
		t.Errorf("%v", err)
	}
	inner := errors.New("holds tok")
	if err := RedactError(fmt.Errorf("w: %w", inner), r); errors.Is(err, inner) || errors.Unwrap(err) != nil {
		t.Errorf("unwraps to the error holding the secret: %v", err)
	}
	if RedactError(nil, r) != nil {
		t.Error("nil is not nil")
	}
}
