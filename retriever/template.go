package retriever

import (
	"bytes"
	"encoding/json"
	"strings"
	"text/template"

	"github.com/evalgate/evalgate/internal/keyfile"
)

// queryData is what the templates of a request see: the gold query.
type queryData struct {
	Query   string            // the query text
	QueryID string            // the query id
	K       int               // the number of hits wanted
	Tags    map[string]string // tag name → value ("a,b" for several values)
}

// vectorData adds the embedding of the query, for the search request of
// a file with an embed: section.
type vectorData struct {
	queryData
	Vector json.RawMessage // the embedding, as the embeddings service wrote it
}

// templateFuncs are the functions templates may call besides text/template's
// builtins (urlquery, index, printf, …).
var templateFuncs = template.FuncMap{"json": jsonFunc}

// jsonFunc encodes any value as JSON, without HTML escaping.
func jsonFunc(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// tmpl is one template of the file (a url, a header value or a body).
type tmpl struct {
	key  string // "url", "headers.Authorization", "embed.body", …
	t    *template.Template
	at   keyfile.Position // where its text starts in the file
	fill *strings.Replacer
}

// execute runs the template and fills in the environment values.
func (t *tmpl) execute(data any) (string, error) {
	var b strings.Builder
	if err := t.t.Execute(&b, data); err != nil {
		return "", err
	}
	return t.fill.Replace(b.String()), nil
}

// tagMap turns "name=value" tags into the map templates see; the values
// of a repeated name are joined with commas, in order.
func tagMap(tags []string) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		name, value, _ := strings.Cut(t, "=")
		if prev, ok := m[name]; ok {
			m[name] = prev + "," + value
			continue
		}
		m[name] = value
	}
	return m
}
