// Package agreement measures how far LLM relevance labels agree with human
// ones, for `evalgate judge --rejudge N`: pure functions on integer grades
// and on system scores, no I/O.
//
// # What is measured
//
// Per label, on pairs (query, document) graded by both a human and the
// LLM: the confusion matrix (NewMatrix; human grade by LLM grade over a
// Scale), Cohen's κ on the grade scale (Matrix.Kappa) and binarised at a
// relevance level, grade ≥ level (Matrix.Binarize). Per system ordering:
// Kendall's τ-b between the scores of the same systems under human labels
// and under LLM-filled labels (KendallTauB).
//
// # Which κ the report uses, and why
//
// The report gives unweighted κ, on the scale and binarised: that is the
// κ the published studies of LLM relevance judges report (UMBRELA,
// Upadhyay et al. 2024, among them), so the figures compare with the
// κ ≈ 0.3–0.5 quoted there. Grades are ordinal, and a 3 judged 2 is a
// smaller miss than a 3 judged 0, which unweighted κ does not see: Kappa
// with Quadratic weights (Fleiss & Cohen 1973; equivalent to an intraclass
// correlation) gives that view and may be shown next to it, labelled, but
// never in its place: weighted κ runs higher than unweighted κ on the same
// data, so the two must not be compared with each other or with published
// figures of the other kind. Linear weights are offered for completeness.
// On two grades every weighting gives the same κ.
//
// # Undefined values
//
// With no pairs, or fewer than two systems, the functions return NaN and an
// error wrapping ErrNoData. When κ or τ-b is 0/0 (both raters gave every
// pair one and the same grade; every system has the same score under one
// of the labellings) they return NaN and an error wrapping ErrUndefined:
// agreement is then not measurable, and a report should say so rather
// than print a number. NaN is never returned with a nil error.
//
// # The re-judged sample
//
// Sample draws the N human-judged pairs to grade again: stratified by
// human grade, with each grade's share proportional to its size (largest
// remainders) and at least one pair of every grade present when N allows;
// within a grade, the pairs are ordered by a keyed hash of (seed, query id,
// document id) and the first ones taken. The sample therefore depends only
// on the set of pairs, N and the seed (not on input order, not on Go's
// random number streams). Within a grade the pairs taken are always the
// first of one fixed order, so a sample with a larger share of a grade
// contains the smaller one's pairs of that grade, and their cached
// judgments are reused.
package agreement
