package httpcall

import (
	"strings"
	"unicode/utf8"

	"github.com/evalgate/evalgate/internal/secret"
)

// TruncateUTF8 returns at most n bytes of s, cut at a rune boundary.
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Excerpt returns the first n bytes of an answer with its secrets
// redacted. It redacts before it cuts, so that no part of a secret
// survives the cut.
func Excerpt(body []byte, n int, r *secret.Redactor) string {
	window := min(len(body), n+r.Span())
	return TruncateUTF8(r.Replace(string(body[:window])), n)
}

// ValidHeaderName reports whether s is an HTTP token (RFC 9110 §5.6.2).
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
