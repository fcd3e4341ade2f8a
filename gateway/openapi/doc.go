// Package openapi holds the OpenAPI 3 description of Drove's HTTP API
// (openapi.json, embedded), which the gateway serves at /v1/openapi.json.
//
// The document is written by hand, not generated from the handlers: it is
// the contract clients read, and the gateway's tests hold the handlers to
// it (every registered route is in it; every handler test's request and
// answer validate against it, gateway/openapi_test.go), so it cannot drift.
// To add a route: add its path under "paths" with every status it answers
// (errors: #/components/responses/BadRequest, NotFound, ..., all of the
// Error shape) and reuse the components.
package openapi
