package agreement

import (
	"errors"
	"math"
	"testing"
)

// matrix builds a Matrix from counts (rows: human grades from min).
func matrix(min int, counts [][]int64) Matrix {
	return Matrix{Scale: Scale{Min: min, Max: min + len(counts) - 1}, Counts: counts}
}

// near reports whether got equals want to 1e-12 (the tests' wants are
// exact fractions; got is a float64 computation).
func near(got, want float64) bool { return math.Abs(got-want) <= 1e-12 }

// TestKappaTextbook checks κ against published worked examples, computed
// again by hand from the tables (exact fractions in the comments).
func TestKappaTextbook(t *testing.T) {
	cases := []struct {
		name   string
		m      Matrix
		w      Weighting
		want   float64
		source string
	}{
		{
			// Wikipedia, "Cohen's kappa", worked example: 50 grant
			// proposals read by two readers, yes/no. p_o = 35/50 = 0.7,
			// p_e = (25·30 + 25·20)/50² = 0.5, κ = 0.2/0.5 = 0.4.
			name: "wikipedia 2x2", m: matrix(0, [][]int64{{20, 5}, {10, 15}}), w: Unweighted, want: 0.4,
		},
		{
			// Fleiss, Statistical Methods for Rates and Proportions (2nd
			// ed., 1981), ch. 13: diagnoses of 100 patients by two
			// psychiatrists (psychotic, neurotic, organic). p_o = .89,
			// p_e = .8·.8 + .1·.05 + .1·.15 = .66, κ = .23/.34 = 23/34
			// (Fleiss prints .68).
			name: "fleiss 3x3", m: matrix(0, [][]int64{{75, 1, 4}, {5, 4, 1}, {0, 0, 10}}), w: Unweighted, want: 23.0 / 34,
		},
		// Stata Base Reference Manual, [R] kappa, example 1 (Boyd et al.
		// 1982, also in Altman 1991): 85 xeromammograms rated by two
		// radiologists on 4 ordered grades (normal, benign, suspect,
		// cancer). Margins: rows 33 22 29 1, columns 28 38 16 3.
		{
			// Σ_{i≠j} n_ij = 31, Σ_{i≠j} r_i·c_j = 4998:
			// κ = 1 − 85·31/4998 = 139/294 (Stata: 63.53% observed,
			// 30.82% expected, kappa 0.4728).
			name: "stata unweighted", m: stataXero(), w: Unweighted, want: 139.0 / 294,
		},
		{
			// Σ |i−j|·n_ij = 34, Σ |i−j|·r_i·c_j = 6696:
			// κ = 1 − 85·34/6696 = 1903/3348 (Stata wgt(w): 86.67%,
			// 69.11%, kappa 0.5684).
			name: "stata linear", m: stataXero(), w: Linear, want: 1903.0 / 3348,
		},
		{
			// Σ (i−j)²·n_ij = 40, Σ (i−j)²·r_i·c_j = 10346:
			// κ = 1 − 85·40/10346 = 3473/5173 (Stata wgt(w2): 94.77%
			// observed, 84.09% expected).
			name: "stata quadratic", m: stataXero(), w: Quadratic, want: 3473.0 / 5173,
		},
	}
	for _, c := range cases {
		got, err := c.m.Kappa(c.w)
		if err != nil || !near(got, c.want) {
			t.Errorf("%s: κ = %v, %v; want %v", c.name, got, err, c.want)
		}
		// κ is symmetric in the two raters.
		tr := transpose(c.m)
		if got2, err := tr.Kappa(c.w); err != nil || !near(got2, got) {
			t.Errorf("%s: transposed κ = %v, %v; want %v", c.name, got2, err, got)
		}
	}
}

func stataXero() Matrix {
	return matrix(1, [][]int64{
		{21, 12, 0, 0},
		{4, 17, 1, 0},
		{3, 9, 15, 2},
		{0, 0, 0, 1},
	})
}

func transpose(m Matrix) Matrix {
	t := newMatrix(m.Scale)
	for i, row := range m.Counts {
		for j, c := range row {
			t.Counts[j][i] = c
		}
	}
	return t
}

// TestBinarize folds the Stata table at two levels and checks the 2×2
// tables and their κ, computed by hand.
func TestBinarize(t *testing.T) {
	cases := []struct {
		level int
		want  [][]int64
		kappa float64
	}{
		// benign or worse: p_o = 66/85, p_e = (33·28 + 52·57)/85²,
		// κ = (66·85 − 3888)/(85² − 3888) = 1722/3337.
		{2, [][]int64{{21, 12}, {7, 45}}, 1722.0 / 3337},
		// suspect or worse: p_o = 72/85, p_e = (55·66 + 30·19)/85²,
		// κ = (72·85 − 4200)/(85² − 4200) = 384/605.
		{3, [][]int64{{54, 1}, {12, 18}}, 384.0 / 605},
	}
	for _, c := range cases {
		b, err := stataXero().Binarize(c.level)
		if err != nil {
			t.Fatal(err)
		}
		if b.Scale != (Scale{0, 1}) || !equalCounts(b.Counts, c.want) {
			t.Errorf("level %d: %v %v; want 0–1 %v", c.level, b.Scale, b.Counts, c.want)
		}
		for _, w := range []Weighting{Unweighted, Linear, Quadratic} {
			// On two grades every weighting is the same κ.
			if got, err := b.Kappa(w); err != nil || !near(got, c.kappa) {
				t.Errorf("level %d, %v: κ = %v, %v; want %v", c.level, w, got, err, c.kappa)
			}
		}
	}
	for _, level := range []int{0, 1, 5} {
		if _, err := stataXero().Binarize(level); err == nil {
			t.Errorf("level %d on a 1–4 scale: no error", level)
		}
	}
}

func equalCounts(a, b [][]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// TestNewMatrix counts pairs and refuses grades off the scale.
func TestNewMatrix(t *testing.T) {
	pairs := []Pair{{0, 0}, {3, 2}, {3, 2}, {1, 0}, {2, 3}}
	m, err := NewMatrix(DefaultScale, pairs)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int64{{1, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 2, 0}}
	if !equalCounts(m.Counts, want) || m.N() != 5 {
		t.Errorf("counts %v, n %d; want %v, 5", m.Counts, m.N(), want)
	}
	if o, err := m.Observed(); err != nil || o != 0.2 {
		t.Errorf("observed %v, %v; want 0.2", o, err)
	}
	for _, bad := range []Pair{{4, 0}, {0, -1}} {
		if _, err := NewMatrix(DefaultScale, append(pairs, bad)); err == nil {
			t.Errorf("pair %v off the scale: no error", bad)
		}
	}
	for _, s := range []Scale{{0, 0}, {3, 1}, {0, 5000}} {
		if _, err := NewMatrix(s, nil); err == nil {
			t.Errorf("scale %v: no error", s)
		}
	}
}

// TestKappaEdges checks the edge cases: no data, perfect agreement, one
// grade, complete disagreement.
func TestKappaEdges(t *testing.T) {
	all := []Weighting{Unweighted, Linear, Quadratic}
	undefined := func(name string, m Matrix, sentinel error) {
		t.Helper()
		for _, w := range all {
			got, err := m.Kappa(w)
			if !math.IsNaN(got) || !errors.Is(err, sentinel) {
				t.Errorf("%s, %v: %v, %v; want NaN, %v", name, w, got, err, sentinel)
			}
		}
	}
	empty, _ := NewMatrix(DefaultScale, nil)
	undefined("no pairs", empty, ErrNoData)
	if o, err := empty.Observed(); !math.IsNaN(o) || !errors.Is(err, ErrNoData) {
		t.Errorf("observed without pairs: %v, %v", o, err)
	}
	// Both raters say 2 every time: perfect agreement, but chance
	// agreement is 1 too.
	undefined("one grade, both", matrix(0, [][]int64{{0, 0, 0}, {0, 0, 0}, {0, 0, 9}}), ErrUndefined)

	defined := func(name string, m Matrix, want float64) {
		t.Helper()
		for _, w := range all {
			if got, err := m.Kappa(w); err != nil || !near(got, want) {
				t.Errorf("%s, %v: κ = %v, %v; want %v", name, w, got, err, want)
			}
		}
	}
	defined("perfect agreement", matrix(0, [][]int64{{3, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 7}}), 1)
	// The human says 0 every time, the LLM does not: p_o = p_e = c_0/N.
	defined("one grade, human", matrix(0, [][]int64{{4, 3, 2, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}), 0)
	// p_o = 0, p_e = 1/2.
	defined("complete disagreement", matrix(0, [][]int64{{0, 5}, {5, 0}}), -1)
}
