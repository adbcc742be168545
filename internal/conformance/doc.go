// Package conformance holds the proof that evalgate's measures are
// trec_eval's: its tests score trec_eval's own test data
// (testdata/trec_eval, copied unchanged from usnistgov/trec_eval, see the
// README there for provenance and license) and compare every per-query and
// averaged value of every measure both tools compute with trec_eval's
// expected output, to the printed precision.
package conformance
