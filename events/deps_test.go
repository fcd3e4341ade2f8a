package events

import (
	"go/parser"
	"go/token"
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
