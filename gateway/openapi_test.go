package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/drovehq/drove/gateway/openapi"
)

// apiDoc is the served OpenAPI document, loaded and validated once; every
// exchange a handler test makes through env.do is checked against it.
var apiDoc = sync.OnceValues(func() (*apiContract, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", decodeNDJSON)
	return &apiContract{doc: doc, router: router}, nil
})

type apiContract struct {
	doc    *openapi3.T
	router routers.Router
}

// decodeNDJSON checks a stream's lines are JSON; the document describes
// a stream as a string, so the decoder hands back the text.
func decodeNDJSON(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) > 0 && !json.Valid(line) {
			return nil, errors.New("a stream line is not JSON: " + string(line))
		}
	}
	return string(b), nil
}

func contract(t *testing.T) *apiContract {
	t.Helper()
	c, err := apiDoc()
	if err != nil {
		t.Fatalf("gateway/openapi/openapi.json: %v", err)
	}
	return c
}

// checkExchange validates one answer (always) and its request (when the
// gateway accepted it: the bad-input tests send invalid requests on
// purpose) against the document. A path the document does not know must
// be answered with the error shape.
func checkExchange(t *testing.T, req *http.Request, reqBody string, status int, header http.Header, body []byte) {
	t.Helper()
	api := contract(t)
	ctx := context.Background()
	route, params, err := api.router.FindRoute(req)
	if err != nil {
		if status < 400 {
			t.Errorf("OpenAPI: %s %s answered %d but is not in the document: %v", req.Method, req.URL.Path, status, err)
			return
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Errorf("OpenAPI: %s %s answered %d with a body that is not JSON: %s", req.Method, req.URL.Path, status, body)
			return
		}
		if err := api.doc.Components.Schemas["ErrorAnswer"].Value.VisitJSON(v); err != nil {
			t.Errorf("OpenAPI: %s %s answered %d, not the ErrorAnswer shape: %v\n%s", req.Method, req.URL.Path, status, err, body)
		}
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: req.Clone(ctx), PathParams: params, Route: route, Options: opts}
	in.Request.Body = io.NopCloser(strings.NewReader(reqBody))
	if reqBody != "" && in.Request.Header.Get("Content-Type") == "" {
		// The gateway reads any body as JSON; the tests often omit the header.
		in.Request.Header.Set("Content-Type", "application/json")
	}
	if status < 400 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			t.Errorf("OpenAPI: request %s %s (answered %d) does not validate: %v", req.Method, req.URL, status, err)
		}
		in.Request.Body = io.NopCloser(strings.NewReader(reqBody))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("OpenAPI: answer %d to %s %s does not validate against %s: %v\n%s", status, req.Method, req.URL, route.Path, err, clip(body))
	}
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// ginToOpenAPI turns gin's /v1/nodes/:name into /v1/nodes/{name}.
func ginToOpenAPI(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// TestOpenAPICoversEveryRoute: every route the gateway registers is
// described, and the document describes no route the gateway lacks.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	e := newEnv(t)
	api := contract(t)
	registered := map[string]bool{}
	for _, r := range e.g.Routes() {
		p := ginToOpenAPI(r[1])
		registered[r[0]+" "+p] = true
		item := api.doc.Paths.Value(p)
		if item == nil || item.GetOperation(r[0]) == nil {
			t.Errorf("route %s %s is not in gateway/openapi/openapi.json: add it to the routes of gateway/openapi/gen/routes.json (path %q, method %s) with every status it answers, then go generate ./gateway/openapi",
				r[0], r[1], p, strings.ToLower(r[0]))
		}
	}
	for p, item := range api.doc.Paths.Map() {
		for m := range item.Operations() {
			if !registered[m+" "+p] {
				t.Errorf("gateway/openapi/openapi.json describes %s %s, which the gateway does not register", m, p)
			}
		}
	}
}

// TestOpenAPIServed: the gateway serves the document without a token.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t, withTokens)
	status, body := e.do(http.MethodGet, "/v1/openapi.json", "")
	if status != http.StatusOK || !bytes.Equal(body, openapi.JSON) {
		t.Fatalf("GET /v1/openapi.json = %d, %d bytes; want 200 and the embedded document", status, len(body))
	}
}
