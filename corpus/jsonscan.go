package corpus

import (
	"bytes"
	"encoding/json"
)

// The members of a JSONL line that the corpus reads are found by
// scanMembers, a scanner of the top level of a JSON object that
// encoding/json has already validated (json.Valid): it only skips values
// and records the spans of the keys of interest, which is about three
// times faster than decoding the line into a map (the line's text is
// scanned twice instead of four times, and nothing is copied). Its results
// equal those of json.Unmarshal into a map[string]json.RawMessage, which
// FuzzScanMembers checks.

// memberKeys are the keys scanMembers records: the aliases of the id, the
// text and the title.
var memberKeys = func() []string {
	var keys []string
	keys = append(keys, idKeys...)
	keys = append(keys, textKeys...)
	return append(keys, titleKeys...)
}()

// members holds the raw value of each of memberKeys present in a line (nil
// when absent), slices of the line.
type members [8]json.RawMessage

func init() {
	if len(memberKeys) != len(members{}) {
		panic("corpus: members does not fit memberKeys")
	}
}

// get returns the raw value of key, one of memberKeys.
func (m *members) get(key string) json.RawMessage {
	for i, k := range memberKeys {
		if k == key {
			return m[i]
		}
	}
	return nil
}

// scanMembers records the values of memberKeys in the JSON object l,
// valid JSON. A key given twice keeps its last value, as encoding/json
// does. ok is false when l is not an object (or not valid, which the
// caller has ruled out).
func scanMembers(l []byte) (m members, ok bool) {
	i := skipSpace(l, 0)
	if i >= len(l) || l[i] != '{' {
		return m, false
	}
	i = skipSpace(l, i+1)
	if i < len(l) && l[i] == '}' {
		return m, true
	}
	for i < len(l) {
		if l[i] != '"' {
			return m, false
		}
		end := endOfString(l, i)
		if end < 0 {
			return m, false
		}
		key := l[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if json.Unmarshal(l[i:end], &s) != nil {
				return m, false
			}
			key = []byte(s)
		}
		i = skipSpace(l, end)
		if i >= len(l) || l[i] != ':' {
			return m, false
		}
		i = skipSpace(l, i+1)
		vend := endOfValue(l, i)
		if vend < 0 {
			return m, false
		}
		for k, name := range memberKeys {
			if string(key) == name {
				m[k] = l[i:vend]
			}
		}
		i = skipSpace(l, vend)
		if i >= len(l) {
			return m, false
		}
		switch l[i] {
		case '}':
			return m, true
		case ',':
			i = skipSpace(l, i+1)
		default:
			return m, false
		}
	}
	return m, false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(l []byte, i int) int {
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '\n' || l[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index after the closing quote of the string
// starting at l[i] ('"'), or -1.
func endOfString(l []byte, i int) int {
	for j := i + 1; j < len(l); {
		k := bytes.IndexAny(l[j:], `"\`)
		if k < 0 {
			return -1
		}
		j += k
		if l[j] == '"' {
			return j + 1
		}
		j += 2 // an escape: the byte after the backslash is not a quote that ends
	}
	return -1
}

// endOfValue returns the index after the value starting at l[i], or -1.
func endOfValue(l []byte, i int) int {
	if i >= len(l) {
		return -1
	}
	switch l[i] {
	case '"':
		return endOfString(l, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(l); {
			switch l[j] {
			case '"':
				j = endOfString(l, j)
				if j < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return -1
	}
	j := i
	for j < len(l) && l[j] != ',' && l[j] != '}' && l[j] != ']' && l[j] != ' ' && l[j] != '\t' && l[j] != '\n' && l[j] != '\r' {
		j++
	}
	return j
}
