package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/evalgate/evalgate/examples/retriever/internal/api"
	"github.com/evalgate/evalgate/examples/retriever/internal/engine"
)

// retrieverFile holds the keys of evalgate's retriever file (issue 10).
type retrieverFile struct {
	URL         string            `yaml:"url"`
	Method      string            `yaml:"method"`
	Headers     map[string]string `yaml:"headers"`
	Body        string            `yaml:"body"`
	Results     string            `yaml:"results"`
	ID          string            `yaml:"id"`
	Score       string            `yaml:"score"`
	K           int               `yaml:"k"`
	Concurrency int               `yaml:"concurrency"`
	Rate        float64           `yaml:"rate"`
	Timeout     string            `yaml:"timeout"`
	Retries     int               `yaml:"retries"`
}

// templateData is what evalgate hands a retriever file's templates.
type templateData struct {
	Query   string
	QueryID string
	K       int
	Tags    map[string]string
}

// The retriever files of this directory ask this service in the mode
// their name says, and their results, id and score paths read its
// answers: a check of the files against the service (rendering their
// templates as the issue defines them), not of evalgate's client.
func TestRetrieverFiles(t *testing.T) {
	e, err := engine.Build(context.Background(), smallCorpus(t), "", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv := httptest.NewServer(api.NewHandler(e, zerolog.Nop()))
	defer srv.Close()
	// The address is ${RETRIEVER_URL:-…}, the service's default address
	// unless the environment says otherwise.
	const urlVar = "${RETRIEVER_URL:-http://127.0.0.1:8080}"
	for _, mode := range engine.Modes {
		raw, err := os.ReadFile(string(mode) + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		var f retrieverFile
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s.yaml: %v", mode, err)
		}
		if _, err := time.ParseDuration(f.Timeout); err != nil || f.K != 100 || f.Concurrency < 1 || f.Rate <= 0 || f.Retries < 0 ||
			f.Results != "hits" || f.ID != "id" || f.Score != "score" || !strings.HasPrefix(f.URL, urlVar+"/search") {
			t.Fatalf("%s.yaml: %+v", mode, f)
		}
		ask := func(q string) map[string]any {
			t.Helper()
			data := templateData{Query: q, QueryID: "q1", K: f.K, Tags: map[string]string{"category": "billing"}}
			url := srv.URL + render(t, strings.TrimPrefix(f.URL, urlVar), data)
			req, err := http.NewRequest(f.Method, url, strings.NewReader(render(t, f.Body, data)))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range f.Headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var answer map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s.yaml, query %q: %d %v %v", mode, q, resp.StatusCode, answer, err)
			}
			if answer["mode"] != string(mode) {
				t.Fatalf("%s.yaml asks mode %v", mode, answer["mode"])
			}
			return answer
		}
		var got []string
		for _, h := range ask("quokka habitat survey")[f.Results].([]any) {
			hit := h.(map[string]any)
			if _, ok := hit[f.Score].(float64); !ok {
				t.Fatalf("%s.yaml: hit %v has no score at %q", mode, hit, f.Score)
			}
			got = append(got, hit[f.ID].(string))
		}
		want := map[engine.Mode][]string{engine.Baseline: {"ferry-notes"}, engine.Candidate: {"quokka-survey"}}[mode]
		if len(got) == 0 || !slices.Equal(got[:len(want)], want) {
			t.Errorf("%s.yaml: %v, want %v first", mode, got, want)
		}
		// Quotes, ampersands, percent signs and non-ASCII reach the
		// service intact.
		ask(`he said "quokka" & 100% naïve?`)
	}
}

func render(t *testing.T, text string, data templateData) string {
	t.Helper()
	tmpl, err := template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"json": func(v any) (string, error) { b, err := json.Marshal(v); return string(b), err },
	}).Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
