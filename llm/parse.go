package llm

import (
	"bytes"
	"encoding/json"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalgate/evalgate/internal/httpcall"
	"github.com/evalgate/evalgate/internal/keyfile"
	"github.com/evalgate/evalgate/internal/secret"
)

// topKeys are the keys of an LLM file.
var topKeys = []string{
	"base_url", "model", "api_key", "headers",
	"concurrency", "rate", "timeout", "retries", "max_retry_after",
	"temperature", "max_tokens", "max_tokens_field", "seed",
	"system", "prompt", "max_grade", "response_format", "extra_body",
}

// extraOwned are the request members extra_body may not set, with the
// key that sets each ("" for those evalgate always sets).
var extraOwned = map[string]string{
	"model": "model", "messages": "prompt", "temperature": "temperature",
	"max_tokens": "max_tokens", "max_completion_tokens": "max_tokens",
	"response_format": "response_format", "seed": "seed",
	"stream": "", "n": "", "stream_options": "",
}

// Two sample pairs that differ in every field: a prompt must render
// differently for each, or it does not show the model the query or the
// passage.
var samplePairs = [2]Pair{
	{QueryID: "sample-q1", Query: "how do vaccines train the immune system", DocID: "sample-d1", Title: "Vaccines", Passage: "Vaccines expose the immune system to a harmless antigen."},
	{QueryID: "sample-q2", Query: "what causes ocean tides", DocID: "sample-d2", Title: "Tides", Passage: "Tides are caused by the gravitational pull of the moon."},
}

// parser parses one LLM file.
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
			Concurrency: DefaultConcurrency, Timeout: DefaultTimeout, Retries: DefaultRetries,
			MaxRetryAfter: DefaultMaxRetryAfter, Temperature: DefaultTemperature, MaxTokens: DefaultMaxTokens,
			MaxGrade: DefaultMaxGrade, maxTokensField: DefaultMaxTokensField, responseFormat: FormatText,
		},
	}
}

func (p *parser) parse() (*Config, error) {
	f, root, err := keyfile.Decode(p.file, p.data, "LLM file", []string{"base_url", "model"})
	if err != nil {
		return nil, err
	}
	p.f = f
	f.Redact = func(s string) string { return p.exp.Redactor().Replace(s) }
	c := p.cfg
	c.lines = f.Lines()
	f.Mapping(root, "", topKeys)
	for _, key := range []string{"base_url", "model"} {
		if f.Node(key) == nil {
			f.Bad(1, key, "missing: an LLM file needs base_url and model")
		}
	}
	f.Int("concurrency", 1, MaxConcurrency, &c.Concurrency)
	f.Int("retries", 0, MaxRetries, &c.Retries)
	f.Rate("rate", MaxRate, &c.Rate)
	f.Duration("timeout", time.Millisecond, MaxTimeout, &c.Timeout)
	f.Duration("max_retry_after", 0, 24*time.Hour, &c.MaxRetryAfter)
	f.Float("temperature", 0, MaxTemperature, &c.Temperature)
	f.Int("max_tokens", 1, MaxMaxTokens, &c.MaxTokens)
	f.Int("max_grade", 1, MaxMaxGrade, &c.MaxGrade)
	p.choice("max_tokens_field", []string{"max_tokens", "max_completion_tokens"}, &c.maxTokensField)
	p.choice("response_format", []string{FormatText, FormatJSONObject, FormatJSONSchema}, &c.responseFormat)
	p.seed()
	p.baseURL()
	p.model()
	p.apiKey()
	p.headers()
	p.extraBody()
	p.templates()
	if err := f.Err(); err != nil {
		return nil, err
	}
	c.redact = p.exp.Redactor()
	p.check()
	if err := f.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// choice reads a value that must be one of a list.
func (p *parser) choice(key string, choices []string, dst *string) {
	s, line, ok := p.f.Scalar(key)
	if !ok {
		return
	}
	if !slices.Contains(choices, s) {
		p.f.Bad(line, key, "want one of %s, got %q", strings.Join(choices, ", "), s)
		return
	}
	*dst = s
}

func (p *parser) seed() {
	s, line, ok := p.f.Scalar("seed")
	if !ok {
		return
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.f.Bad(line, "seed", "want a whole number, got %q", s)
		return
	}
	p.cfg.seed = &x
}

// baseURL reads base_url: an http(s) URL, the API root requests go
// below ({base_url}/chat/completions), its query kept.
func (p *parser) baseURL() {
	s, line, ok := p.f.Scalar("base_url")
	if !ok {
		return
	}
	p.cfg.baseURLText = s
	v, rerr := p.exp.Expand(s)
	if rerr != nil {
		p.f.Bad(line, "base_url", "%s", rerr.Msg)
		return
	}
	u, err := url.Parse(strings.TrimSpace(v))
	switch {
	case err != nil:
		p.f.Bad(line, "base_url", "not a URL: %v", err)
		return
	case u.Scheme != "http" && u.Scheme != "https":
		p.f.Bad(line, "base_url", "want an http:// or https:// URL, got %q", s)
		return
	case u.Host == "":
		p.f.Bad(line, "base_url", "the URL has no host")
		return
	case u.Fragment != "":
		p.f.Bad(line, "base_url", "the URL has a #fragment")
		return
	case strings.HasSuffix(cleanPath(u.Path), "/chat/completions"):
		p.f.Bad(line, "base_url", "base_url is the API root (such as https://api.openai.com/v1): requests go to {base_url}/chat/completions, so leave /chat/completions out")
		return
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			p.exp.Add(pw)
		}
	}
	u.Path, u.RawPath = cleanPath(u.Path)+"/chat/completions", ""
	p.cfg.url = u.String()
}

func (p *parser) model() {
	s, line, ok := p.f.Scalar("model")
	if !ok {
		return
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		p.f.Bad(line, "model", "empty model name")
	case strings.Contains(s, "${"):
		p.f.Bad(line, "model", "write the model name itself, not a ${VAR}: judgments record it, and every worker must ask the same model")
	default:
		p.cfg.Model = s
	}
}

// apiKey reads api_key, sent as Authorization: Bearer. Its value is a
// secret wherever it comes from.
func (p *parser) apiKey() {
	s, line, ok := p.f.Scalar("api_key")
	if !ok {
		return
	}
	v, rerr := p.exp.Expand(s)
	if rerr != nil {
		p.f.Bad(line, "api_key", "%s", rerr.Msg)
		return
	}
	p.exp.Add(v)
	if strings.ContainsAny(v, "\r\n\x00") {
		p.f.Bad(line, "api_key", "the key holds a line break or NUL")
		return
	}
	p.cfg.apiKey = v
}

// headers reads headers: a mapping of names to values, ${VAR} expanded.
func (p *parser) headers() {
	n := p.f.Node("headers")
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.f.Bad(n.Line, "headers", "want a mapping of header names to values")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := keyfile.Resolve(n.Content[i]), keyfile.Resolve(n.Content[i+1])
		key := "headers." + k.Value
		lower := strings.ToLower(k.Value)
		switch {
		case k.Kind != yaml.ScalarNode || !httpcall.ValidHeaderName(k.Value):
			p.f.Bad(k.Line, "headers", "invalid header name %q", k.Value)
			continue
		case seen[lower] > 0:
			p.f.Bad(k.Line, key, "repeated header (first at line %d)", seen[lower])
			continue
		case v.Kind != yaml.ScalarNode || v.Tag == "!!null":
			p.f.Bad(v.Line, key, "want a header value")
			continue
		case lower == "authorization" && p.f.Node("api_key") != nil:
			p.f.Bad(k.Line, key, "api_key sets Authorization: Bearer; set one or the other")
			continue
		case lower == "content-type" || lower == "content-length":
			p.f.Bad(k.Line, key, "evalgate sets %s itself", k.Value)
			continue
		}
		seen[lower] = k.Line
		p.f.Set(key, k, v)
		val, rerr := p.exp.Expand(v.Value)
		if rerr != nil {
			p.f.Bad(v.Line, key, "%s", rerr.Msg)
			continue
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			p.f.Bad(v.Line, key, "the value holds a line break or NUL")
			continue
		}
		if lower == "host" {
			p.cfg.host = val
			continue
		}
		p.cfg.headers = append(p.cfg.headers, header{k.Value, val})
	}
}

// extraBody reads extra_body: members added to every request, for what a
// server takes beyond the common ones (vLLM's chat_template_kwargs,
// OpenAI's reasoning_effort, Ollama's options …).
func (p *parser) extraBody() {
	n := p.f.Node("extra_body")
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.f.Bad(n.Line, "extra_body", "want a mapping of request members, such as chat_template_kwargs: {enable_thinking: false}")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := keyfile.Resolve(n.Content[i])
		if owner, owned := extraOwned[k.Value]; owned {
			if owner == "" {
				p.f.Bad(k.Line, "extra_body", "evalgate sets %q itself", k.Value)
			} else {
				p.f.Bad(k.Line, "extra_body", "%q is set by the key %s:, not in extra_body", k.Value, owner)
			}
			return
		}
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		p.f.Bad(n.Line, "extra_body", "%v", err)
		return
	}
	b, err := json.Marshal(m)
	if err != nil {
		p.f.Bad(n.Line, "extra_body", "not expressible as JSON: %v", err)
		return
	}
	if inner := b[1 : len(b)-1]; len(inner) > 0 {
		p.cfg.extraBody = inner
	}
}

// templates parses system and prompt.
func (p *parser) templates() {
	c := p.cfg
	c.promptText = DefaultPrompt
	if s, _, ok := p.f.Scalar("prompt"); ok {
		c.promptText = s
	}
	c.prompt = p.template("prompt", c.promptText)
	if s, _, ok := p.f.Scalar("system"); ok {
		c.systemText = s
		c.system = p.template("system", s)
	}
	c.PromptSHA256 = promptSHA256(c.systemText, c.promptText)
	c.positions = map[string]keyfile.Position{}
	for _, key := range []string{"system", "prompt"} {
		if p.f.Node(key) != nil {
			c.positions[key] = p.position(key)
		}
	}
	if c.MaxGrade != DefaultMaxGrade && p.f.Node("prompt") == nil {
		p.f.Bad(p.f.Line("max_grade"), "max_grade", "the default prompt grades 0..3: a scale of 0..%d needs a prompt: that asks for it", c.MaxGrade)
	}
}

// template parses one template; errors name the file line of the
// template line at fault. A key the file does not set is the default
// prompt, which always parses.
func (p *parser) template(key, text string) *template.Template {
	t, err := template.New(key).Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err == nil {
		return t
	}
	tl, msg := keyfile.TemplateError(err)
	p.f.Bad(p.position(key).FileLine(tl), key, "template does not parse: %s", msg)
	return nil
}

// position returns where a template key's text starts in the file.
func (p *parser) position(key string) keyfile.Position {
	if v := p.f.Node(key); v != nil {
		return keyfile.PositionOf(v)
	}
	return keyfile.Position{Line: 1}
}

// check renders the templates for the two sample pairs: they must run,
// and show the model both the query and the passage.
func (p *parser) check() {
	c := p.cfg
	var rendered [2]string
	for i, pair := range samplePairs {
		msgs, err := c.messages(pair)
		if err != nil {
			key, tl, msg := templateFault(err)
			if strings.Contains(msg, "can't evaluate field") {
				msg += " (fields: .Query, .Passage, .Title, .QueryID, .DocID)"
			}
			p.f.Bad(p.position(key).FileLine(tl), key, "template does not run: %s", msg)
			return
		}
		for _, m := range msgs {
			rendered[i] += m.Content + "\n"
		}
	}
	key := "prompt"
	if strings.TrimSpace(rendered[0]) == "" {
		p.f.Bad(p.position(key).Line, key, "the prompt renders empty")
		return
	}
	for _, field := range []string{"Query", "Passage"} {
		a, b := samplePairs[0], samplePairs[0]
		if field == "Query" {
			b.Query = samplePairs[1].Query
		} else {
			b.Passage = samplePairs[1].Passage
		}
		ma, _ := c.messages(a)
		mb, _ := c.messages(b)
		if slices.Equal(ma, mb) {
			p.f.Bad(p.position(key).Line, key, "the prompt does not show the model .%s: the grade would not depend on it", field)
		}
	}
	if c.responseFormat == FormatJSONObject && !strings.Contains(strings.ToLower(rendered[0]), "json") {
		p.f.Bad(p.f.Line("response_format"), "response_format", "json_object needs a prompt that asks for JSON (OpenAI refuses the request otherwise)")
	}
}

// cleanPath cleans a URL path (a doubled slash, as ${ENDPOINT}/openai
// gives when ENDPOINT ends with one) and drops its trailing slash.
func cleanPath(p string) string {
	p = path.Clean("/" + p)
	if p == "/" {
		return ""
	}
	return p
}
