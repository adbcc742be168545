package secret

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Redacted is what a secret is replaced by.
const Redacted = "[redacted]"

// Expander resolves the environment references of one file and remembers
// the values that came from the environment.
type Expander struct {
	env     func(string) (string, bool)
	nonce   string
	pairs   []string // placeholder, value, placeholder, value, …
	refs    []string // the reference as written, per placeholder
	secrets []string // values that came from the environment, or added
}

// NewExpander returns an expander reading variables with env.
func NewExpander(env func(string) (string, bool)) *Expander {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return &Expander{env: env, nonce: hex.EncodeToString(b[:])}
}

// RefError is a problem with one reference: malformed, or a variable that
// is not set. Offset is its byte offset in the value; Msg never holds a
// secret.
type RefError struct {
	Offset int
	Msg    string
}

func (e *RefError) Error() string { return e.Msg }

// Placeholders returns s with each reference replaced by a placeholder
// and $$ by $. The fill replacer of Replacers turns placeholders into
// values.
func (e *Expander) Placeholders(s string) (string, *RefError) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) || (s[i+1] != '$' && s[i+1] != '{') {
			b.WriteByte(c)
			i++
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i += 2
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", &RefError{i, "unterminated ${: want ${NAME} or ${NAME:-default} (write $$ for a dollar sign)"}
		}
		ref := s[i : i+end+1]
		name, def, hasDef := strings.Cut(ref[2:len(ref)-1], ":-")
		if !validVarName(name) {
			return "", &RefError{i, fmt.Sprintf("%s: want ${NAME} or ${NAME:-default}, NAME of letters, digits and _ (write $$ for a dollar sign)", strconv.Quote(ref))}
		}
		v, ok := e.env(name)
		secret := ok && v != ""
		switch {
		case secret:
		case hasDef:
			v = def
		default:
			return "", &RefError{i, fmt.Sprintf("environment variable %s is not set or empty (write ${%s:-default} for a default, ${%s:-} for an empty value)", name, name, name)}
		}
		ph := fmt.Sprintf("EVALGATE%sV%dV", e.nonce, len(e.refs))
		e.pairs = append(e.pairs, ph, v)
		e.refs = append(e.refs, ref)
		if secret {
			e.Add(v)
		}
		b.WriteString(ph)
		i += end + 1
	}
	return b.String(), nil
}

// Expand returns s with each reference replaced by its value and $$ by $:
// for values that are not templates.
func (e *Expander) Expand(s string) (string, *RefError) {
	ph, err := e.Placeholders(s)
	if err != nil || ph == s {
		return ph, err
	}
	fill, _ := e.Replacers()
	return fill.Replace(ph), nil
}

// Add records v as a secret although it did not come from the
// environment (an API key written in the file). Empty values are ignored.
func (e *Expander) Add(v string) {
	if v != "" && !slices.Contains(e.secrets, v) {
		e.secrets = append(e.secrets, v)
	}
}

// Secrets returns the secrets recorded so far.
func (e *Expander) Secrets() []string { return slices.Clone(e.secrets) }

// Redactor returns a redactor of the secrets recorded so far.
func (e *Expander) Redactor() *Redactor { return NewRedactor(e.secrets) }

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// Replacers returns fill, which replaces placeholders by values, and
// unfill, which replaces them by the references as written (for error
// messages).
func (e *Expander) Replacers() (fill, unfill *strings.Replacer) {
	back := make([]string, 0, len(e.pairs))
	for i := 0; i < len(e.pairs); i += 2 {
		back = append(back, e.pairs[i], e.refs[i/2])
	}
	return strings.NewReplacer(e.pairs...), strings.NewReplacer(back...)
}

// Redactor replaces secrets by "[redacted]". The zero value and nil
// redact nothing. It is safe for concurrent use.
type Redactor struct {
	r    *strings.Replacer
	span int
}

// NewRedactor returns a redactor of secrets: each, and the forms it takes
// once escaped into a URL or a JSON string. Longer forms come first, so a
// secret that contains another is replaced whole.
func NewRedactor(secrets []string) *Redactor {
	var forms []string
	for _, s := range secrets {
		for _, f := range []string{s, jsonInner(s, true), jsonInner(s, false), url.QueryEscape(s), url.PathEscape(s)} {
			if f != "" && !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	rd := &Redactor{}
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
		rd.span = max(rd.span, len(f))
	}
	rd.r = strings.NewReplacer(pairs...)
	return rd
}

// Replace returns s with every secret replaced by "[redacted]".
func (r *Redactor) Replace(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Span is the length of the longest form replaced: a text cut n bytes
// after its start holds every secret that starts before n whole if it
// was cut at n+Span.
func (r *Redactor) Span() int {
	if r == nil {
		return 0
	}
	return r.span
}

// jsonInner returns s encoded as a JSON string, without the quotes.
func jsonInner(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}

// RedactError returns an error whose message is err's with the secrets
// of r redacted, and which unwraps to the first of kinds that err
// matches (errors.Is), never to err itself, which may hold a secret. nil
// stays nil.
func RedactError(err error, r *Redactor, kinds ...error) error {
	if err == nil {
		return nil
	}
	var kind error
	for _, k := range kinds {
		if errors.Is(err, k) {
			kind = k
			break
		}
	}
	return &redactedError{msg: r.Replace(err.Error()), kind: kind}
}

// redactedError carries a redacted message and unwraps to a kind only.
type redactedError struct {
	msg  string
	kind error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.kind }
