package agreement

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors; the functions wrap them with details.
var (
	// ErrNoData is returned when there is nothing to measure.
	ErrNoData = errors.New("agreement: no data")
	// ErrUndefined is returned when a statistic is 0/0 on the data.
	ErrUndefined = errors.New("agreement: undefined")
)

// Scale is a range of integer grades, Min to Max inclusive.
type Scale struct{ Min, Max int }

// DefaultScale is the 0–3 scale of the default judging prompt (TREC Deep
// Learning's and UMBRELA's).
var DefaultScale = Scale{Min: 0, Max: 3}

// maxScaleLen bounds the number of grades of a scale, and so the size of a
// matrix.
const maxScaleLen = 1000

// Len is the number of grades of the scale.
func (s Scale) Len() int { return s.Max - s.Min + 1 }

// Validate checks that the scale has at least two grades (and not an
// absurd number).
func (s Scale) Validate() error {
	if s.Max <= s.Min {
		return fmt.Errorf("scale %d–%d: want at least two grades", s.Min, s.Max)
	}
	if s.Max-s.Min >= maxScaleLen {
		return fmt.Errorf("scale %d–%d: want at most %d grades", s.Min, s.Max, maxScaleLen)
	}
	return nil
}

// Pair is one item graded twice: by a human and by the LLM.
type Pair struct{ Human, LLM int }

// Matrix is a confusion matrix: Counts[h][l] is the number of items the
// human graded Scale.Min+h and the LLM graded Scale.Min+l.
type Matrix struct {
	Scale  Scale
	Counts [][]int64
}

// NewMatrix counts the pairs on the scale. A grade outside the scale is an
// error naming the pair.
func NewMatrix(s Scale, pairs []Pair) (Matrix, error) {
	if err := s.Validate(); err != nil {
		return Matrix{}, fmt.Errorf("count confusion matrix: %w", err)
	}
	m := newMatrix(s)
	for i, p := range pairs {
		if p.Human < s.Min || p.Human > s.Max || p.LLM < s.Min || p.LLM > s.Max {
			return Matrix{}, fmt.Errorf("count confusion matrix: pair %d: grades (human %d, LLM %d) outside the scale %d–%d", i, p.Human, p.LLM, s.Min, s.Max)
		}
		m.Counts[p.Human-s.Min][p.LLM-s.Min]++
	}
	return m, nil
}

func newMatrix(s Scale) Matrix {
	m := Matrix{Scale: s, Counts: make([][]int64, s.Len())}
	for i := range m.Counts {
		m.Counts[i] = make([]int64, s.Len())
	}
	return m
}

// N is the number of pairs counted.
func (m Matrix) N() int64 {
	var n int64
	for _, row := range m.Counts {
		for _, c := range row {
			n += c
		}
	}
	return n
}

// Observed is the proportion of pairs on which human and LLM gave the same
// grade; NaN and ErrNoData without pairs.
func (m Matrix) Observed() (float64, error) {
	n := m.N()
	if n == 0 {
		return math.NaN(), fmt.Errorf("observed agreement: %w: no pairs", ErrNoData)
	}
	var same int64
	for i := range m.Counts {
		same += m.Counts[i][i]
	}
	return float64(same) / float64(n), nil
}

// Binarize folds the matrix at a relevance level: grades ≥ level become 1
// (relevant), the others 0, on Scale{0, 1}. The level must split the
// scale: Min < level ≤ Max.
func (m Matrix) Binarize(level int) (Matrix, error) {
	if level <= m.Scale.Min || level > m.Scale.Max {
		return Matrix{}, fmt.Errorf("binarize at %d: want a level in %d–%d, that leaves grades on both sides", level, m.Scale.Min+1, m.Scale.Max)
	}
	b := newMatrix(Scale{Min: 0, Max: 1})
	rel := func(i int) int {
		if m.Scale.Min+i >= level {
			return 1
		}
		return 0
	}
	for i, row := range m.Counts {
		for j, c := range row {
			b.Counts[rel(i)][rel(j)] += c
		}
	}
	return b, nil
}

// Weighting says how much a disagreement of d grades counts, on a scale of
// k grades: Unweighted 1 for every d > 0, Linear d/(k−1), Quadratic
// d²/(k−1)².
type Weighting uint8

// The weightings.
const (
	Unweighted Weighting = iota
	Linear
	Quadratic
)

func (w Weighting) String() string {
	switch w {
	case Linear:
		return "linear"
	case Quadratic:
		return "quadratic"
	}
	return "unweighted"
}

// Kappa returns Cohen's κ of the matrix with the weighting w (Cohen 1960;
// weighted, Cohen 1968):
//
//	κ = 1 − Σ w_ij·o_ij / Σ w_ij·e_ij
//
// with w_ij the disagreement weight of grades i and j, o_ij the observed
// proportions and e_ij = r_i·c_j the proportions expected by chance from
// the margins (r_i human, c_j LLM). For unweighted κ this is the familiar
// (p_o − p_e)/(1 − p_e). NaN and ErrNoData without pairs; NaN and
// ErrUndefined when the chance disagreement is 0 (both raters put every
// pair in one same grade).
func (m Matrix) Kappa(w Weighting) (float64, error) {
	n := m.N()
	if n == 0 {
		return math.NaN(), fmt.Errorf("%s kappa: %w: no pairs", w, ErrNoData)
	}
	k := len(m.Counts)
	rows := make([]int64, k)
	cols := make([]int64, k)
	for i, row := range m.Counts {
		for j, c := range row {
			rows[i] += c
			cols[j] += c
		}
	}
	// With the weights' common factor 1/(k−1) or 1/(k−1)² dropped (it
	// cancels), d is an integer and the sums are exact up to 2^53:
	//	κ = 1 − N·Σ d_ij·n_ij / Σ d_ij·r_i·c_j   (counts, not proportions)
	var observed, expected float64
	for i := range k {
		for j := range k {
			d := float64(disagreement(w, i, j))
			if d == 0 {
				continue
			}
			observed += d * float64(m.Counts[i][j])
			expected += d * float64(rows[i]) * float64(cols[j])
		}
	}
	if expected == 0 {
		return math.NaN(), fmt.Errorf("%s kappa: %w: every pair has one same grade from both raters, so chance agreement is 1", w, ErrUndefined)
	}
	return 1 - float64(n)*observed/expected, nil
}

// disagreement is the weight of grades i and j apart, without the scale's
// common factor.
func disagreement(w Weighting, i, j int) int {
	d := i - j
	if d < 0 {
		d = -d
	}
	switch w {
	case Linear:
		return d
	case Quadratic:
		return d * d
	}
	if d > 0 {
		return 1
	}
	return 0
}
