//go:build ignore

// generate writes openapi.json from the gateway's Go types and routes
// (package gen): `go generate ./gateway/openapi`.
package main

import (
	"fmt"
	"os"

	"github.com/drovehq/drove/gateway/openapi/gen"
)

func main() {
	// go generate runs this in gateway/openapi: the module's root is two up.
	doc, err := gen.Document("../..")
	if err == nil {
		err = os.WriteFile("openapi.json", doc, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate openapi.json:", err)
		os.Exit(1)
	}
}
