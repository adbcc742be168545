// Package api is the HTTP JSON interface of the example retriever.
//
// # Endpoints
//
//	GET  /search?q=TEXT&k=N&mode=MODE
//	POST /search   {"query": "TEXT", "k": N, "mode": "MODE"}
//	GET  /healthz
//
// k defaults to DefaultK and may be 1..engine.MaxK; mode defaults to
// baseline (see package engine for the modes). A search answers 200 with
//
//	{"hits": [{"id": "d1", "score": 7.31, "title": "..."}, ...],
//	 "total": 1234, "mode": "baseline", "took_ms": 0.84}
//
// hits best first (the list order is the ranking), total the number of
// matching documents, took_ms the time the search took in the service.
// /healthz answers {"status": "ok", "docs": N}.
//
// Errors answer {"error": "..."} with 400 (a missing or bad parameter, an
// unknown parameter or key, a body that is not one JSON object), 404 (an
// unknown path), 405 (another method; Allow lists the right ones), 413 (a
// body over MaxBodyBytes) or 500 (the search failed).
package api
