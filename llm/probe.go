package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/evalgate/evalgate/schema"
)

// ProbePair is the pair Probe grades: short, and plainly relevant.
var ProbePair = Pair{
	QueryID: "evalgate-probe",
	Query:   "at what temperature does water boil at sea level",
	DocID:   "evalgate-probe",
	Title:   "Water",
	Passage: "At sea level, pure water boils at 100 °C (212 °F).",
}

// paramKeys maps a request member a server names as at fault (an OpenAI
// error's param) to the key of the LLM file that sets it.
var paramKeys = map[string]string{
	"model": "model", "messages": "prompt", "temperature": "temperature",
	"max_tokens": "max_tokens_field", "max_completion_tokens": "max_tokens_field",
	"response_format": "response_format", "seed": "seed",
}

// Probe grades ProbePair before a job starts, to find configuration
// problems with one small request. Besides Judge's errors, it turns an
// answer that shows the file is wrong into a *schema.InputError naming
// the key at fault (callers exit 2):
//   - model not served (ErrModelNotFound): model;
//   - HTTP 401 or 403 (ErrUnauthorized): api_key (or headers);
//   - no chat completions endpoint (ErrEndpointNotFound), a 2xx that is
//     not a chat completion, a connection that fails (refused, unknown
//     host, certificate): base_url;
//   - another 4xx (ErrRejected, ErrContextLength): the key of the
//     member the server names (max_tokens_field for an unsupported
//     max_tokens, response_format, …), else base_url;
//   - two answers without a grade: prompt, or max_tokens when the answer
//     was cut at max_tokens.
//
// Timeouts, 429 and 5xx after the retries, and a spent quota are
// returned as they are: the file may be right and the server busy.
func (c *Client) Probe(ctx context.Context) (Judgment, error) {
	j, err := c.Judge(ctx, ProbePair)
	if err == nil {
		return j, nil
	}
	var (
		ce  *CallError
		ge  *GradeError
		key string
	)
	switch {
	case errors.As(err, &ge):
		key = "prompt"
		if ge.FinishReason == "length" {
			key = "max_tokens"
		}
	case !errors.As(err, &ce):
		return j, err
	case errors.Is(ce, ErrModelNotFound):
		key = "model"
	case errors.Is(ce, ErrUnauthorized):
		key = "api_key"
		if c.cfg.lines["api_key"] == 0 && c.cfg.lines["headers"] != 0 {
			key = "headers"
		}
	case errors.Is(ce, ErrRejected), errors.Is(ce, ErrContextLength):
		key = paramKeys[ce.Param]
		if key == "" {
			key = "base_url"
		}
	case errors.Is(ce, ErrEndpointNotFound), errors.Is(ce, ErrMalformedAnswer):
		key = "base_url"
	case ce.Status == 0 && !errors.Is(ce, ErrTimeout) && !errors.Is(ce, ErrAnswerTooLarge):
		key = "base_url"
	default:
		return j, err
	}
	hint := ""
	switch {
	case key == "api_key" && c.cfg.lines["api_key"] == 0:
		hint = " (the file has no api_key: add api_key: ${OPENAI_API_KEY})"
	case key == "base_url" && errors.Is(ce, ErrEndpointNotFound):
		hint = " (requests go to {base_url}/chat/completions: does base_url end with /v1?)"
	}
	return j, &schema.InputError{File: c.cfg.File, Line: int64(max(c.cfg.lines[key], 1)), Field: key,
		Err: fmt.Errorf("probe the LLM%s: %w", hint, err)}
}
