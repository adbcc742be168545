package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/examples/retriever/internal/engine"
)

// Limits and defaults of a search request.
const (
	DefaultK       = 10
	MaxBodyBytes   = 1 << 20
	MaxQueryLength = 8192 // bytes
)

// Searcher is what the handler needs of the index. Search is called
// concurrently.
type Searcher interface {
	Search(ctx context.Context, q string, k int, m engine.Mode) (engine.Result, error)
	Stats() engine.Stats
}

// Handler serves the endpoints of the package documentation.
type Handler struct {
	s   Searcher
	log zerolog.Logger
}

// NewHandler returns a handler over s that logs each request at debug
// level (client errors at warn, server errors at error) to log.
func NewHandler(s Searcher, log zerolog.Logger) *Handler {
	return &Handler{s: s, log: log}
}

// request is one search, from either form.
type request struct {
	Query string `json:"query"`
	K     *int   `json:"k"`
	Mode  string `json:"mode"`
}

type hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
	Title string  `json:"title"`
}

type searchResponse struct {
	Hits   []hit   `json:"hits"`
	Total  uint64  `json:"total"`
	Mode   string  `json:"mode"`
	TookMS float64 `json:"took_ms"`
}

// statusError is an error answered with a status code.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &statusError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// ServeHTTP routes a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &recorder{ResponseWriter: w}
	ev := h.serve(rw, r)
	code := rw.code
	var e *zerolog.Event
	switch {
	case code >= 500:
		e = h.log.Error()
	case code >= 400:
		e = h.log.Warn()
	default:
		e = h.log.Debug()
	}
	e.Str("method", r.Method).Str("path", r.URL.Path).Int("status", code).
		Dur("took", time.Since(start)).Str("remote", r.RemoteAddr)
	if ev.mode != "" {
		e.Str("mode", ev.mode).Int("k", ev.k).Int("hits", ev.hits)
	}
	if ev.err != nil {
		e.Err(ev.err)
	}
	e.Msg("request")
}

// outcome is what a request log line reports.
type outcome struct {
	mode    string
	k, hits int
	err     error
}

func (h *Handler) serve(w *recorder, r *http.Request) outcome {
	switch r.URL.Path {
	case "/search":
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			return writeError(w, &statusError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s: want GET or POST", r.Method)})
		}
		return h.search(w, r)
	case "/healthz":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			return writeError(w, &statusError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s: want GET", r.Method)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "docs": h.s.Stats().Docs})
		return outcome{}
	}
	return writeError(w, &statusError{http.StatusNotFound, fmt.Sprintf("no endpoint %s: want /search or /healthz", r.URL.Path)})
}

func (h *Handler) search(w *recorder, r *http.Request) outcome {
	var req request
	var err error
	if r.Method == http.MethodPost {
		req, err = decodeBody(w, r)
	} else {
		req, err = decodeParams(r.URL.Query())
	}
	if err != nil {
		return writeError(w, err)
	}
	k := DefaultK
	if req.K != nil {
		k = *req.K
	}
	if k < 1 || k > engine.MaxK {
		return writeError(w, badRequest("k %d: want 1..%d", k, engine.MaxK))
	}
	mode := engine.Baseline
	if req.Mode != "" {
		if mode, err = engine.ParseMode(req.Mode); err != nil {
			return writeError(w, badRequest("%v", err))
		}
	}
	if strings.TrimSpace(req.Query) == "" {
		return writeError(w, badRequest("missing query: give q (GET) or \"query\" (POST)"))
	}
	if len(req.Query) > MaxQueryLength {
		return writeError(w, badRequest("query of %d bytes: want at most %d", len(req.Query), MaxQueryLength))
	}
	out := outcome{mode: string(mode), k: k}
	start := time.Now()
	res, err := h.s.Search(r.Context(), req.Query, k, mode)
	took := time.Since(start)
	if err != nil {
		out.err = err
		if r.Context().Err() != nil {
			// The client went away: nobody reads the answer.
			w.code = 499
			return out
		}
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return out
	}
	resp := searchResponse{Hits: make([]hit, len(res.Hits)), Total: res.Total, Mode: string(mode),
		TookMS: math.Round(float64(took.Microseconds())) / 1000}
	for i, x := range res.Hits {
		resp.Hits[i] = hit{ID: x.ID, Score: x.Score, Title: x.Title}
	}
	out.hits = len(resp.Hits)
	writeJSON(w, http.StatusOK, resp)
	return out
}

// decodeParams reads a GET search.
func decodeParams(v url.Values) (request, error) {
	var req request
	for key, vals := range v {
		if len(vals) > 1 {
			return req, badRequest("parameter %q given %d times", key, len(vals))
		}
		switch key {
		case "q":
			req.Query = vals[0]
		case "mode":
			req.Mode = vals[0]
		case "k":
			k, err := strconv.Atoi(vals[0])
			if err != nil {
				return req, badRequest("k %q: want an integer", vals[0])
			}
			req.K = &k
		default:
			return req, badRequest("unknown parameter %q: want q, k and mode", key)
		}
	}
	return req, nil
}

// decodeBody reads a POST search: one JSON object, no unknown keys.
func decodeBody(w http.ResponseWriter, r *http.Request) (request, error) {
	var req request
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return req, &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", MaxBodyBytes)}
		}
		return req, badRequest("read body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return req, badRequest("key %q: want %s, got %s", typeErr.Field, typeErr.Type, typeErr.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return req, badRequest("unknown key %s: want query, k and mode", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return req, badRequest("body: want one JSON object {\"query\": ..., \"k\": ..., \"mode\": ...}: %v", err)
	}
	if err := dec.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		return req, badRequest("body: want one JSON object, got more after it")
	}
	return req, nil
}

func writeError(w *recorder, err error) outcome {
	code := http.StatusInternalServerError
	var se *statusError
	if errors.As(err, &se) {
		code = se.code
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
	return outcome{err: err}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// recorder remembers the status code written.
type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}
