// Package httpcall holds what the clients of external HTTP services —
// the retriever under test (package retriever), an LLM judge (package
// llm) — share: a Sender that makes one attempt of a request within a
// concurrency bound, a rate Limiter and a timeout, and classifies how it
// failed; full-jitter backoff; Retry-After parsing; and excerpts of
// answers with secrets redacted.
//
// The retry loop itself stays with each client: what may be retried, and
// what an answer means, is theirs to decide.
//
// Nothing here starts a goroutine; every wait ends with its context.
package httpcall
