package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"text/template"
	"time"

	"github.com/evalgate/evalgate/internal/keyfile"
	"github.com/evalgate/evalgate/internal/secret"
)

// Defaults and bounds of the LLM file's settings.
const (
	DefaultConcurrency    = 4
	DefaultTimeout        = 60 * time.Second
	DefaultRetries        = 4
	DefaultMaxRetryAfter  = time.Minute
	DefaultTemperature    = 0
	DefaultMaxTokens      = 256
	DefaultMaxGrade       = 3
	DefaultMaxTokensField = "max_tokens"

	MaxConcurrency = 4096
	MaxRetries     = 100
	MaxRate        = 1e6
	MaxTimeout     = time.Hour
	MaxTemperature = 2
	MaxMaxTokens   = 1 << 20
	MaxMaxGrade    = 10
)

// Response formats (response_format:).
const (
	FormatText       = "text"        // nothing sent: the prompt asks for the format
	FormatJSONObject = "json_object" // {"type": "json_object"}: any JSON object
	FormatJSONSchema = "json_schema" // a strict schema: {"grade": 0..max_grade, "reason": string}
)

// Config is a parsed LLM file: which OpenAI-compatible chat completions
// server and model grade the pairs, with which prompt, how fast. Clients
// read it concurrently: do not change it once a Client uses it.
//
// Values that came from the environment (${VAR}) and the api_key are
// secrets: they are kept only in unexported fields, and nothing the
// package returns — errors, String, CallError bodies — holds them (see
// Redact).
type Config struct {
	// File names the file in errors, as the user gave it.
	File string
	// Source is the file exactly as written, ${VAR} references
	// unexpanded: what a coordinator ships to remote workers, which Parse
	// it with their own environment. Secrets never travel with it unless
	// the file itself holds an api_key.
	Source []byte

	Model         string        // the model asked (model:); judgments record it
	Concurrency   int           // requests in flight per client (concurrency:)
	Rate          float64       // requests per second across the job; 0 = unlimited (rate:)
	Timeout       time.Duration // per attempt, request sent to answer read (timeout:)
	Retries       int           // retries after the first attempt (retries:)
	MaxRetryAfter time.Duration // longest Retry-After honoured (max_retry_after:)
	Temperature   float64       // sampling temperature (temperature:)
	MaxTokens     int           // bound of each answer, in tokens (max_tokens:)
	MaxGrade      int           // the scale is 0..MaxGrade (max_grade:)
	// PromptSHA256 identifies the prompt: the hex SHA-256 of the prompt
	// template's source, or, with a system prompt, of the system prompt's
	// source, a NUL byte and the prompt's. Judgments record it; a cache of
	// judgments is keyed by it and Model.
	PromptSHA256 string

	baseURLText    string // base_url as written (placeholders unexpanded)
	url            string // {base_url}/chat/completions, base_url's query kept
	apiKey         string
	headers        []header
	host           string // a Host header, if the file sets one
	systemText     string
	promptText     string
	system         *template.Template // nil without system:
	prompt         *template.Template
	maxTokensField string
	responseFormat string
	seed           *int64
	extraBody      []byte // the members of extra_body, "," joined, without braces
	lines          map[string]int
	positions      map[string]keyfile.Position // of system and prompt, when the file sets them
	redact         *secret.Redactor
}

type header struct{ name, value string }

// Load reads and parses an LLM file. env looks up environment variables
// (nil means os.LookupEnv). Errors are *schema.InputError (or a
// schema.ErrorList of them) naming the file, line and key.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read LLM file: %w", err)
	}
	return Parse(path, data, env)
}

// Parse parses an LLM file held in data; file names it in errors. env
// looks up environment variables (nil means os.LookupEnv). Parse checks
// everything it can without a network: keys, types, ranges, the
// base_url, that every ${VAR} is set, that the prompt templates parse and
// render a sample pair whose query and passage reach the model, and that
// extra_body does not set what other keys own.
func Parse(file string, data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	return newParser(file, data, env).parse()
}

// Digest identifies the file by content: the hex SHA-256 of Source.
func (c *Config) Digest() string {
	sum := sha256.Sum256(c.Source)
	return hex.EncodeToString(sum[:])
}

// Redact replaces every secret in s (also URL- and JSON-escaped) by
// "[redacted]". Use it on anything derived from a request or an answer
// before it is logged, stored or shown.
func (c *Config) Redact(s string) string {
	if c == nil {
		return s
	}
	return c.redact.Replace(s)
}

// Line returns the file line of a key ("model", "prompt", "headers.api-key",
// …), or 0 when the file does not set it.
func (c *Config) Line(key string) int { return c.lines[key] }

// Prompt returns the prompt template's source (DefaultPrompt when the
// file sets none) and the system prompt's ("" when none).
func (c *Config) Prompt() (prompt, system string) { return c.promptText, c.systemText }

// String describes the LLM without secrets: the base_url as written,
// ${VAR} references unexpanded.
func (c Config) String() string {
	rate := "unlimited"
	if c.Rate > 0 {
		rate = strconv.FormatFloat(c.Rate, 'g', -1, 64) + "/s"
	}
	return fmt.Sprintf("LLM %s: model %s at %s (concurrency %d, rate %s, timeout %s, retries %d, temperature %g, %s %d, grades 0..%d, prompt sha256 %s)",
		c.File, c.Model, c.baseURLText, c.Concurrency, rate, c.Timeout, c.Retries, c.Temperature, c.maxTokensField, c.MaxTokens, c.MaxGrade, shortHash(c.PromptSHA256))
}

// GoString is String: %#v must not print secrets either.
func (c Config) GoString() string { return c.String() }

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
