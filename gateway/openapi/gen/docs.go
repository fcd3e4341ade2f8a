package gen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// module is the module path; a package's source is its path below it,
// from the module's root folder.
const module = "github.com/drovehq/drove"

// docReader reads the doc comments of the types the document shows, so
// a field's comment is its description: written once, for Go readers
// and the document's alike.
type docReader struct {
	root string
	pkgs map[string]map[string]string // package path → "Type" or "Type.Field" → doc
	err  error
}

func (d *docReader) typeDoc(t reflect.Type) string {
	return d.of(t.PkgPath())[baseName(t)]
}

func (d *docReader) fieldDoc(owner reflect.Type, field string) string {
	return d.of(owner.PkgPath())[baseName(owner)+"."+field]
}

// baseName is t's name without its type arguments (Page, of Page[T]).
func baseName(t reflect.Type) string {
	n, _, _ := strings.Cut(t.Name(), "[")
	return n
}

func (d *docReader) of(pkg string) map[string]string {
	if docs, ok := d.pkgs[pkg]; ok {
		return docs
	}
	if d.pkgs == nil {
		d.pkgs = map[string]map[string]string{}
	}
	docs := map[string]string{}
	d.pkgs[pkg] = docs
	rel, ok := strings.CutPrefix(pkg, module)
	if !ok {
		return docs // not Drove's: no comments to read
	}
	dir := filepath.Join(d.root, filepath.FromSlash(rel))
	entries, err := os.ReadDir(dir)
	if err != nil {
		d.err = err
		return docs
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			d.err = err
			return docs
		}
		collect(f, docs)
	}
	return docs
}

// collect records the doc comment of every struct type in f and of each
// of its fields (the comment above it, else the one beside it).
func collect(f *ast.File, docs map[string]string) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			docs[ts.Name.Name] = clean(doc)
			for _, fld := range st.Fields.List {
				text := clean(fld.Doc)
				if text == "" {
					text = clean(fld.Comment)
				}
				for _, n := range fld.Names {
					docs[ts.Name.Name+"."+n.Name] = text
				}
			}
		}
	}
}

// clean joins a comment's lines into one.
func clean(c *ast.CommentGroup) string {
	if c == nil {
		return ""
	}
	return strings.Join(strings.Fields(c.Text()), " ")
}
