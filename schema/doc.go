// Package schema is the one place that defines evalgate's Arrow schemas and
// turns input files into Arrow record batches in those schemas.
//
// # Input schemas
//
// A gold set and a run each come in a long form (one row per query×doc, as
// in TREC files) or a list form (one row per query, as in JSONL files):
//
//	GoldLong   query_id utf8, doc_id utf8, grade int32
//	GoldList   query_id utf8, query utf8?, doc_ids list<utf8>, grades list<int32>, tags map<utf8,utf8>?
//	RunLong    query_id utf8, doc_id utf8, score float64, rank int32?
//	RunList    query_id utf8, doc_ids list<utf8>, scores list<float64>?
//
// (? marks nullable columns.) Arrow IPC and Parquet files in either form are
// read directly; readers accept any integer type for grades and ranks, any
// float type for scores, and utf8, large_utf8, utf8_view, binary,
// binary_view, and dictionary or run-end encoded strings for ids. A
// record whose encoded columns or views, among those read, would expand,
// one value a row, past what the file's size allows (AllocationLimit) or
// past a utf8 column's 2 GiB is refused as corrupt before anything is
// copied; list views are refused by type (their rows may overlap). A long-form run's query_id may also
// come out of a reader run-end encoded (QueryRunsType, schema
// RunLongEncoded): from an Arrow file whose column is (convert writes
// them so) and from a flat Parquet file's query_id column without nulls
// (from its dictionary indices, or from its values as they are decoded),
// each id once a run of rows; QueryIDs reads either form. A run in list form
// without scores is ranked by list position. Open refuses an Arrow or
// Parquet file whose schema says it holds the other role (grade columns
// opened as a run, score or rank columns opened as the gold set; the
// evalgate.form metadata decides when the columns do not), as the text
// parsers refuse lines of the other role.
//
// # Shard batch
//
// The batch the kernel scores and the workers receive, one row per query,
// after ranking, de-duplication and interning (package ingest):
//
//	ShardBatch seq int64, query_id utf8, groups list<utf8>, grades list<int32>, run list<uint32>
//
// grades holds the query's judged documents in order of decreasing grade;
// the judged document at position i has the interned id i. run holds the
// ranking as interned ids: ids below len(grades) are judged documents,
// larger ids are documents without a judgment. groups names the tag groups
// ("category=policy") the query belongs to.
//
// # Readers and errors
//
// Open detects the format of a file (by extension and content) and returns a
// Reader of Batches. Text formats are parsed in parallel blocks of whole
// lines (LineBlocks, which the corpus loader uses too), delivered in file
// order; a UTF-8 byte-order mark at the start of a text file is skipped
// (anywhere else it is an ordinary character). A run read for ranking by
// score (Options.SkipRanks) leaves its ranks unread, all null: a TREC run
// parses no rank field, a flat Parquet file decodes no rank column. Every
// problem with the input is an *InputError naming the
// file, the line (or row) and the cause; readers collect them into an
// ErrorList and report all of them at the end (the first few in full).
// Readers never panic on malformed input: each parser has a fuzz target.
//
// The record batches of an Arrow IPC file and the row groups of a Parquet
// file are read and normalized in parallel and delivered in file order
// (an Arrow IPC file is memory-mapped where the platform allows). A column
// that already has its canonical type and valid values is passed on
// without a copy. The pages of a flat Parquet file (the long forms) are
// decoded here from one read of each column chunk, not through Arrow's
// page and column readers. NewRecordWriterWith writes what reads fastest:
// Parquet uncompressed, with dictionary-encoded query_id and rank, other
// strings (doc ids) as DELTA_LENGTH_BYTE_ARRAY, row groups cut at query
// boundaries and the row groups of a flat file encoded concurrently and
// written in order; Arrow IPC uncompressed. Convert writes a long-form
// run's query_id into Arrow IPC run-end encoded (EncodeQueryRuns;
// WriterOptions.PlainQueryIDs for utf8). Both are written from a
// goroutine of the writer's own in aligned blocks, which a file made by
// atomicfile.CreateUncached writes to disk without a copy.
package schema
