package openapi

import _ "embed"

// JSON is the OpenAPI 3 document of the API.
//
//go:embed openapi.json
var JSON []byte
