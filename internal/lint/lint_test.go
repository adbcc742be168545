package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/evalgate/evalgate/"

type goFile struct {
	pkg  string // package directory relative to the module root
	path string
	file *ast.File
	fset *token.FileSet
}

// sources parses every non-test Go file of the module.
func sources(t *testing.T) []goFile {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "bench-data" || d.Name() == "demo") {
			return filepath.SkipDir
		}
		if d.IsDir() && path != root {
			// A nested module (examples/retriever) is not part of this one.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		out = append(out, goFile{pkg: filepath.ToSlash(rel), path: path, file: f, fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 30 {
		t.Fatalf("found only %d source files: wrong root?", len(out))
	}
	return out
}

func imports(f *ast.File) []string {
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		out = append(out, p)
	}
	return out
}

// rule: an import prefix, and the package directories allowed to use it.
var importRules = []struct {
	prefix  string
	allowed []string
	why     string
}{
	{"github.com/nats-io/nats.go", []string{"internal/jsq"}, "only the JetStream adapter talks to NATS"},
	{"github.com/nats-io/nats-server", []string{"internal/embedded"}, "only the embedded-server package runs a server"},
	{"github.com/prometheus", []string{"internal/telemetry"}, "metrics go through internal/telemetry; libraries report through the hooks they declare"},
	{module + "internal/telemetry", []string{"cmd/evalgate"}, "libraries report through the hooks they declare, not to Prometheus"},
	{module + "worker", []string{"cmd/evalgate", "internal/jsq", "internal/mock"}, "the coordinator and the worker never import each other"},
	{module + "coordinator", []string{"cmd/evalgate", "compare", "internal/jsq"}, "the coordinator and the worker never import each other"},
	{module + "internal/jsq", []string{"cmd/evalgate"}, "libraries depend on interfaces, not on NATS"},
	{"log", nil, "libraries log through an injected zerolog.Logger"},
}

func TestImportRules(t *testing.T) {
	for _, f := range sources(t) {
		for _, imp := range imports(f.file) {
			for _, r := range importRules {
				if imp != r.prefix && !strings.HasPrefix(imp, r.prefix+"/") {
					continue
				}
				ok := false
				for _, a := range r.allowed {
					if f.pkg == a {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s imports %s: %s", f.path, imp, r.why)
				}
			}
		}
	}
}

// TestNoPrintingInLibraries: only cmd/ writes to stdout or stderr.
func TestNoPrintingInLibraries(t *testing.T) {
	for _, f := range sources(t) {
		if strings.HasPrefix(f.pkg, "cmd/") || strings.HasPrefix(f.pkg, "internal/tools") {
			continue
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fmt" && strings.HasPrefix(sel.Sel.Name, "Print") {
				t.Errorf("%s: fmt.%s in a library package", f.fset.Position(call.Pos()), sel.Sel.Name)
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" && (sel.Sel.Name == "Exit") {
				t.Errorf("%s: os.Exit in a library package", f.fset.Position(call.Pos()))
			}
			return true
		})
	}
}

// TestDocPerPackage: every package states its contract in a doc comment.
func TestDocPerPackage(t *testing.T) {
	documented := map[string]bool{}
	pkgs := map[string]bool{}
	for _, f := range sources(t) {
		pkgs[f.pkg] = true
		if f.file.Doc != nil && strings.TrimSpace(f.file.Doc.Text()) != "" {
			documented[f.pkg] = true
		}
	}
	for p := range pkgs {
		if !documented[p] {
			t.Errorf("package %s has no package documentation", p)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "go.mod")); err != nil {
		t.Fatal(err)
	}
}
