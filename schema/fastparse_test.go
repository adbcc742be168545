package schema

import (
	"math"
	"strconv"
	"testing"
)

func sameFields(t *testing.T, l []byte) {
	t.Helper()
	a, na := splitFields(l, make([]field, 0, 8))
	b, nb := splitFieldsFast(l, make([]field, 0, 8))
	if na != nb || len(a) != len(b) {
		t.Fatalf("%q: %d/%d fields vs %d/%d", l, na, len(a), nb, len(b))
	}
	for i := range a {
		if string(a[i].b) != string(b[i].b) || a[i].col != b[i].col {
			t.Fatalf("%q: field %d = %q@%d vs %q@%d", l, i, a[i].b, a[i].col, b[i].b, b[i].col)
		}
	}
	qid, doc, grade, col, n := qrelsFields(l, make([]field, 0, 4))
	if n != na {
		t.Fatalf("%q: qrelsFields counts %d fields, splitFields %d", l, n, na)
	}
	if n == 4 && (string(qid) != string(a[0].b) || string(doc) != string(a[2].b) || string(grade) != string(a[3].b) || col != a[3].col) {
		t.Fatalf("%q: qrelsFields %q %q %q@%d vs %q %q %q@%d", l, qid, doc, grade, col, a[0].b, a[2].b, a[3].b, a[3].col)
	}
}

func TestSplitFieldsFast(t *testing.T) {
	for _, l := range []string{
		"", " ", "a", "301 Q0 FR940202-2-00150 104 2.129133 STANDARD",
		"301\tQ0\tFR940202-2-00150\t104\t  2.129133\tSTANDARD",
		"  lead  and   trail  ", "q\x09d", "abcdefghijklmnopqrstuvwxyz 0123456789abcdefghij\tx",
		"msmarco_v2.1_doc_50_2286987788#13_3087841662 x",
		"q0000001 Q0 d01234567 1 99.1234 synth", "\t\t\t", " \t a \t ",
		"0123456789012345678901234567890123456789012345678901234567890 b",
		"012345678901234567890123456789012345678901234567890123456789012",
		"0123456789012345678901234567890123456789012345678901234567890123",
		"01234567890123456789012345678901234567890123456789012345678901 ",
		"\x89\x29 \xa0\x20\x19\x09\x08\x0a",
		"q1 0 d1 1", " q1\t0  d1 -2 ", "q 0 d", "q 0 d 1 x",
		"q0000001 0 d01234567890123456789012345678901234567890123456789 12",
		"q0000001 0 d012345678901234567890123456789012345678901234567890 12",
	} {
		sameFields(t, []byte(l))
	}
}

func FuzzSplitFieldsFast(f *testing.F) {
	f.Add([]byte("301 Q0 doc 1 2.5 tag"))
	f.Add([]byte("a\tb  c"))
	f.Fuzz(func(t *testing.T, l []byte) { sameFields(t, l) })
}

func sameScore(t *testing.T, s string) {
	t.Helper()
	a, errA := parseScore([]byte(s))
	b, errB := parseScoreFast([]byte(s))
	if (errA == nil) != (errB == nil) {
		t.Fatalf("%q: errors %v vs %v", s, errA, errB)
	}
	if errA == nil && math.Float64bits(a) != math.Float64bits(b) {
		t.Fatalf("%q: %v (%#x) vs %v (%#x)", s, a, math.Float64bits(a), b, math.Float64bits(b))
	}
}

func TestParseScoreFast(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "+1", "2.129133", "  2.1", "0.6898301657029192", "1e5", "nan", "inf",
		"-0", "-0.0", ".5", "5.", ".", "-", "+", "", "123456789012345", "1234567890123456", "0.1234567890123456789012",
		"9007199254740993", "1.7976931348623157e308", "1e309", "0x1p-2", "1_000", "12a", "99.1234"} {
		sameScore(t, s)
	}
	for i := 0; i < 100000; i++ {
		sameScore(t, strconv.FormatFloat(float64(i)*0.0137-300, 'f', i%12, 64))
	}
}

func FuzzParseScoreFast(f *testing.F) {
	f.Add("2.129133")
	f.Add("-0.5")
	f.Fuzz(func(t *testing.T, s string) { sameScore(t, s) })
}

func TestParseInt32Fast(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "+7", "104", "999999999", "2147483647", "-2147483648", "2147483648", "", "-", "1.0", "x", "12a"} {
		a, errA := parseInt32([]byte(s))
		b, errB := parseInt32Fast([]byte(s))
		if (errA == nil) != (errB == nil) || a != b {
			t.Fatalf("%q: %d,%v vs %d,%v", s, a, errA, b, errB)
		}
	}
}
