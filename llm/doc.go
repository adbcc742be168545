// Package llm grades (query, document) pairs with a language model behind
// any OpenAI-compatible chat completions API — OpenAI, Azure OpenAI, vLLM,
// Ollama, llama.cpp, LiteLLM — as an LLM file describes
// (docs/judging.md). It fills the holes of a gold set: documents a run
// ranks that no human judged. It is used in-process and inside workers,
// and knows nothing of the queue, the cache or the gold set.
//
// # The LLM file
//
// Parse and Load read a YAML file: the server (base_url; requests go to
// {base_url}/chat/completions, base_url's query kept), the model, an
// api_key sent as Authorization: Bearer, headers, how to send
// (concurrency, rate, timeout, retries, max_retry_after), what to ask
// (temperature, default 0; max_tokens with max_tokens_field; seed;
// system and prompt, Go text/templates over Pair with missingkey=error;
// max_grade; response_format text, json_object or json_schema;
// extra_body for members a server takes beyond these). Every error is a
// *schema.InputError naming the file, the line and the key.
//
// # Secrets
//
// ${VAR} and ${VAR:-default} in base_url, api_key and header values are
// read from the environment when the file is parsed ($$ is a dollar
// sign). Values that came from the environment, and the api_key however
// written, are secrets: Config.Source keeps the file as written, so
// shipping it to a worker ships no secret (the worker parses it with its
// own environment); errors, String, CallError texts, Attempt errors and
// reasons pass through Config.Redact.
//
// # Grades
//
// The default prompt (DefaultPrompt) grades on UMBRELA's 0–3 scale and
// asks for {"grade": N, "reason": "…"}. ParseGrade, a pure function,
// reads a grade from a JSON object (grade, relevance or score), a line
// "##final score: N", or a number alone; anything else, or a grade off
// the scale, is no grade. Judge asks once more after an answer without a
// grade, the answer and a reminder appended to the conversation, and
// returns a *GradeError if the second answer has none: a failed
// judgment, never a grade of 0. A Judgment records Model and
// PromptSHA256 (the hex SHA-256 of the prompt templates' source), its
// token Usage summed over every answer, its Latency and Attempts.
//
// # Failures
//
// Client.Judge holds a concurrency slot per attempt (not during
// backoff), waits on the Limiter before every attempt, bounds each attempt
// by the file's timeout, and retries 408, 409, 429 and 5xx answers and
// transport errors (timeouts, refused or reset connections, cut answers)
// up to retries times, with exponential backoff and full jitter, or after
// the answer's Retry-After-Ms or Retry-After when it has one (beyond
// max_retry_after the pair fails at once). A 429 whose code is
// insufficient_quota, other 4xx, and a 2xx that is not a chat completion
// are not retried. A request that gets no usable answer is a *CallError
// (status, the server's error message, type and code, the first 200
// bytes of the body, redacted) wrapping a sentinel that says why:
// ErrModelNotFound (the server does not serve the model),
// ErrEndpointNotFound, ErrUnauthorized, ErrQuota, ErrContextLength,
// ErrRejected, ErrMalformedAnswer, ErrTimeout, …. IsJobFatal tells
// which mean that every later request would fail too. Probe grades one
// small pair before a job, and turns the answers that show the file is
// wrong into a *schema.InputError naming the key.
//
// The client starts no goroutine; every wait ends with its context.
package llm
