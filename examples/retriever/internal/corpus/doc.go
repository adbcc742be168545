// Package corpus reads the documents a search service indexes: JSON Lines,
// one document per line, plain or gzip-compressed (detected from the first
// bytes, whatever the file name).
//
// # Format
//
// Each non-blank line is a JSON object with
//
//	doc_id, _id or id   the document id: a non-empty string or an integer
//	                    (the first of the three keys present is used;
//	                    _id is what BEIR corpora carry)
//	title               optional string
//	text                optional string
//
// Other keys are ignored, so corpora with metadata (url, source, ...) read
// as they are. A document id may appear once: a second occurrence is an
// error naming both lines, never a silent overwrite.
//
// Every error about the content names the file and the line, as
// "corpus.jsonl:17: ...", and wraps ErrBadInput.
package corpus
