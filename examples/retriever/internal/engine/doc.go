// Package engine is the search index of the example retriever: a bleve
// index over a corpus (package corpus), queried with BM25 in one of two
// modes that a team would A/B test.
//
// # Modes
//
//	baseline   the query, analysed by bleve's standard analyzer (Unicode
//	           words, lower case, English stop words removed), against the
//	           text field only.
//	candidate  the query, analysed by bleve's English analyzer (the same,
//	           plus possessives and Porter stemming), against the text and
//	           the title, a title match weighing TitleBoost times a text
//	           match.
//
// # Scoring
//
// Scores are BM25 with k1 = 1.2 and b = 0.75, per field, combined by
// bleve's disjunction (a sum weighted by idf and a query norm, times the
// share of query terms that match). bleve estimates a field's average
// length as its number of distinct terms per document, summed over index
// segments, which is not an average length and changes as segments merge;
// the engine counts the tokens of every field at index time, stores the
// totals in the index and hands them to bleve with each search, so the
// average length is the true one (rounded up to an integer, as bleve
// does) and a document's score does not depend on the segment layout.
// Hits are ordered by score, then by document id, so equal scores rank
// the same way on every run.
//
// An Engine is safe for concurrent searches.
package engine
