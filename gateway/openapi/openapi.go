package openapi

import _ "embed"

//go:generate go run generate.go

// JSON is the OpenAPI 3 document of the API.
//
//go:embed openapi.json
var JSON []byte
