package retriever

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/evalgate/evalgate/internal/secret"
)

// Defaults and bounds of the retriever file's settings.
const (
	DefaultK             = 100
	DefaultConcurrency   = 4
	DefaultTimeout       = 10 * time.Second
	DefaultRetries       = 3
	DefaultMaxRetryAfter = time.Minute

	MaxK           = 100_000
	MaxConcurrency = 4096
	MaxRetries     = 100
	MaxRate        = 1e6
	MaxTimeout     = time.Hour
)

// Config is a parsed retriever file: how to ask one HTTP JSON search
// endpoint for the ranked hits of a query. Clients read it concurrently:
// do not change it once a Client uses it.
//
// Values that came from the environment (${VAR}) are secrets: they are
// kept only in unexported fields, and nothing the package returns —
// errors, String, answers' error excerpts — holds them (see Redact).
type Config struct {
	// File names the file in errors, as the user gave it.
	File string
	// Source is the file exactly as written, ${VAR} references
	// unexpanded: what a coordinator ships to remote workers, which Parse
	// it with their own environment. Secrets never travel with it.
	Source []byte

	K             int           // hits asked for per query (k:)
	Concurrency   int           // requests in flight per client (concurrency:)
	Rate          float64       // requests per second across the job; 0 = unlimited (rate:)
	Timeout       time.Duration // per attempt, request sent to answer read (timeout:)
	Retries       int           // retries after the first attempt (retries:)
	MaxRetryAfter time.Duration // longest Retry-After honoured (max_retry_after:)

	search  request
	embed   *request // nil without an embed: section
	results Path
	// resultsOptional: an answer that leaves out the last key of results,
	// or sets it to null, holds no hits.
	resultsOptional bool
	id              Path
	score           Path
	hasScore        bool
	idMatch         *regexp.Regexp
	lines           map[string]int // file line of each key ("results", "embed.url", …)
	redact          *secret.Redactor
}

// request is one HTTP request of a query: the search request, or the
// embeddings request that precedes it.
type request struct {
	prefix  string // "" for the search request, "embed." for the embed one
	method  string
	urlText string // the url as written (placeholders unexpanded)
	url     *tmpl
	headers []header
	body    *tmpl // nil for GET
	vector  Path  // embed only: where the embedding is in the answer
}

type header struct {
	name  string
	value *tmpl
}

// Load reads and parses a retriever file. env looks up environment
// variables (nil means os.LookupEnv). Errors are *schema.InputError (or a
// schema.ErrorList of them) naming the file, line and key.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read retriever file: %w", err)
	}
	return Parse(path, data, env)
}

// Parse parses a retriever file held in data; file names it in errors.
// env looks up environment variables (nil means os.LookupEnv). Parse
// checks everything it can without a network: keys, types, ranges, that
// every template parses and renders for a sample query (a URL that
// escapes the query, header values without line breaks, a JSON body that
// stays valid JSON when the query holds quotes), and that every ${VAR} is
// set.
func Parse(file string, data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	p := newParser(file, data, env)
	return p.parse()
}

// Digest identifies the file by content: the hex SHA-256 of Source.
func (c *Config) Digest() string {
	sum := sha256.Sum256(c.Source)
	return hex.EncodeToString(sum[:])
}

// Redact replaces every value that came from the environment in s (also
// URL- and JSON-escaped) by "[redacted]". Use it on anything derived from
// a request or an answer before it is logged, stored or shown: servers
// echo headers back.
func (c *Config) Redact(s string) string {
	if c == nil {
		return s
	}
	return c.redact.Replace(s)
}

// HasEmbed reports whether each query first asks an embeddings service.
func (c *Config) HasEmbed() bool { return c.embed != nil }

// Line returns the file line of a key ("url", "results", "embed.vector",
// …), or 0 when the file does not set it.
func (c *Config) Line(key string) int { return c.lines[key] }

// String describes the retriever without secrets: the URL as written,
// ${VAR} references unexpanded.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "retriever %s: %s %s", c.File, c.search.method, c.search.urlText)
	if c.embed != nil {
		fmt.Fprintf(&b, " after %s %s", c.embed.method, c.embed.urlText)
	}
	rate := "unlimited"
	if c.Rate > 0 {
		rate = strconv.FormatFloat(c.Rate, 'g', -1, 64) + "/s"
	}
	fmt.Fprintf(&b, " (k %d, concurrency %d, rate %s, timeout %s, retries %d)", c.K, c.Concurrency, rate, c.Timeout, c.Retries)
	return b.String()
}

// GoString is String: %#v must not print secrets either.
func (c Config) GoString() string { return c.String() }
