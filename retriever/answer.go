package retriever

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/evalgate/evalgate/internal/httpcall"
)

// Hit is one retrieved document.
type Hit struct {
	// ID is the document id: a JSON string as decoded, or a JSON number
	// exactly as the answer wrote it ("42", never "42.0" or "4.2e+01").
	ID string
	// Score is the hit's score when the file names a score path
	// (HasScore); the ranking never depends on it.
	Score    float64
	HasScore bool
}

// decodeJSON decodes one JSON value, numbers as json.Number, and refuses
// trailing data.
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty body")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// hitsAt extracts at most k hits in list order from a decoded answer. A
// failure is a shape error: the answer does not hold what the paths say.
func (c *Config) hitsAt(root any, k int) ([]Hit, *shapeError) {
	v, err := c.results.Lookup(root)
	if err != nil && c.resultsOptional && c.results.parentHasNo(root) {
		return []Hit{}, nil
	}
	if err != nil {
		return nil, &shapeError{key: "results", msg: fmt.Sprintf("no list of hits at %s: %v", c.results, err)}
	}
	list, ok := v.([]any)
	if v == nil && c.resultsOptional {
		return []Hit{}, nil
	}
	if !ok {
		return nil, &shapeError{key: "results", msg: fmt.Sprintf("%s is not a list: found %s", c.results, describe(v))}
	}
	n := min(len(list), k)
	hits := make([]Hit, n)
	for i, h := range list[:n] {
		id, err := c.hitID(h)
		if err != nil {
			return nil, &shapeError{key: "id", msg: fmt.Sprintf("hit %d of %s: %v", i, c.results, err)}
		}
		hits[i].ID = id
		if !c.hasScore {
			continue
		}
		s, err := c.hitScore(h)
		if err != nil {
			return nil, &shapeError{key: "score", msg: fmt.Sprintf("hit %d of %s: %v", i, c.results, err)}
		}
		hits[i].Score, hits[i].HasScore = s, true
	}
	return hits, nil
}

// hitID reads the id of one hit, and applies id_match.
func (c *Config) hitID(h any) (string, error) {
	v, err := c.id.Lookup(h)
	if err != nil {
		return "", fmt.Errorf("no id at %s: %v", c.id, err)
	}
	var id string
	switch x := v.(type) {
	case string:
		id = x
	case json.Number:
		id = string(x)
	default:
		return "", fmt.Errorf("id at %s is %s: want a string or a number", c.id, describe(v))
	}
	if id == "" {
		return "", fmt.Errorf("id at %s is empty", c.id)
	}
	if c.idMatch != nil {
		m := c.idMatch.FindStringSubmatch(id)
		if m == nil || m[1] == "" {
			return "", fmt.Errorf("id %q does not match id_match %s", httpcall.TruncateUTF8(id, 80), c.idMatch)
		}
		id = m[1]
	}
	return id, nil
}

// hitScore reads the score of one hit: a finite JSON number.
func (c *Config) hitScore(h any) (float64, error) {
	v, err := c.score.Lookup(h)
	if err != nil {
		return 0, fmt.Errorf("no score at %s: %v", c.score, err)
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("score at %s is %s: want a number", c.score, describe(v))
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("score %s at %s is not a finite float64", httpcall.TruncateUTF8(string(n), 40), c.score)
	}
	return f, nil
}

// vectorAt extracts the embedding from a decoded embeddings answer: a
// non-empty list of numbers, returned as compact JSON.
func (e *request) vectorAt(root any) (json.RawMessage, *shapeError) {
	v, err := e.vector.Lookup(root)
	if err != nil {
		return nil, &shapeError{key: "embed.vector", msg: fmt.Sprintf("no vector at %s: %v", e.vector, err)}
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, &shapeError{key: "embed.vector", msg: fmt.Sprintf("%s is not a list of numbers: found %s", e.vector, describe(v))}
	}
	var b bytes.Buffer
	b.Grow(len(list) * 12)
	b.WriteByte('[')
	for i, x := range list {
		n, ok := x.(json.Number)
		if !ok {
			return nil, &shapeError{key: "embed.vector", msg: fmt.Sprintf("element %d of %s is %s: want a number", i, e.vector, describe(x))}
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(n))
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// shapeError is an answer that does not hold what a path of the file
// says; key names that path's key.
type shapeError struct {
	key string
	msg string
}
