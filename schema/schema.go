package schema

import (
	"github.com/apache/arrow/go/v16/arrow"
)

// Column names shared by the schemas.
const (
	FieldQueryID = "query_id"
	FieldQuery   = "query"
	FieldDocID   = "doc_id"
	FieldGrade   = "grade"
	FieldDocIDs  = "doc_ids"
	FieldGrades  = "grades"
	FieldTags    = "tags"
	FieldScore   = "score"
	FieldRank    = "rank"
	FieldScores  = "scores"
	FieldSeq     = "seq"
	FieldGroups  = "groups"
	FieldRun     = "run"
	FieldBaseRun = "base_run"
)

// MetaForm is the schema metadata key naming the form of a record
// ("gold-long", "gold-list", "run-long", "run-list", "shard-batch"), and
// MetaVersion the key of its layout version.
const (
	MetaForm    = "evalgate.form"
	MetaVersion = "evalgate.version"
	// Version is the layout version written by this build.
	Version = "1"
)

// Form is the layout of a record batch.
type Form uint8

// The forms.
const (
	FormUnknown Form = iota
	FormGoldLong
	FormGoldList
	FormRunLong
	FormRunList
	FormShardBatch
)

func (f Form) String() string {
	switch f {
	case FormGoldLong:
		return "gold-long"
	case FormGoldList:
		return "gold-list"
	case FormRunLong:
		return "run-long"
	case FormRunList:
		return "run-list"
	case FormShardBatch:
		return "shard-batch"
	}
	return "unknown"
}

// IsGold reports whether the form holds a gold set.
func (f Form) IsGold() bool { return f == FormGoldLong || f == FormGoldList }

// IsRun reports whether the form holds a run.
func (f Form) IsRun() bool { return f == FormRunLong || f == FormRunList }

func meta(f Form) *arrow.Metadata {
	m := arrow.NewMetadata([]string{MetaForm, MetaVersion}, []string{f.String(), Version})
	return &m
}

// TagsType is the type of the tags column: a map from tag name to value.
// A name may repeat for a multi-valued tag.
var TagsType = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)

// GoldLong returns the long gold schema, one row per judged query×doc.
//
// # Columns
//
//	query_id  utf8   not null
//	doc_id    utf8   not null
//	grade     int32  not null  relevance grade; ≤ 0 is judged non-relevant
func GoldLong() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: FieldQueryID, Type: arrow.BinaryTypes.String},
		{Name: FieldDocID, Type: arrow.BinaryTypes.String},
		{Name: FieldGrade, Type: arrow.PrimitiveTypes.Int32},
	}, meta(FormGoldLong))
}

// GoldList returns the list gold schema, one row per query.
//
// # Columns
//
//	query_id  utf8              not null
//	query     utf8              nullable  the query text, for reports
//	doc_ids   list<utf8>        not null  judged documents
//	grades    list<int32>       not null  their grades, same length as doc_ids
//	tags      map<utf8,utf8>    nullable  e.g. category=policy, difficulty=hard
func GoldList() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: FieldQueryID, Type: arrow.BinaryTypes.String},
		{Name: FieldQuery, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: FieldDocIDs, Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: FieldGrades, Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: FieldTags, Type: TagsType, Nullable: true},
	}, meta(FormGoldList))
}

// RunLong returns the long run schema, one row per retrieved query×doc.
//
// # Columns
//
//	query_id  utf8     not null
//	doc_id    utf8     not null
//	score     float64  not null  higher is better; finite
//	rank      int32    nullable  used only with --rank-by rank
func RunLong() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: FieldQueryID, Type: arrow.BinaryTypes.String},
		{Name: FieldDocID, Type: arrow.BinaryTypes.String},
		{Name: FieldScore, Type: arrow.PrimitiveTypes.Float64},
		{Name: FieldRank, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, meta(FormRunLong))
}

// QueryRunsType is the type of a run-long query_id column that holds each
// query's id once for its rows: run-end encoded, with int32 run ends and
// utf8 values. A file's rows list each query's documents together, so
// the column costs a few bytes a query rather than the id on every row,
// and the join finds each query's rows without comparing ids.
var QueryRunsType = arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String)

// RunLongEncoded is RunLong with the query_id column of type
// QueryRunsType: the schema of the Arrow files convert writes from a
// long-form run, and of the batches read from such files.
func RunLongEncoded() *arrow.Schema {
	s := RunLong()
	fields := s.Fields()
	fields[0].Type = QueryRunsType
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// RunList returns the list run schema, one row per query.
//
// # Columns
//
//	query_id  utf8            not null
//	doc_ids   list<utf8>      not null  in rank order when scores is null
//	scores    list<float64>   nullable  same length as doc_ids
func RunList() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: FieldQueryID, Type: arrow.BinaryTypes.String},
		{Name: FieldDocIDs, Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: FieldScores, Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	}, meta(FormRunList))
}

// ShardBatch returns the schema of the batches the kernel scores.
//
// # Columns
//
//	seq       int64         not null  position of the query in the job's input order
//	query_id  utf8          not null
//	groups    list<utf8>    not null  tag groups ("name=value") of the query
//	grades    list<int32>   not null  judged documents' grades, non-increasing;
//	                                  position i is interned doc id i
//	run       list<uint32>  not null  the ranking as interned doc ids, best first,
//	                                  no id twice
func ShardBatch() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: FieldSeq, Type: arrow.PrimitiveTypes.Int64},
		{Name: FieldQueryID, Type: arrow.BinaryTypes.String},
		{Name: FieldGroups, Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: FieldGrades, Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: FieldRun, Type: arrow.ListOf(arrow.PrimitiveTypes.Uint32)},
	}, meta(FormShardBatch))
}

// PairedShardBatch is ShardBatch with a baseline run's ranking of each
// query, for comparing two runs query by query.
//
// # Columns
//
// Those of ShardBatch, then:
//
//	base_run  list<uint32>  not null  the baseline's ranking, interned against
//	                                  the same grades (ids ≥ len(grades) are
//	                                  unjudged), no id twice
func PairedShardBatch() *arrow.Schema {
	s := ShardBatch()
	fields := append(s.Fields(), arrow.Field{Name: FieldBaseRun, Type: arrow.ListOf(arrow.PrimitiveTypes.Uint32)})
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// Shard batch column indexes, in ShardBatch order (ShardColBaseRun only in
// PairedShardBatch).
const (
	ShardColSeq = iota
	ShardColQueryID
	ShardColGroups
	ShardColGrades
	ShardColRun
	ShardColBaseRun
)

// PerQuery returns the schema of per-query output: the query id followed by
// one float64 column per measure, named by the measure.
func PerQuery(measures []string) *arrow.Schema {
	fields := make([]arrow.Field, 0, len(measures)+1)
	fields = append(fields, arrow.Field{Name: FieldQueryID, Type: arrow.BinaryTypes.String})
	for _, m := range measures {
		fields = append(fields, arrow.Field{Name: m, Type: arrow.PrimitiveTypes.Float64})
	}
	return arrow.NewSchema(fields, nil)
}
