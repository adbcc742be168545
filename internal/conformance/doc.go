// Package conformance holds the proof that evalgate's measures are
// trec_eval's: its tests score trec_eval's own test data
// (testdata/trec_eval, copied unchanged from usnistgov/trec_eval, see the
// README there for provenance and license) and compare every per-query and
// averaged value of every measure both tools compute with trec_eval's
// expected output, to the printed precision, bpref included.
//
// The data has no expected output of trec_eval -J (--judged-only), so
// that option is checked against its definition: the same files, ranked
// and cut at the depth as trec_eval does, then condensed by hand, scored
// without it, give the same bits; and bpref, which -J cannot change, still
// reads as trec_eval's.
package conformance
