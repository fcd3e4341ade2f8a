package gen

import (
	"bytes"
	"testing"

	"github.com/drovehq/drove/gateway/openapi"
)

// TestCommittedDocumentIsGenerated: openapi.json is what the generator
// writes from the Go types and the routes now; a change to either
// without `go generate ./gateway/openapi` fails here.
func TestCommittedDocumentIsGenerated(t *testing.T) {
	t.Parallel()
	doc, err := Document("../../..") // the test runs in gateway/openapi/gen
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, openapi.JSON) {
		a, b := bytes.Split(doc, []byte("\n")), bytes.Split(openapi.JSON, []byte("\n"))
		for i := range min(len(a), len(b)) {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("gateway/openapi/openapi.json is not what the generator writes (first difference, line %d):\n  generated: %s\n  committed: %s\nrun: go generate ./gateway/openapi", i+1, a[i], b[i])
			}
		}
		t.Fatalf("gateway/openapi/openapi.json is not what the generator writes (%d lines generated, %d committed); run: go generate ./gateway/openapi", len(a), len(b))
	}
}
