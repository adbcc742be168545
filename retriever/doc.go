// Package retriever asks a retriever under test — any HTTP JSON search
// endpoint — for the ranked hits of gold queries, as a retriever file
// describes (docs/retrievers.md). It is used in-process by `score` and
// inside workers, and knows nothing of the queue.
//
// # The retriever file
//
// Parse and Load read a YAML file: the request (url, method, headers,
// body: Go text/template with .Query, .QueryID, .K, .Tags and the
// functions json and urlquery, missingkey=error), where the hits are in
// the answer (results, id, score: paths such as hits.hits, _id,
// root.children, data.Get.Chunk, [0].items; results_optional for engines
// that leave out an empty list; id_match to keep part of an id), and how
// to send (k, concurrency, rate, timeout, retries, max_retry_after). An
// optional embed: section first asks an OpenAI-compatible embeddings
// service; the embedding is .Vector in the search request's templates.
// Every error is a *schema.InputError naming the file, the line and the
// key.
//
// # Secrets
//
// ${VAR} and ${VAR:-default} in url, headers and body are read from the
// environment when the file is parsed ($$ is a dollar sign). Values that
// came from the environment are secrets: Config.Source keeps the file as
// written, so shipping it to a worker ships no secret (the worker parses
// it with its own environment); errors, String, QueryError bodies and
// Attempt errors pass through Config.Redact. The values never enter
// template source: a value holding "{{" is not interpreted.
//
// # The ranking
//
// The ranking is the answer's list order, cut at k; scores are kept when
// the file names a score path but never reorder. A number id is kept as
// the exact JSON text ("42"). Fewer than k hits, or none, is a normal
// answer (Answer.Short).
//
// # Failures
//
// Client.Retrieve holds a concurrency slot per attempt (not during
// backoff), waits on the Limiter before every attempt, bounds each attempt
// by the file's timeout, and retries 408, 429, 5xx and transport errors
// (timeouts, refused or reset connections, truncated bodies) up to
// retries times, with exponential backoff and full jitter, or after the
// answer's Retry-After (seconds or an HTTP date) when it has one. A
// Retry-After beyond max_retry_after fails the query at once. Other 4xx
// are not retried, nor is a 2xx whose body is not JSON: a server that
// answered in full with something else answers the same again (a cut
// body is a transport error, and is retried). A failed query is a
// *QueryError (query id, attempts, last status, the first 200 bytes of
// the last body, redacted). An answer that does not fit the file's paths
// (no list at results, a hit without an id, a score that is not a
// number) is a configuration problem: a *schema.InputError wrapping
// ErrAnswerShape, on which callers stop the job. Probe sends one query
// before a job to find those early.
//
// The client starts no goroutine; every wait ends with its context.
package retriever
