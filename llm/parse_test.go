package llm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalgate/evalgate/schema"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var noEnv = envOf(nil)

// issueFile is the LLM file of issue 11, with a prompt.
const issueFile = `base_url: https://api.openai.com/v1     # any OpenAI-compatible server
model: gpt-4o-mini
api_key: ${OPENAI_API_KEY}
concurrency: 8        # requests in flight per worker
rate: 5               # requests per second across the job
timeout: 60s
retries: 4
prompt: |             # optional
  Query: {{.Query}}
  Document {{.DocID}}: {{.Title}}
  {{.Passage}}
  Grade 0-3 as JSON: {"grade": N}
`

func TestParseIssueExample(t *testing.T) {
	const key = "sk-proj-s3cr3tK3y"
	c, err := Parse("llm.yaml", []byte(issueFile), envOf(map[string]string{"OPENAI_API_KEY": key}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "gpt-4o-mini" || c.Concurrency != 8 || c.Rate != 5 || c.Timeout != 60*time.Second || c.Retries != 4 {
		t.Errorf("settings: %v", c)
	}
	if c.Temperature != 0 || c.MaxTokens != DefaultMaxTokens || c.MaxGrade != 3 || c.MaxRetryAfter != DefaultMaxRetryAfter {
		t.Errorf("defaults: temperature %v, max_tokens %d, max_grade %d", c.Temperature, c.MaxTokens, c.MaxGrade)
	}
	if c.url != "https://api.openai.com/v1/chat/completions" || c.apiKey != key {
		t.Errorf("url %s", c.url)
	}
	prompt, system := c.Prompt()
	if !strings.HasPrefix(prompt, "Query: {{.Query}}\n") || system != "" {
		t.Errorf("prompt %q, system %q", prompt, system)
	}
	if c.PromptSHA256 != promptSHA256("", prompt) || c.PromptSHA256 == DefaultPromptSHA256 || len(c.PromptSHA256) != 64 {
		t.Errorf("prompt sha256 %s", c.PromptSHA256)
	}
	if string(c.Source) != issueFile || len(c.Digest()) != 64 {
		t.Error("Source is not the file as written")
	}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, *c)} {
		if strings.Contains(s, "s3cr3t") {
			t.Errorf("shows the key: %s", s)
		}
	}
	if !strings.Contains(c.String(), "model gpt-4o-mini at https://api.openai.com/v1") {
		t.Errorf("String = %s", c)
	}
	if got := c.Redact(`{"auth": "Bearer sk-proj-s3cr3tK3y"}`); got != `{"auth": "Bearer [redacted]"}` {
		t.Errorf("Redact = %s", got)
	}
	if c.Line("prompt") != 8 || c.Line("model") != 2 {
		t.Errorf("lines: prompt %d, model %d", c.Line("prompt"), c.Line("model"))
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse("llm.yaml", []byte("base_url: http://localhost:11434/v1/\nmodel: qwen2.5:7b-instruct\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Concurrency != DefaultConcurrency || c.Rate != 0 || c.Timeout != DefaultTimeout || c.Retries != DefaultRetries ||
		c.MaxTokens != DefaultMaxTokens || c.maxTokensField != "max_tokens" || c.responseFormat != FormatText || c.seed != nil {
		t.Errorf("defaults: %v", c)
	}
	if c.url != "http://localhost:11434/v1/chat/completions" || c.apiKey != "" || len(c.headers) != 0 {
		t.Errorf("url %s, key %q", c.url, c.apiKey)
	}
	if prompt, _ := c.Prompt(); prompt != DefaultPrompt || c.PromptSHA256 != DefaultPromptSHA256 {
		t.Error("not the default prompt")
	}
}

// TestDefaultPromptSHA256 pins the default prompt: changing its text
// changes every cached judgment's key, so it must be a deliberate act
// (update the constant here and say so in docs/judging.md).
func TestDefaultPromptSHA256(t *testing.T) {
	const want = "ea59a25b1f878f525bd761a8f53032515a387148b60e5b999f13fe0e8eae80e4"
	if DefaultPromptSHA256 != want {
		t.Errorf("DefaultPromptSHA256 = %s, want %s", DefaultPromptSHA256, want)
	}
}

func TestParseAzureShapes(t *testing.T) {
	env := envOf(map[string]string{"AZURE_OPENAI_API_KEY": "azk3y", "AZURE_RESOURCE": "myres"})
	// The classic deployments API: base_url holds the api-version query.
	c, err := Parse("azure.yaml", []byte(`base_url: https://${AZURE_RESOURCE}.openai.azure.com/openai/deployments/gpt-4o-mini?api-version=2024-10-21
model: gpt-4o-mini
headers:
  api-key: ${AZURE_OPENAI_API_KEY}
`), env)
	if err != nil {
		t.Fatal(err)
	}
	if c.url != "https://myres.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21" {
		t.Errorf("url %s", c.url)
	}
	if len(c.headers) != 1 || c.headers[0] != (header{"api-key", "azk3y"}) {
		t.Errorf("headers %v", c.headers)
	}
	if got := c.Redact("https://myres.openai.azure.com azk3y"); got != "https://[redacted].openai.azure.com [redacted]" {
		t.Errorf("redact %q", got)
	}
}

func TestParseOptions(t *testing.T) {
	c, err := Parse("llm.yaml", []byte(`base_url: http://vllm:8000/v1
model: Qwen/Qwen3-8B
temperature: 0.3
max_tokens: 1024
max_tokens_field: max_completion_tokens
seed: 42
response_format: json_schema
system: You grade search results. Answer in JSON.
extra_body:
  chat_template_kwargs: {enable_thinking: false}
  top_p: 1
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Temperature != 0.3 || c.MaxTokens != 1024 || c.maxTokensField != "max_completion_tokens" || *c.seed != 42 || c.responseFormat != FormatJSONSchema {
		t.Errorf("options: %v", c)
	}
	if string(c.extraBody) != `"chat_template_kwargs":{"enable_thinking":false},"top_p":1` {
		t.Errorf("extra body %s", c.extraBody)
	}
	_, system := c.Prompt()
	if c.PromptSHA256 != promptSHA256(system, DefaultPrompt) || c.PromptSHA256 == DefaultPromptSHA256 {
		t.Error("a system prompt does not change the prompt hash")
	}
}

// TestParseErrors: every error names the file, the line and the key.
func TestParseErrors(t *testing.T) {
	const base = "base_url: http://localhost:8000/v1\nmodel: m\n"
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		line  int64
		field string
		want  string
	}{
		{"empty", "", nil, 1, "", "empty LLM file: want at least base_url and model"},
		{"not a mapping", "- x\n", nil, 1, "", "want a mapping of keys (base_url, model, …)"},
		{"second document", base + "---\nmodel: n\n", nil, 3, "", "LLM files hold one"},
		{"unknown key", base + "modle: x\n", nil, 3, "modle", "unknown key"},
		{"repeated key", base + "model: n\n", nil, 3, "model", "repeated key (first at line 2)"},
		{"missing base_url", "model: m\n", nil, 1, "base_url", "missing"},
		{"missing model", "base_url: http://x/v1\n", nil, 1, "model", "missing"},
		{"base_url scheme", "base_url: localhost:8000/v1\nmodel: m\n", nil, 1, "base_url", "want an http:// or https:// URL"},
		{"base_url no host", "base_url: http:///v1\nmodel: m\n", nil, 1, "base_url", "no host"},
		{"base_url full path", "base_url: http://x/v1/chat/completions\nmodel: m\n", nil, 1, "base_url", "leave /chat/completions out"},
		{"base_url unset var", "base_url: ${VLLM_URL}\nmodel: m\n", nil, 1, "base_url", "environment variable VLLM_URL is not set"},
		{"model var", "base_url: http://x/v1\nmodel: ${MODEL}\n", nil, 2, "model", "not a ${VAR}"},
		{"model empty", "base_url: http://x/v1\nmodel: ''\n", nil, 2, "model", "empty model name"},
		{"api_key unset", base + "api_key: ${OPENAI_API_KEY}\n", nil, 3, "api_key", "environment variable OPENAI_API_KEY is not set or empty (write ${OPENAI_API_KEY:-default}"},
		{"concurrency", base + "concurrency: 0\n", nil, 3, "concurrency", "outside [1, 4096]"},
		{"rate", base + "rate: fast\n", nil, 3, "rate", "want a number of requests per second"},
		{"timeout unit", base + "timeout: 60\n", nil, 3, "timeout", "want a duration with a unit"},
		{"retries", base + "retries: -1\n", nil, 3, "retries", "outside [0, 100]"},
		{"temperature", base + "temperature: 3\n", nil, 3, "temperature", "outside [0, 2]"},
		{"max_tokens", base + "max_tokens: 0\n", nil, 3, "max_tokens", "outside"},
		{"max_tokens_field", base + "max_tokens_field: max_new_tokens\n", nil, 3, "max_tokens_field", "want one of max_tokens, max_completion_tokens"},
		{"response_format", base + "response_format: json\n", nil, 3, "response_format", "want one of text, json_object, json_schema"},
		{"seed", base + "seed: 1.5\n", nil, 3, "seed", "want a whole number"},
		{"max_grade without prompt", base + "max_grade: 4\n", nil, 3, "max_grade", "a scale of 0..4 needs a prompt"},
		{"headers list", base + "headers: [a]\n", nil, 3, "headers", "want a mapping"},
		{"header name", base + "headers:\n  'bad name': x\n", nil, 4, "headers", "invalid header name"},
		{"header twice", base + "headers:\n  api-key: a\n  API-Key: b\n", nil, 5, "headers.API-Key", "repeated header (first at line 4)"},
		{"header and api_key", base + "api_key: k\nheaders:\n  Authorization: Bearer x\n", nil, 5, "headers.Authorization", "set one or the other"},
		{"header content type", base + "headers:\n  Content-Type: text/plain\n", nil, 4, "headers.Content-Type", "sets Content-Type itself"},
		{"header line break", base + "headers:\n  X-A: ${A}\n", map[string]string{"A": "a\nb"}, 4, "headers.X-A", "line break"},
		{"extra_body list", base + "extra_body: [1]\n", nil, 3, "extra_body", "want a mapping"},
		{"extra_body owned", base + "extra_body:\n  temperature: 1\n", nil, 4, "extra_body", `"temperature" is set by the key temperature:`},
		{"extra_body stream", base + "extra_body:\n  stream: true\n", nil, 4, "extra_body", `evalgate sets "stream" itself`},
		{"prompt parse", base + "prompt: |\n  Query: {{.Query}}\n  Passage: {{.Passage}\n", nil, 5, "prompt", "template does not parse"},
		{"prompt field", base + "prompt: |\n  Query: {{.Query}}\n  Passage: {{.Passge}}\n", nil, 5, "prompt", "can't evaluate field Passge in type llm.Pair (fields: .Query, .Passage, .Title, .QueryID, .DocID)"},
		{"prompt without passage", base + "prompt: 'Grade {{.Query}} 0-3'\n", nil, 3, "prompt", "does not show the model .Passage"},
		{"prompt without query", base + "prompt: 'Grade {{.Passage}} 0-3'\n", nil, 3, "prompt", "does not show the model .Query"},
		{"system field", base + "system: '{{.Nope}}'\n", nil, 3, "system", "can't evaluate field Nope"},
		{"json_object without json", base + "response_format: json_object\nprompt: 'Grade 0-3: {{.Query}} / {{.Passage}}'\n", nil, 3, "response_format", "asks for JSON"},
		{"truncate negative", base + "prompt: '{{.Query}} {{truncate -1 .Passage}}'\n", nil, 3, "prompt", "negative length"},
	}
	for _, tc := range tests {
		_, err := Parse("llm.yaml", []byte(tc.file), envOf(tc.env))
		var ie *schema.InputError
		if !errors.As(err, &ie) || !schema.IsInvalidInput(err) {
			t.Errorf("%s: error %v (%T)", tc.name, err, err)
			continue
		}
		if ie.File != "llm.yaml" || ie.Line != tc.line || ie.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v\nwant line %d field %q saying %q", tc.name, err, tc.line, tc.field, tc.want)
		}
	}
}

// TestParseErrorsRedacted: a secret in a bad value is not shown.
func TestParseErrorsRedacted(t *testing.T) {
	env := envOf(map[string]string{"URL": "ftp://user:pw-s3cr3t@host/v1"})
	_, err := Parse("llm.yaml", []byte("base_url: ${URL}\nmodel: m\n"), env)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "${URL}") {
		t.Errorf("error %v", err)
	}
}

func TestParseCollectsErrors(t *testing.T) {
	_, err := Parse("llm.yaml", []byte("base_url: nope\nmodel: m\nconcurrency: 0\ntimeout: x\n"), noEnv)
	var list *schema.ErrorList
	if !errors.As(err, &list) || list.Len() != 3 {
		t.Errorf("error %v, want 3 problems", err)
	}
}

func TestTruncateFunc(t *testing.T) {
	for _, tc := range []struct {
		n    int
		s    string
		want string
	}{{3, "héllo", "hél"}, {10, "héllo", "héllo"}, {0, "x", ""}} {
		if got, err := truncateFunc(tc.n, tc.s); err != nil || got != tc.want {
			t.Errorf("truncate %d %q = %q %v", tc.n, tc.s, got, err)
		}
	}
}
