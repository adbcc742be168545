// Package judgment reads and writes the relevance judgments an LLM made of
// (query, document) pairs (`evalgate judge --out`), and turns them into
// rows a gold set can take.
//
// # The file
//
// One JSON object per line:
//
//	{"query_id": "q1", "doc_id": "d7", "grade": 2, "model": "gpt-4o-mini",
//	 "prompt_sha256": "…", "reason": "names the fee but not the date"}
//
// grade is an integer. A re-judged pair (`judge --rejudge N`: a pair the
// gold set already judges, graded again to measure agreement) also has
// "human_grade", the gold set's grade; it never fills the gold set. Lines
// are in any order; a pair given twice with the same grade counts once,
// with different grades it is an error naming both lines. Bad lines are
// *schema.InputError values naming file, line and field; a file may be
// gzip-compressed.
package judgment
