package llm

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseGrade(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		grade  int
		reason string
	}{
		{"json", `{"grade": 2, "reason": "Partly answers."}`, 2, "Partly answers."},
		{"json grade 0", `{"grade": 0, "reason": "Unrelated."}`, 0, "Unrelated."},
		{"json relevance", `{"relevance": 3}`, 3, ""},
		{"json score", `{"score": 1, "explanation": "on topic, no answer"}`, 1, "on topic, no answer"},
		{"json numeric string", `{"grade": "3", "reasoning": "exact answer"}`, 3, "exact answer"},
		{"json string with spaces", `{"grade": " 1 "}`, 1, ""},
		{"json integral float", `{"grade": 2.0}`, 2, ""},
		{"json exponent", `{"grade": 2e0}`, 2, ""},
		{"json key case", `{"Grade": 1, "Reason": "r"}`, 1, "r"},
		{"grade before relevance", `{"score": 0, "grade": 3}`, 3, ""},
		{"fenced", "```json\n{\"grade\": 1, \"reason\": \"related\"}\n```", 1, "related"},
		{"text around", "Here is my assessment:\n{\"grade\": 2, \"reason\": \"some answer\"}\nHope this helps.", 2, "some answer"},
		{"last object counts", `First guess {"grade": 1}. On reflection: {"grade": 2, "reason": "better"}`, 2, "better"},
		{"object without grade skipped", `{"query": "x"} then {"grade": 3}`, 3, ""},
		{"nested", `{"result": {"grade": 2, "reason": "nested"}}`, 2, "nested"},
		{"in a list", `[{"grade": 1}]`, 1, ""},
		{"cut at max_tokens", `{"grade": 3, "reason": "The passage states the exact boil`, 3, ""},
		{"cut, string value", `{"relevance": "2", "reason": "The pass`, 2, ""},
		{"final score", "Intent: boiling point.\nM: 3, T: 3\n##final score: 3", 3, ""},
		{"final score spaced", "## Final Score: 1", 1, ""},
		{"final score last", "##final score: 1\nwait\n##final score: 2", 2, ""},
		{"grade line", "Grade: 2\nThe passage partly answers.", 2, ""},
		{"bold label", "**Relevance:** 1", 1, ""},
		{"relevance score line", "Relevance score = 0", 0, ""},
		{"lone digit", "3", 3, ""},
		{"lone digit spaced", "  2 \n", 2, ""},
		{"lone digit bold", "**2**", 2, ""},
		{"lone digit stop", "1.", 1, ""},
		{"lone digit quoted", `"0"`, 0, ""},
		{"think block", "<think>maybe {\"grade\": 0} no</think>\n{\"grade\": 3}", 3, ""},
		{"think without open", "reasoning… {\"grade\": 1}</think>{\"grade\": 2}", 2, ""},
		{"reason trimmed", `{"grade": 1, "reason": "  spaced  "}`, 1, "spaced"},
		{"reason not a string", `{"grade": 1, "reason": 5, "rationale": "ok"}`, 1, "ok"},
	}
	for _, tc := range tests {
		g, r, err := ParseGrade(tc.answer, 3)
		if err != nil || g != tc.grade || r != tc.reason {
			t.Errorf("%s: %q: got %d %q %v, want %d %q", tc.name, tc.answer, g, r, err, tc.grade, tc.reason)
		}
	}
}

func TestParseGradeNone(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   error
		msg    string
	}{
		{"empty", "", ErrNoGrade, "no grade in the answer"},
		{"prose", "The passage is somewhat relevant to the query.", ErrNoGrade, ""},
		{"digits in prose", "The passage mentions 3 facts and 2 dates.", ErrNoGrade, ""},
		{"json without grade", `{"relevant": true}`, ErrNoGrade, ""},
		{"unclosed think", "<think>the grade is 3", ErrNoGrade, ""},
		{"out of range", `{"grade": 4, "reason": "very relevant"}`, ErrBadGrade, "the grade 4 is outside 0..3"},
		{"negative", `{"grade": -1}`, ErrBadGrade, "outside 0..3"},
		{"fraction", `{"grade": 2.5}`, ErrBadGrade, "the grade 2.5 is not an integer from 0 to 3"},
		{"word", `{"grade": "high"}`, ErrBadGrade, `the grade "high" is not a number`},
		{"null", `{"grade": null}`, ErrBadGrade, "the grade is null"},
		{"object", `{"grade": {"value": 2}}`, ErrBadGrade, "the grade is an object"},
		{"bool", `{"grade": true}`, ErrBadGrade, "the grade is true"},
		{"huge", `{"grade": 1e400}`, ErrBadGrade, "not an integer"},
		{"final score out of range", "##final score: 7", ErrBadGrade, "outside 0..3"},
		{"lone out of range", "5", ErrBadGrade, "outside 0..3"},
		{"ten of ten", "Score: 10/10", ErrBadGrade, "outside 0..3"},
		// The last graded object decides: an invalid one is not skipped
		// for an earlier valid one.
		{"last invalid", `{"grade": 2} then {"grade": 9}`, ErrBadGrade, "9"},
	}
	for _, tc := range tests {
		g, r, err := ParseGrade(tc.answer, 3)
		if !errors.Is(err, tc.want) || g != 0 || r != "" || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %q: got %d %q %v, want %v saying %q", tc.name, tc.answer, g, r, err, tc.want, tc.msg)
		}
	}
}

func TestParseGradeScale(t *testing.T) {
	if g, _, err := ParseGrade(`{"grade": 4}`, 4); err != nil || g != 4 {
		t.Errorf("0..4: %d %v", g, err)
	}
	if _, _, err := ParseGrade(`{"grade": 2}`, 1); !errors.Is(err, ErrBadGrade) {
		t.Errorf("0..1 took 2: %v", err)
	}
	if _, _, err := ParseGrade("1", 0); !errors.Is(err, ErrBadGrade) {
		t.Errorf("empty scale: %v", err)
	}
	for g := range 11 {
		if got, _, err := ParseGrade(strconv.Itoa(g), 10); err != nil || got != g {
			t.Errorf("lone %d: %d %v", g, got, err)
		}
	}
}

func TestParseGradeReasonCut(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	_, r, err := ParseGrade(`{"grade": 1, "reason": "`+long+`"}`, 3)
	if err != nil || len(r) > MaxReasonBytes || len(r) < MaxReasonBytes-1 || !utf8.ValidString(r) {
		t.Errorf("reason of %d bytes, valid %v, %v", len(r), utf8.ValidString(r), err)
	}
}

// TestParseGradeLinear: many braces or objects do not make ParseGrade
// slow (it tries a bounded number of object starts).
func TestParseGradeLinear(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("{", 100000),
		strings.Repeat(`{"a":`, 20000),
		strings.Repeat(`{"x": 1} `, 20000) + `{"grade": 2}`,
	} {
		ParseGrade(s, 3) // must return; the fuzz target bounds time per input
	}
}

// FuzzParseGrade: never panics; a grade is on the scale, a reason is
// short valid UTF-8, and an error is one of the two sentinels.
func FuzzParseGrade(f *testing.F) {
	for _, s := range []string{
		`{"grade": 2, "reason": "x"}`, "```json\n{\"relevance\": \"3\"}\n```", "##final score: 1", "2", "**3**",
		"<think>a</think>{\"score\": 0}", `{"grade": 2.5}`, `{"grade": "high"}`, `{"grade": 1, "reason": "\u00e9\ud800"}`,
		`{"r": {"s": {"grade": 1}}}`, `{"grade": 3, "reason": "cut`, "Grade: 2\n", "", "{", `{"grade": 1e999}`,
	} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, answer string, maxGrade int) {
		maxGrade = maxGrade%12 - 1 // -12..10: empty scales too
		g, r, err := ParseGrade(answer, maxGrade)
		if err != nil {
			if !errors.Is(err, ErrNoGrade) && !errors.Is(err, ErrBadGrade) {
				t.Fatalf("error %v is neither sentinel", err)
			}
			if g != 0 || r != "" {
				t.Fatalf("error with grade %d reason %q", g, r)
			}
			return
		}
		if g < 0 || g > maxGrade {
			t.Fatalf("grade %d off the scale 0..%d", g, maxGrade)
		}
		if len(r) > MaxReasonBytes || !utf8.ValidString(r) {
			t.Fatalf("reason %q", r)
		}
	})
}

var benchAnswers = map[string]string{
	"json":        `{"grade": 2, "reason": "The passage gives the boiling point but not at altitude."}`,
	"fenced":      "Sure! Here is the grade:\n```json\n{\"grade\": 3, \"reason\": \"Exact answer.\"}\n```",
	"final score": "Intent: the boiling point of water.\nM: 3\nT: 3\n##final score: 3",
	"lone":        "2",
	"thinking":    "<think>" + strings.Repeat("The user asks about water. ", 40) + "</think>\n{\"grade\": 3, \"reason\": \"exact\"}",
}

func BenchmarkParseGrade(b *testing.B) {
	for name, answer := range benchAnswers {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ParseGrade(answer, 3); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
