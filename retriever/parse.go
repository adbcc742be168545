package retriever

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalgate/evalgate/internal/httpcall"
	"github.com/evalgate/evalgate/internal/keyfile"
	"github.com/evalgate/evalgate/internal/secret"
)

// The keys of a retriever file and of its embed: section.
var (
	topKeys   = []string{"url", "method", "headers", "body", "results", "results_optional", "id", "score", "id_match", "k", "concurrency", "rate", "timeout", "retries", "max_retry_after", "embed"}
	embedKeys = []string{"url", "method", "headers", "body", "vector"}
)

// sampleQuery is the query templates are rendered with at parse time. Its
// quotes, backslash and spaces catch a body that pastes .Query into JSON
// without {{json .Query}}, and a URL that does not escape it.
// Its Tags get a value for every tag a template asks for.
var sampleQuery = queryData{Query: `sample "query" \ text`, QueryID: "sample-1"}

// missingKeyRE finds the key of text/template's missingkey=error message.
var missingKeyRE = regexp.MustCompile(`map has no entry for key ("(?:[^"\\]|\\.)*")`)

// sampleVector stands in for an embedding at parse time.
var sampleVector = json.RawMessage(`[0.5,-0.25]`)

// parser parses one retriever file.
type parser struct {
	file string
	data []byte
	exp  *secret.Expander
	f    *keyfile.File // set by parse
	cfg  *Config
}

func newParser(file string, data []byte, env func(string) (string, bool)) *parser {
	return &parser{
		file: file,
		data: data,
		exp:  secret.NewExpander(env),
		cfg: &Config{
			File: file, Source: bytes.Clone(data),
			K: DefaultK, Concurrency: DefaultConcurrency, Timeout: DefaultTimeout,
			Retries: DefaultRetries, MaxRetryAfter: DefaultMaxRetryAfter,
		},
	}
}

// bad records an error at a line for a key. Messages pass through the
// redactor of the secrets known so far.
func (p *parser) bad(line int, key string, format string, args ...any) {
	p.f.Bad(line, key, format, args...)
}

func (p *parser) parse() (*Config, error) {
	f, root, err := keyfile.Decode(p.file, p.data, "retriever file", []string{"url", "results", "id"})
	if err != nil {
		return nil, err
	}
	p.f = f
	f.Redact = func(s string) string { return p.exp.Redactor().Replace(s) }
	p.cfg.lines = f.Lines()
	f.Mapping(root, "", topKeys)
	if e := f.Node("embed"); e != nil {
		if e.Kind != yaml.MappingNode {
			p.bad(e.Line, "embed", "want a mapping with url, body and vector")
		} else {
			f.Mapping(e, "embed.", embedKeys)
		}
	}
	p.settings()
	p.paths()
	if err := p.f.Err(); err != nil {
		return nil, err
	}
	c := p.cfg
	if p.f.Node("embed") != nil {
		c.embed = p.request("embed.")
	}
	c.search = *p.request("")
	if err := p.f.Err(); err != nil {
		return nil, err
	}
	c.redact = p.exp.Redactor()
	p.check()
	if err := p.f.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// settings parses the numeric settings.
func (p *parser) settings() {
	c, f := p.cfg, p.f
	f.Int("k", 1, MaxK, &c.K)
	f.Int("concurrency", 1, MaxConcurrency, &c.Concurrency)
	f.Int("retries", 0, MaxRetries, &c.Retries)
	f.Duration("timeout", time.Millisecond, MaxTimeout, &c.Timeout)
	f.Duration("max_retry_after", 0, 24*time.Hour, &c.MaxRetryAfter)
	f.Rate("rate", MaxRate, &c.Rate)
}

// paths parses results, id, score, id_match and embed.vector.
func (p *parser) paths() {
	c := p.cfg
	for _, key := range []string{"url", "results", "id"} {
		if p.f.Node(key) == nil {
			p.bad(1, key, "missing: a retriever file needs url, results and id")
		}
	}
	if p.f.Node("embed") != nil && p.f.Node("embed.vector") == nil {
		p.bad(p.f.Line("embed"), "embed.vector", "missing: the path to the embedding in the embeddings answer (e.g. data[0].embedding)")
	}
	c.results, _ = p.path("results")
	c.id, _ = p.path("id")
	c.score, c.hasScore = p.path("score")
	if s, line, ok := p.f.Scalar("results_optional"); ok {
		b, err := strconv.ParseBool(s)
		switch {
		case err != nil:
			p.bad(line, "results_optional", "want true or false, got %q", s)
		case b && (c.results.IsRoot() || c.results.steps[len(c.results.steps)-1].index >= 0):
			p.bad(line, "results_optional", "needs a results path that ends with a key (the key an answer without hits leaves out)")
		default:
			c.resultsOptional = b
		}
	}
	if s, line, ok := p.f.Scalar("id_match"); ok {
		re, err := regexp.Compile(s)
		switch {
		case err != nil:
			p.bad(line, "id_match", "invalid regular expression: %v", err)
		case re.NumSubexp() != 1:
			p.bad(line, "id_match", "want exactly one capturing group, the part of the id to keep (e.g. ::(.+)$), found %d", re.NumSubexp())
		default:
			c.idMatch = re
		}
	}
}

func (p *parser) path(key string) (Path, bool) {
	s, line, ok := p.f.Scalar(key)
	if !ok {
		return Path{}, false
	}
	path, err := ParsePath(s)
	if err != nil {
		p.bad(line, key, "invalid path %q: %v", s, err)
		return Path{}, false
	}
	return path, true
}

// request builds the search request (prefix "") or the embed one.
func (p *parser) request(prefix string) *request {
	r := &request{prefix: prefix, method: "GET"}
	if p.f.Node(prefix+"body") != nil || prefix == "embed." {
		r.method = "POST"
	}
	if s, line, ok := p.f.Scalar(prefix + "method"); ok {
		switch m := strings.ToUpper(strings.TrimSpace(s)); m {
		case "GET", "POST":
			r.method = m
		default:
			p.bad(line, prefix+"method", "want GET or POST, got %q", s)
		}
	}
	if prefix == "embed." {
		r.vector, _ = p.path("embed.vector")
	}
	if s, _, ok := p.f.Scalar(prefix + "url"); ok {
		r.urlText = s
		r.url = p.template(prefix+"url", s)
	}
	r.headers = p.headers(prefix)
	if s, line, ok := p.f.Scalar(prefix + "body"); ok {
		if r.method != "POST" {
			p.bad(line, prefix+"body", "a body needs method: POST (a GET request has none)")
		} else {
			r.body = p.template(prefix+"body", s)
		}
	}
	return r
}

// headers parses a headers: mapping of names to value templates.
func (p *parser) headers(prefix string) []header {
	n := p.f.Node(prefix + "headers")
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.bad(n.Line, prefix+"headers", "want a mapping of header names to values")
		return nil
	}
	var out []header
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := keyfile.Resolve(n.Content[i]), keyfile.Resolve(n.Content[i+1])
		key := prefix + "headers." + k.Value
		switch {
		case k.Kind != yaml.ScalarNode || !httpcall.ValidHeaderName(k.Value):
			p.bad(k.Line, prefix+"headers", "invalid header name %q", k.Value)
			continue
		case seen[strings.ToLower(k.Value)] > 0:
			p.bad(k.Line, key, "repeated header (first at line %d)", seen[strings.ToLower(k.Value)])
			continue
		case v.Kind != yaml.ScalarNode || v.Tag == "!!null":
			p.bad(v.Line, key, "want a header value")
			continue
		}
		seen[strings.ToLower(k.Value)] = k.Line
		p.f.Set(key, k, v)
		if t := p.template(key, v.Value); t != nil {
			out = append(out, header{name: k.Value, value: t})
		}
	}
	return out
}

// template expands the environment references of a value and parses it
// as a template; errors name the file line the template line maps to.
func (p *parser) template(key, text string) *tmpl {
	v := p.f.Node(key)
	at := keyfile.PositionOf(v)
	src, rerr := p.exp.Placeholders(text)
	if rerr != nil {
		line := at.FileLine(1 + strings.Count(text[:rerr.Offset], "\n"))
		p.bad(line, key, "%s", rerr.Msg)
		return nil
	}
	t, err := template.New(key).Option("missingkey=error").Funcs(templateFuncs).Parse(src)
	if err != nil {
		tl, msg := keyfile.TemplateError(err)
		_, unfill := p.exp.Replacers()
		p.bad(at.FileLine(tl), key, "template does not parse: %s", unfill.Replace(msg))
		return nil
	}
	fill, _ := p.exp.Replacers()
	return &tmpl{key: key, t: t, at: at, fill: fill}
}

// check renders every template for a sample query and checks the
// results: a URL that parses and escapes the query, header values without
// line breaks, a JSON body that is valid JSON.
func (p *parser) check() {
	c := p.cfg
	q := sampleQuery
	q.K = c.K
	q.Tags = map[string]string{}
	if c.embed != nil {
		p.checkRequest(c.embed, q, q.Tags)
		p.checkRequest(&c.search, vectorData{queryData: q, Vector: sampleVector}, q.Tags)
		return
	}
	p.checkRequest(&c.search, q, q.Tags)
}

// checkRequest renders the templates of a request with data and checks
// the results. A tag a template asks for is added to tags (the sample
// query's) with the value "sample", and the template rendered again.
func (p *parser) checkRequest(r *request, data any, tags map[string]string) {
	render := func(t *tmpl) (string, bool) {
		out, err := t.execute(data)
		for range 16 {
			m := missingKeyRE.FindStringSubmatch(fmt.Sprint(err))
			if m == nil {
				break
			}
			key, uerr := strconv.Unquote(m[1])
			if _, had := tags[key]; uerr != nil || had {
				return "", false
			}
			tags[key] = "sample"
			out, err = t.execute(data)
		}
		if err == nil {
			return out, true
		}
		if strings.Contains(err.Error(), "map has no entry for key") {
			return "", false // more tags than tried: each query checks its own
		}
		tl, msg := keyfile.TemplateError(err)
		_, unfill := p.exp.Replacers()
		msg = unfill.Replace(msg)
		switch _, hasVector := data.(vectorData); {
		case strings.Contains(msg, "can't evaluate field Vector"):
			msg = ".Vector is the embedding of an embed: section, and this file has none"
		case strings.Contains(msg, "can't evaluate field") && hasVector:
			msg += " (fields: .Query, .QueryID, .K, .Tags, .Vector)"
		case strings.Contains(msg, "can't evaluate field"):
			msg += " (fields: .Query, .QueryID, .K, .Tags)"
		}
		p.bad(t.at.FileLine(tl), t.key, "template does not run: %s", msg)
		return "", false
	}
	if u, ok := render(r.url); ok {
		p.checkURL(r.url, u, data)
	}
	contentType := "application/json"
	for _, h := range r.headers {
		v, ok := render(h.value)
		if !ok {
			continue
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			p.bad(h.value.at.Line, h.value.key, "the value holds a line break or NUL once rendered")
		}
		if strings.EqualFold(h.name, "Content-Type") {
			contentType = v
		}
	}
	if r.body == nil {
		return
	}
	body, ok := render(r.body)
	if !ok || !isJSONType(contentType) {
		return
	}
	if err := json.Unmarshal([]byte(body), new(any)); err != nil {
		p.bad(r.body.at.Line, r.body.key, "not valid JSON for the sample query %s (%v): insert text with {{json .Query}}, not \"{{.Query}}\"", strconv.Quote(sampleQuery.Query), err)
	}
}

func (p *parser) checkURL(t *tmpl, u string, data any) {
	var unfilled strings.Builder // environment values left out: they are the user's to escape
	_ = t.t.Execute(&unfilled, data)
	pu, err := url.Parse(u)
	switch {
	case err != nil:
		p.bad(t.at.Line, t.key, "not a URL once rendered: %v", err)
	case pu.Scheme != "http" && pu.Scheme != "https":
		p.bad(t.at.Line, t.key, "want an http:// or https:// URL, got scheme %q", pu.Scheme)
	case pu.Host == "":
		p.bad(t.at.Line, t.key, "the URL has no host")
	case strings.ContainsAny(unfilled.String(), " \"\\"):
		p.bad(t.at.Line, t.key, "the URL does not escape the query text %s: use {{.Query | urlquery}}", strconv.Quote(sampleQuery.Query))
	}
}

// isJSONType reports whether a Content-Type is JSON (application/json,
// application/x-ndjson, application/vnd.api+json, …).
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return strings.HasSuffix(mt, "/json") || strings.HasSuffix(mt, "+json")
}
