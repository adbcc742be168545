package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

// FuzzParse feeds arbitrary files to Parse: an input error or a Config
// that renders any pair, never a panic, and no secret in an error or in
// String. Run it with
//
//	go test ./llm -run XXX -fuzz FuzzParse -fuzztime 20000x
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "examples", "llm", "*.yaml"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		issueFile,
		"base_url: http://x/v1\nmodel: m\n",
		"base_url: ${U:-http://x/v1}?q=1\nmodel: m\napi_key: ${K}\nheaders:\n  api-key: ${K}\n  Host: h\n",
		"base_url: http://x/v1\nmodel: m\nprompt: '{{.Query}} {{truncate 5 .Passage}} {{json .Title}}'\nsystem: s\nmax_grade: 4\n",
		"base_url: http://x/v1\nmodel: m\nextra_body: {a: [1, {b: c}], d: null}\nresponse_format: json_schema\nseed: -3\n",
		"base_url: &u http://x/v1\nmodel: *u\n",
		"a: 1\n---\nb: 2\n",
	} {
		f.Add([]byte(s))
	}
	env := envOf(map[string]string{"K": "s3cr3t-k3y", "U": "http://h:1/v1"})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data, env)
		if err != nil {
			if !schema.IsInvalidInput(err) {
				t.Fatalf("error %v (%T) is not an input error", err, err)
			}
			if strings.Contains(err.Error(), "s3cr3t-k3y") {
				t.Fatalf("error shows a secret: %v", err)
			}
			return
		}
		if string(c.Source) != string(data) {
			t.Fatal("Source differs from the file")
		}
		if strings.Contains(c.String(), "s3cr3t-k3y") {
			t.Fatalf("String shows a secret: %s", c)
		}
		msgs, err := c.messages(Pair{QueryID: "q", Query: "{{.Query}} ${K}", DocID: "d", Passage: strings.Repeat("p", 100)})
		if err == nil {
			if _, err := c.body(msgs); err != nil {
				t.Fatalf("body: %v", err)
			}
		}
		cl, err := NewClient(c, ClientOptions{})
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		cl.Close()
	})
}
