// Package openapi holds the OpenAPI 3 description of Drove's HTTP API
// (openapi.json, embedded), which the gateway serves at /v1/openapi.json.
//
// The document is generated, not written by hand: its schemas from the
// Go types the gateway answers with and gateway/client decodes
// (gateway/wire), its paths from the table of routes in gen/routes.json.
// After changing either, run `go generate ./gateway/openapi`; gen's test
// fails while the committed document differs from what it writes, and
// the gateway's tests hold the handlers to it (every registered route is
// in it; every handler test's request and answer validate against it,
// gateway/openapi_test.go).
package openapi
