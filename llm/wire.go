package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/evalgate/evalgate/internal/keyfile"
)

// The OpenAI chat completions wire format, as far as judging uses it.

// message is one chat message.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatRequest is the body of POST {base_url}/chat/completions.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	Temperature         float64         `json:"temperature"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	ResponseFormat      json.RawMessage `json:"response_format,omitempty"`
}

// chatResponse is the part of a chat completion judging reads.
type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// renderError is a template that failed for a pair.
type renderError struct {
	key string // "prompt" or "system"
	err error
}

func (e *renderError) Error() string { return e.err.Error() }

// messages renders the chat messages of a pair: the system prompt, if
// any, then the prompt.
func (c *Config) messages(p Pair) ([]message, error) {
	msgs := make([]message, 0, 4)
	if c.system != nil {
		var b strings.Builder
		if err := c.system.Execute(&b, p); err != nil {
			return nil, &renderError{"system", err}
		}
		msgs = append(msgs, message{"system", b.String()})
	}
	var b strings.Builder
	b.Grow(len(c.promptText) + len(p.Query) + len(p.Title) + len(p.Passage))
	if err := c.prompt.Execute(&b, p); err != nil {
		return nil, &renderError{"prompt", err}
	}
	return append(msgs, message{"user", b.String()}), nil
}

// body encodes the request for messages.
func (c *Config) body(msgs []message) ([]byte, error) {
	r := chatRequest{Model: c.Model, Messages: msgs, Temperature: c.Temperature, Seed: c.seed}
	if c.maxTokensField == "max_completion_tokens" {
		r.MaxCompletionTokens = c.MaxTokens
	} else {
		r.MaxTokens = c.MaxTokens
	}
	switch c.responseFormat {
	case FormatJSONObject:
		r.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
	case FormatJSONSchema:
		r.ResponseFormat = gradeSchema(c.MaxGrade)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	if len(c.extraBody) > 0 {
		out = append(out[:len(out)-1], ',')
		out = append(out, c.extraBody...)
		out = append(out, '}')
	}
	return out, nil
}

// templateFault returns the key, template line and message of a
// template that failed to render.
func templateFault(err error) (key string, line int, msg string) {
	var re *renderError
	if !errors.As(err, &re) {
		return "prompt", 0, err.Error()
	}
	line, msg = keyfile.TemplateError(re.err)
	return re.key, line, msg
}
