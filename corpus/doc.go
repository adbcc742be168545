// Package corpus reads the passages that LLM judging needs from a document
// corpus: given the ids of the documents to judge, Load reads the corpus
// in one streaming pass and returns those documents and the ids the corpus
// does not have. Memory grows with the wanted documents (and a few blocks
// of the file), not with the corpus, which may hold millions of passages.
//
// # Formats
//
// Each may be gzipped (.gz, detected by content); DetectFormat tells them
// apart by content, then by extension.
//
//	JSONL    one object per line: the id under doc_id, docid, id or _id (a
//	         string, or a number kept as written), the text under text,
//	         contents or body (a string, possibly empty), optionally a title
//	         (a string or null). Other keys are ignored; blank lines and lines
//	         starting with '#' are skipped. Aliases of one field may appear
//	         together only with the same value. Lines are validated by
//	         encoding/json; a key given twice keeps its last value, as there.
//	TSV      the MS MARCO / BEIR collection.tsv shape, id<TAB>text, or DPR's
//	         id<TAB>text<TAB>title; fields verbatim, no quoting. A first line
//	         that names the columns (id<TAB>text…) is skipped; blank lines
//	         are skipped.
//	Parquet  columns named as the JSONL keys: strings (or integers for the
//	         id), read column by column without the other columns of the
//	         file; a null title is no title. A gzipped Parquet file is
//	         decompressed to a temporary file first (Parquet needs random
//	         access).
//
// Text may be LF or CR LF terminated and start with a UTF-8 byte-order mark;
// it must be valid UTF-8.
//
// # Errors
//
// Every document of the corpus is checked, wanted or not, so a corpus with
// a bad line fails before any request is made for it. Problems are
// *schema.InputError values naming the file, the line (text) or row
// (Parquet), the field and the cause, collected into a *schema.ErrorList
// (schema.IsInvalidInput reports them: exit code 2 in the CLI). A gzip
// stream cut short or followed by other data is reported as such. A wanted
// id that appears twice with a different title or text is an error naming
// both places; identical repeats are counted in Result.Duplicates. Repeats
// of ids that are not wanted are not looked for: finding them would need
// memory for every id of the corpus, and they change nothing that is
// judged. Nothing panics on any input: the line parsers have fuzz targets
// and Parquet decoding goes through schema's safeguards.
//
// # Content hash
//
// Document.ContentHash is the SHA-256 of a passage's title and text (not
// its id), for the key of the judgment cache: a passage edited in the
// corpus gets a new hash, so it is judged again.
package corpus
