package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v16/arrow"
)

// JSONL field names accepted. Each list but jsonFoldedTags (tags that may
// be given at the top level, see jsonTags) and jsonGoldKeys names aliases
// of one field: a line may give several only with the same value (see
// jsonObject.one).
var (
	jsonQueryIDKeys  = []string{"query_id", "qid", "id"}
	jsonQueryKeys    = []string{"query", "question"}
	jsonBinaryKeys   = []string{"relevant_ids", "relevantDocIds", "relevantDocs", "relevant_doc_ids"}
	jsonGradedKeys   = []string{"relevance_map", "relevanceScores", "qrels"}
	jsonRetrieveKeys = []string{"retrieved_ids", "retrievedDocs", "retrievedDocIds", "retrieved_doc_ids", "retrieved"}
	jsonFoldedTags   = []string{"category", "difficulty", "tier"}
	jsonDocIDKeys    = []string{"id", "doc_id", "docid", "_id"}
	jsonGradeKeys    = []string{"grade", "relevance", "rel", "score", "label"}
	// jsonGoldKeys are the keys that mark a gold line.
	jsonGoldKeys = slices.Concat(jsonBinaryKeys, jsonGradedKeys)
)

// jsonObject is one parsed line: raw values by key, plus the keys in order.
type jsonObject map[string]json.RawMessage

// first returns the value of the first key present (and not null).
func (o jsonObject) first(keys []string) (string, json.RawMessage) {
	for _, k := range keys {
		if v, ok := o[k]; ok && !isNull(v) {
			return k, v
		}
	}
	return "", nil
}

// one is first for keys that are aliases of one field: it also fails when
// two of them are present (and not null) with different values, since
// using either would silently drop the other. The same value under two
// aliases is fine.
func (o jsonObject) one(keys []string) (string, json.RawMessage, error) {
	var k1 string
	var v1 json.RawMessage
	for _, k := range keys {
		v, ok := o[k]
		if !ok || isNull(v) {
			continue
		}
		if v1 == nil {
			k1, v1 = k, v
			continue
		}
		if !sameJSON(v1, v) {
			return "", nil, fmt.Errorf("%w: both %s and %s, with different values: give one", ErrDuplicate, k1, k)
		}
	}
	return k1, v1, nil
}

// sameJSON reports whether two valid JSON values are written the same,
// ignoring insignificant white space.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// parseObject parses a JSON object line, reporting syntax errors with their
// byte column.
func parseObject(l []byte) (jsonObject, int, error) {
	var o jsonObject
	if err := json.Unmarshal(l, &o); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, int(se.Offset), fmt.Errorf("invalid JSON: %v", se)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, 1, fmt.Errorf("%w: want a JSON object, got %s", ErrTypeMismatch, te.Value)
		}
		return nil, 1, fmt.Errorf("invalid JSON: %v", err)
	}
	if o == nil {
		return nil, 1, fmt.Errorf("%w: want a JSON object, got null", ErrTypeMismatch)
	}
	return o, 0, nil
}

// nextQueryObject returns the next line that is a JSON object with a valid
// query id; the lines it passes over (invalid UTF-8, not an object, no or a
// bad query id) go to errs. ok is false at the end of the block.
func nextQueryObject(sc *lineScanner, errs *blockErrors) (o jsonObject, qid string, ok bool) {
	for {
		l, more := sc.next()
		if !more {
			return nil, "", false
		}
		if col, bad := invalidUTF8(l); bad {
			errs.add(sc.line, col, "", ErrInvalidUTF8)
			continue
		}
		o, col, err := parseObject(l)
		if err != nil {
			errs.add(sc.line, col, "", err)
			continue
		}
		key, rawID, err := o.one(jsonQueryIDKeys)
		if err != nil {
			errs.add(sc.line, 0, "", err)
			continue
		}
		if rawID == nil {
			errs.add(sc.line, 0, "", fmt.Errorf("%w: want a query id (%s)", ErrMissingField, strings.Join(jsonQueryIDKeys, ", ")))
			continue
		}
		qid, err := jsonID(rawID)
		if err != nil {
			errs.add(sc.line, 0, key, err)
			continue
		}
		return o, qid, true
	}
}

// jsonID decodes an id: a non-empty string, or a number kept as written.
func jsonID(v json.RawMessage) (string, error) {
	// An id is a scalarString restricted to strings and numbers, not empty.
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] != '"' && v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return "", fmt.Errorf("%w: want a string or number id, got %s", ErrTypeMismatch, abbreviate(v))
	}
	s, err := scalarString(v)
	if err == nil && s == "" {
		return "", ErrEmptyID
	}
	return s, err
}

func abbreviate(v []byte) string {
	if len(v) > 40 {
		return string(v[:37]) + "..."
	}
	return string(v)
}

// jsonGrade decodes an integer grade (1 and 1.0 are accepted, 0.5 is not).
func jsonGrade(v json.RawMessage) (int32, error) {
	if isNull(v) {
		return 0, fmt.Errorf("%w: want an integer grade, got null", ErrNumber)
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		if b, err := strconv.ParseBool(string(bytes.TrimSpace(v))); err == nil {
			if b {
				return 1, nil
			}
			return 0, nil
		}
		return 0, fmt.Errorf("%w: want an integer grade, got %s", ErrNumber, abbreviate(v))
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, fmt.Errorf("%w: want an integer grade, got %s", ErrNumber, abbreviate(v))
	}
	return int32(f), nil
}

// jsonScore decodes a finite score. v is valid JSON: a JSON number (which
// parseScore accepts) or another value (which is not a number). A number
// beyond the float64 range is not finite.
func jsonScore(v json.RawMessage) (float64, error) {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
		return parseScore(v)
	}
	return 0, fmt.Errorf("%w: want a number, got %s", ErrNumber, abbreviate(v))
}

// docEntry is one element of an id list: an id, and optionally a grade or
// score from an object element.
type docEntry struct {
	id       string
	value    json.RawMessage // grade or score, if the element was an object that had one
	valueKey string
}

// jsonDocList decodes an array of ids or of objects with an id and,
// optionally, one of valueKeys.
func jsonDocList(v json.RawMessage, valueKeys []string) ([]docEntry, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, fmt.Errorf("%w: want an array, got %s", ErrTypeMismatch, abbreviate(v))
	}
	out := make([]docEntry, len(raw))
	for i, e := range raw {
		e = bytes.TrimSpace(e)
		if len(e) > 0 && e[0] == '{' {
			var o jsonObject
			if err := json.Unmarshal(e, &o); err != nil {
				return nil, fmt.Errorf("element %d: %w: %v", i, ErrTypeMismatch, err)
			}
			key, id, err := o.one(jsonDocIDKeys)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			if id == nil {
				return nil, fmt.Errorf("element %d: %w: want one of %s", i, ErrMissingField, strings.Join(jsonDocIDKeys, ", "))
			}
			s, err := jsonID(id)
			if err != nil {
				return nil, fmt.Errorf("element %d: %s: %w", i, key, err)
			}
			out[i].id = s
			if out[i].valueKey, out[i].value, err = o.one(valueKeys); err != nil {
				return nil, fmt.Errorf("element %d: doc %q: %w", i, s, err)
			}
			continue
		}
		s, err := jsonID(e)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i].id = s
	}
	return out, nil
}

// jsonTags turns a tags object and the folded top-level fields into sorted
// "name=value" pairs. Array values give one pair per element. A folded
// field that is also in the tags object must have the same values there
// (it then counts once): different values would put the query in groups
// the file does not agree on.
func jsonTags(o jsonObject) (keys, values []string, err error) {
	// tagValues decodes the values of one tag (none for null).
	tagValues := func(name string, v json.RawMessage) ([]string, error) {
		if strings.Contains(name, "=") || name == "" {
			return nil, fmt.Errorf("tag name %q: must be non-empty and contain no '='", name)
		}
		v = bytes.TrimSpace(v)
		if isNull(v) {
			return nil, nil
		}
		var elems []json.RawMessage
		if len(v) > 0 && v[0] == '[' {
			if err := json.Unmarshal(v, &elems); err != nil {
				return nil, fmt.Errorf("tag %q: %w: %v", name, ErrTypeMismatch, err)
			}
		} else {
			elems = []json.RawMessage{v}
		}
		out := make([]string, 0, len(elems))
		for _, e := range elems {
			s, err := scalarString(e)
			if err != nil {
				return nil, fmt.Errorf("tag %q: %w", name, err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	add := func(name string, vals []string) {
		for _, v := range vals {
			keys = append(keys, name)
			values = append(values, v)
		}
	}
	var tagged map[string][]string // tags object values of the folded names
	if raw, ok := o["tags"]; ok && !isNull(raw) {
		var tags map[string]json.RawMessage
		if err := json.Unmarshal(raw, &tags); err != nil {
			return nil, nil, fmt.Errorf("tags: %w: want an object of name: value", ErrTypeMismatch)
		}
		names := make([]string, 0, len(tags))
		for k := range tags {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			vals, err := tagValues(k, tags[k])
			if err != nil {
				return nil, nil, err
			}
			add(k, vals)
			if len(vals) > 0 && slices.Contains(jsonFoldedTags, k) {
				if tagged == nil {
					tagged = make(map[string][]string)
				}
				tagged[k] = vals
			}
		}
	}
	for _, k := range jsonFoldedTags {
		v, ok := o[k]
		if !ok {
			continue
		}
		vals, err := tagValues(k, v)
		if err != nil {
			return nil, nil, err
		}
		if inTags, ok := tagged[k]; ok && len(vals) > 0 {
			if !sameValues(vals, inTags) {
				return nil, nil, fmt.Errorf("%w: both %s %s and tags.%s %s, with different values: give one",
					ErrDuplicate, k, quoteValues(vals), k, quoteValues(inTags))
			}
			continue // counted once, from tags
		}
		add(k, vals)
	}
	return keys, values, nil
}

// sameValues reports whether a and b hold the same set of values.
func sameValues(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// quoteValues renders tag values for an error: "a", or ["a", "b"].
func quoteValues(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// scalarString renders a string, number or boolean as a tag value.
func scalarString(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", fmt.Errorf("%w: empty value", ErrTypeMismatch)
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("%w: %v", ErrTypeMismatch, err)
		}
		return s, nil
	case '{', '[':
		return "", fmt.Errorf("%w: want a string, number or boolean, got %s", ErrTypeMismatch, abbreviate(v))
	}
	return string(v), nil
}

// parseJSONLGoldBlock parses gold lines:
//
//	{"query_id": "q1", "query": "…", "relevant_ids": ["d1", "d2"], "tags": {"category": "policy"}}
//	{"qid": "q2", "relevance_map": {"d1": 2, "d7": 1}, "difficulty": "hard"}
func parseJSONLGoldBlock(file string, data []byte) blockResult {
	qids := NewStrings(64, 1024)
	query := NewStrings(64, 1024)
	var queryValid []bool
	docOff := []int32{0}
	docs := NewStrings(256, 4096)
	var grades []int32
	tagOff := []int32{0}
	tagKeys := NewStrings(64, 1024)
	tagVals := NewStrings(64, 1024)
	var lines []int64
	errs := blockErrors{file: file}
	sc := lineScanner{data: data}
	for {
		o, qid, ok := nextQueryObject(&sc, &errs)
		if !ok {
			break
		}
		text := ""
		hasText := false
		k, raw, err := o.one(jsonQueryKeys)
		if err != nil {
			errs.add(sc.line, 0, "", err)
			continue
		}
		if raw != nil {
			if err := json.Unmarshal(raw, &text); err != nil {
				errs.add(sc.line, 0, k, fmt.Errorf("%w: want a string", ErrTypeMismatch))
				continue
			}
			hasText = true
		}
		binKey, bin, err := o.one(jsonBinaryKeys)
		if err != nil {
			errs.add(sc.line, 0, "", err)
			continue
		}
		gradKey, graded, err := o.one(jsonGradedKeys)
		if err != nil {
			errs.add(sc.line, 0, "", err)
			continue
		}
		var ids []string
		var gs []int32
		switch {
		case bin != nil && graded != nil:
			errs.add(sc.line, 0, "", fmt.Errorf("%w: both %s and %s: give one", ErrDuplicate, binKey, gradKey))
			continue
		case bin != nil:
			entries, err := jsonDocList(bin, jsonGradeKeys)
			if err != nil {
				errs.add(sc.line, 0, binKey, err)
				continue
			}
			bad := false
			for _, e := range entries {
				g := int32(1)
				if e.value != nil {
					if g, err = jsonGrade(e.value); err != nil {
						errs.add(sc.line, 0, binKey, fmt.Errorf("doc %q: %s: %w", e.id, e.valueKey, err))
						bad = true
						break
					}
				}
				ids = append(ids, e.id)
				gs = append(gs, g)
			}
			if bad {
				continue
			}
		case graded != nil:
			var m map[string]json.RawMessage
			if err := json.Unmarshal(graded, &m); err != nil {
				errs.add(sc.line, 0, gradKey, fmt.Errorf("%w: want an object of doc_id: grade", ErrTypeMismatch))
				continue
			}
			names := make([]string, 0, len(m))
			for k := range m {
				names = append(names, k)
			}
			slices.Sort(names)
			bad := false
			for _, d := range names {
				if d == "" {
					errs.add(sc.line, 0, gradKey, ErrEmptyID)
					bad = true
					break
				}
				g, err := jsonGrade(m[d])
				if err != nil {
					errs.add(sc.line, 0, gradKey, fmt.Errorf("doc %q: %w", d, err))
					bad = true
					break
				}
				ids = append(ids, d)
				gs = append(gs, g)
			}
			if bad {
				continue
			}
		default:
			hint := ""
			if k, run := o.first(jsonRetrieveKeys); run != nil {
				hint = fmt.Sprintf("; this looks like a run line (%s): pass the file as the run", k)
			}
			errs.add(sc.line, 0, "", fmt.Errorf("%w: want relevant documents (%s, or graded: %s)%s", ErrMissingField,
				strings.Join(jsonBinaryKeys, ", "), strings.Join(jsonGradedKeys, ", "), hint))
			continue
		}
		tk, tv, err := jsonTags(o)
		if err != nil {
			errs.add(sc.line, 0, "tags", err)
			continue
		}

		qids.Append(qid)
		query.Append(text)
		if !hasText && queryValid == nil {
			queryValid = make([]bool, qids.Len()-1, 64)
			for i := range queryValid {
				queryValid[i] = true
			}
		}
		if queryValid != nil {
			queryValid = append(queryValid, hasText)
		}
		for i, id := range ids {
			docs.Append(id)
			grades = append(grades, gs[i])
		}
		docOff = append(docOff, int32(docs.Len()))
		for i := range tk {
			tagKeys.Append(tk[i])
			tagVals.Append(tv[i])
		}
		tagOff = append(tagOff, int32(tagKeys.Len()))
		lines = append(lines, sc.line)
	}
	res := blockResult{nLines: sc.line, lines: lines}
	if len(errs.errs) == 0 {
		n := qids.Len()
		res.rec = NewRecord(GoldList(), []arrow.Array{
			qids.Array(),
			NullableStringArray(query.Offsets, query.Data, queryValid),
			ListArray(docOff, docs.Array(), nil),
			ListArray(docOff, Int32Array(grades, nil), nil),
			MapArray(tagOff, tagKeys.Array(), tagVals.Array(), nil),
		}, n)
	}
	return errs.result(res)
}

// parseJSONLRunBlock parses run lines:
//
//	{"query_id": "q1", "retrieved_ids": ["d3", "d1"]}
//	{"qid": "q2", "retrievedDocs": [{"id": "d3", "score": 12.5}, {"id": "d9", "score": 11.0}]}
//
// Without scores the list order is the ranking.
func parseJSONLRunBlock(file string, data []byte) blockResult {
	qids := NewStrings(64, 1024)
	docOff := []int32{0}
	docs := NewStrings(1024, 16384)
	var scores []float64
	var scoreValid []bool
	var lines []int64
	errs := blockErrors{file: file}
	sc := lineScanner{data: data}
	for {
		o, qid, ok := nextQueryObject(&sc, &errs)
		if !ok {
			break
		}
		retKey, ret, err := o.one(jsonRetrieveKeys)
		if err != nil {
			errs.add(sc.line, 0, "", err)
			continue
		}
		if ret == nil {
			hint := ""
			if k, gold := o.first(jsonGoldKeys); gold != nil {
				hint = fmt.Sprintf("; this looks like a gold line (%s): pass the file as the gold set", k)
			}
			errs.add(sc.line, 0, "", fmt.Errorf("%w: want retrieved documents (%s)%s", ErrMissingField, strings.Join(jsonRetrieveKeys, ", "), hint))
			continue
		}
		entries, err := jsonDocList(ret, []string{"score"})
		if err != nil {
			errs.add(sc.line, 0, retKey, err)
			continue
		}
		withScore := 0
		for _, e := range entries {
			if e.value != nil {
				withScore++
			}
		}
		// A parallel "scores" array is accepted too.
		if _, raw := o.first([]string{"scores"}); raw != nil && withScore == 0 {
			var ss []json.RawMessage
			if err := json.Unmarshal(raw, &ss); err != nil || len(ss) != len(entries) {
				errs.add(sc.line, 0, "scores", fmt.Errorf("%w: want an array of %d numbers, parallel to %s", ErrTypeMismatch, len(entries), retKey))
				continue
			}
			for i := range entries {
				entries[i].value = ss[i]
			}
			withScore = len(entries)
		}
		if withScore != 0 && withScore != len(entries) {
			errs.add(sc.line, 0, retKey, fmt.Errorf("%w: %d of %d documents have a score: give all or none", ErrMissingField, withScore, len(entries)))
			continue
		}
		var ss []float64
		bad := false
		for _, e := range entries {
			if e.value == nil {
				continue
			}
			s, err := jsonScore(e.value)
			if err != nil {
				errs.add(sc.line, 0, retKey, fmt.Errorf("doc %q: score: %w", e.id, err))
				bad = true
				break
			}
			ss = append(ss, s)
		}
		if bad {
			continue
		}

		qids.Append(qid)
		for _, e := range entries {
			docs.Append(e.id)
		}
		docOff = append(docOff, int32(docs.Len()))
		scores = append(scores, ss...)
		hasScores := withScore > 0 || len(entries) == 0
		if !hasScores && scoreValid == nil {
			scoreValid = make([]bool, qids.Len()-1, 64)
			for i := range scoreValid {
				scoreValid[i] = true
			}
		}
		if scoreValid != nil {
			scoreValid = append(scoreValid, hasScores)
		}
		lines = append(lines, sc.line)
	}
	res := blockResult{nLines: sc.line, lines: lines}
	if len(errs.errs) == 0 {
		n := qids.Len()
		// Score lists of rows without scores are empty (and null).
		scoreOff := make([]int32, 1, n+1)
		at := int32(0)
		for i := 0; i < n; i++ {
			if scoreValid == nil || scoreValid[i] {
				at += docOff[i+1] - docOff[i]
			}
			scoreOff = append(scoreOff, at)
		}
		res.rec = NewRecord(RunList(), []arrow.Array{
			qids.Array(),
			ListArray(docOff, docs.Array(), nil),
			ListArray(scoreOff, Float64Array(scores), scoreValid),
		}, n)
	}
	return errs.result(res)
}
