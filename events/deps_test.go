package events

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibrary keeps events a leaf: every service
// imports it, so a dependency here would become everyone's dependency.
// The one exception is the standard library's own next JSON package,
// encoding/json/v2, which Go 1.26 ships only behind GOEXPERIMENT=jsonv2 and
// whose authors publish it as go-json-experiment/json until then: it
// decodes events in one pass (registry.go, strictUnmarshal). When it
// leaves the experiment, the import becomes encoding/json/v2.
var stagedStdlib = map[string]bool{"github.com/go-json-experiment/json": true}

func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !stagedStdlib[path] {
				t.Errorf("%s imports %s; events may import only the standard library", name, path)
			}
		}
	}
}

// TestVerifyImportsOnlyTheSchema keeps the log checker independent: it may
// read the schema and nothing else of Drove's, so the decisions it checks
// are never made by the code that made them in the first place.
func TestVerifyImportsOnlyTheSchema(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("verify", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no files in events/verify")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != "github.com/drovehq/drove/events" {
				t.Errorf("%s imports %s; events/verify may import only events and the standard library", name, path)
			}
		}
	}
}

// TestSubpackagesPointInward keeps the arrows one way: every package under
// events (kafka, chain, retry, promreg, verify) may import events and its
// siblings, and nothing else of Drove's, so every service can import any
// of them. A helper that needs a service belongs with that service.
func TestSubpackagesPointInward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module, self = "github.com/drovehq/drove/", "github.com/drovehq/drove/events"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, module) && imp != self && !strings.HasPrefix(imp, self+"/") {
				t.Errorf("%s imports %s: packages under events import only events", pkg, imp)
			}
		}
	}
}
