package kafka

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyThisPackageSpeaksKafka: no package but this one imports
// franz-go's client (kgo) or admin (kadm), tests included, so there is one
// way to read the log and every client is configured alike (NewClient).
// franz-go's in-process broker (kfake) is a broker, not a client: tests
// and the embedded deployment may start one.
func TestOnlyThisPackageSpeaksKafka(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if pkg == "events/kafka" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/twmb/franz-go/pkg/kgo" || p == "github.com/twmb/franz-go/pkg/kadm" {
				t.Errorf("%s imports %s; read the log with kafka.Reader and make clients with kafka.NewClient", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("checked only %d files under %s: not the module's root?", seen, root)
	}
}
