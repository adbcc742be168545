package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/evalgate/evalgate/internal/httpcall"
)

// MaxReasonBytes bounds the reason kept with a grade; a longer one is cut
// at a character boundary.
const MaxReasonBytes = 300

// Sentinels of ParseGrade. Both mean the answer holds no grade.
var (
	// ErrNoGrade: the answer holds nothing ParseGrade reads as a grade.
	ErrNoGrade = errors.New("no grade in the answer")
	// ErrBadGrade: the answer gives a grade that is not an integer on the
	// scale (out of range, fractional, not a number).
	ErrBadGrade = errors.New("grade not on the scale")
)

// gradeKeys are the keys of a JSON object that hold the grade, by
// priority; reasonKeys those that hold the reason.
var (
	gradeKeys  = []string{"grade", "relevance", "score"}
	reasonKeys = []string{"reason", "reasoning", "explanation", "rationale", "justification"}
)

// Limits that keep ParseGrade linear on any input.
const (
	maxObjectStarts = 64 // '{' positions tried as the start of a JSON object
	maxObjectDepth  = 4  // nesting searched for a grade key
)

var (
	// keyValueRE finds "grade": 2 (or relevance, score) in a JSON object
	// that does not decode, such as one cut at max_tokens.
	keyValueRE = regexp.MustCompile(`(?i)"(?:grade|relevance|score)"\s*:\s*"?(-?[0-9]+(?:\.[0-9]+)?)`)
	// labelRE finds a line such as "##final score: 2", "Grade: 3" or
	// "**Relevance:** 1".
	labelRE = regexp.MustCompile(`(?im)^[ \t#>*_-]*(?:final[ \t]+score|final[ \t]+grade|relevance(?:[ \t]+(?:score|grade))?|grade|score)[ \t]*[*_]*[ \t]*[:=][ \t]*[*_]*[ \t]*(-?[0-9]+(?:\.[0-9]+)?)`)
	// loneRE is an answer that is a number alone, perhaps quoted, bold or
	// followed by a full stop.
	loneRE = regexp.MustCompile(`^[*_"'` + "`" + `]*(-?[0-9]+(?:\.[0-9]+)?)[*_"'` + "`" + `]*\.?$`)
)

// ParseGrade reads a grade on the scale 0..maxGrade from a model's
// answer, and the reason when the answer gives one. It is a pure
// function. It reads, in this order of precedence:
//
//  1. a JSON object with a key grade, relevance or score (the first of
//     these it holds), anywhere in the answer: alone, inside a ```json
//     fence, among text, or nested up to 4 levels in another object; the
//     last such object counts. Its value is an integer or a string
//     holding one ("2", 2.0 also count). A reason is read from its key
//     reason, reasoning, explanation, rationale or justification. An
//     object cut short (at max_tokens) still gives its "grade": N.
//  2. a line "##final score: N" (UMBRELA's format), or one starting with
//     grade, relevance, score or final grade and a colon; the last counts.
//  3. a number alone ("2", "**2**", "2.").
//
// Text in <think>…</think> (reasoning models) is skipped. A grade that is
// not an integer in 0..maxGrade is ErrBadGrade; an answer with none of
// the three is ErrNoGrade; in both cases no grade is returned, never 0.
// The reason is trimmed and cut to MaxReasonBytes.
func ParseGrade(answer string, maxGrade int) (grade int, reason string, err error) {
	if maxGrade < 1 {
		return 0, "", fmt.Errorf("%w: the scale 0..%d is empty", ErrBadGrade, maxGrade)
	}
	s := stripThinking(answer)
	if v, r, ok := jsonGrade(s); ok {
		g, err := gradeValue(v, maxGrade)
		if err != nil {
			return 0, "", err
		}
		return g, cutReason(r), nil
	}
	if m := keyValueRE.FindAllStringSubmatch(s, -1); m != nil {
		last := m[len(m)-1]
		g, err := gradeText(last[1], maxGrade)
		return g, "", err
	}
	if m := labelRE.FindAllStringSubmatch(s, -1); m != nil {
		g, err := gradeText(m[len(m)-1][1], maxGrade)
		return g, "", err
	}
	if m := loneRE.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		g, err := gradeText(m[1], maxGrade)
		return g, "", err
	}
	return 0, "", ErrNoGrade
}

// stripThinking drops the reasoning of a model that writes it in the
// answer: everything up to the last </think>, or from an unclosed <think>
// on.
func stripThinking(s string) string {
	if i := strings.LastIndex(s, "</think>"); i >= 0 {
		return s[i+len("</think>"):]
	}
	if i := strings.Index(s, "<think>"); i >= 0 {
		return s[:i]
	}
	return s
}

// jsonGrade finds the last JSON object in s that holds a grade key and
// returns that key's value and the reason.
func jsonGrade(s string) (value any, reason string, ok bool) {
	tries := 0
	for i := 0; i < len(s) && tries < maxObjectStarts; {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			break
		}
		i += j
		tries++
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			i++
			continue
		}
		if v, r, found := findGrade(obj, 0); found {
			value, reason, ok = v, r, true
		}
		i += int(dec.InputOffset())
	}
	return value, reason, ok
}

// findGrade searches obj, then the objects nested in it (breadth first,
// up to maxObjectDepth), for a grade key.
func findGrade(obj map[string]any, depth int) (any, string, bool) {
	for _, k := range gradeKeys {
		if v, ok := lookupFold(obj, k); ok {
			var reason string
			for _, rk := range reasonKeys {
				if r, ok := lookupFold(obj, rk); ok {
					if s, ok := r.(string); ok {
						reason = s
						break
					}
				}
			}
			return v, reason, true
		}
	}
	if depth >= maxObjectDepth {
		return nil, "", false
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	// Sorted: the same answer always gives the same grade.
	slices.Sort(keys)
	for _, k := range keys {
		if inner, ok := obj[k].(map[string]any); ok {
			if v, r, found := findGrade(inner, depth+1); found {
				return v, r, true
			}
		}
	}
	return nil, "", false
}

// lookupFold finds key in obj, first exactly, then ignoring case.
func lookupFold(obj map[string]any, key string) (any, bool) {
	if v, ok := obj[key]; ok {
		return v, true
	}
	for k, v := range obj {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// gradeValue turns a JSON value into a grade.
func gradeValue(v any, maxGrade int) (int, error) {
	switch x := v.(type) {
	case json.Number:
		return gradeText(string(x), maxGrade)
	case string:
		return gradeText(strings.TrimSpace(x), maxGrade)
	}
	return 0, fmt.Errorf("%w: the grade is %s, want an integer from 0 to %d", ErrBadGrade, describe(v), maxGrade)
}

// gradeText turns a number's text into a grade: an integer (2, 2.0,
// 2e0) in 0..maxGrade.
func gradeText(s string, maxGrade int) (int, error) {
	x, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%w: the grade %q is not a number, want an integer from 0 to %d", ErrBadGrade, clip(s), maxGrade)
	case err != nil || x != math.Trunc(x):
		return 0, fmt.Errorf("%w: the grade %s is not an integer from 0 to %d", ErrBadGrade, clip(s), maxGrade)
	case x < 0 || x > float64(maxGrade):
		return 0, fmt.Errorf("%w: the grade %s is outside 0..%d", ErrBadGrade, clip(s), maxGrade)
	}
	return int(x), nil
}

func clip(s string) string {
	if len(s) > 20 {
		return httpcall.TruncateUTF8(s, 20) + "…"
	}
	return s
}

// describe names the kind of a JSON value in messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("a %T", v)
}

func cutReason(r string) string {
	return httpcall.TruncateUTF8(strings.TrimSpace(r), MaxReasonBytes)
}
