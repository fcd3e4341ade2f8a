package gen

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// routes.json is every route the gateway registers, with what it reads
// and answers, naming the Go types of its bodies (shapes); the
// document's paths are written from it. The gateway's tests check both
// ways that it lists exactly the routes the gateway registers
// (gateway/openapi_test.go). Error answers are the ErrorAnswer shape,
// listed by status (errorResponses).
//
//go:embed routes.json
var routesJSON []byte

// table is routes.json.
type table struct {
	Routes []route `json:"routes"`
	// Parameters are the parameters several routes share, by name.
	Parameters map[string]obj `json:"parameters"`
}

// route is one operation of the API.
type route struct {
	Method, Path, Tag, Summary, Description string
	// Parameters are each a shared parameter's name or a parameter.
	Parameters []json.RawMessage
	// Body names the body's type; empty when the route reads none. A
	// body's schema is closed: the gateway refuses unknown fields.
	Body         string
	BodyRequired bool
	Answers      []answer
	// Errors are the error statuses the route answers.
	Errors []int
}

// answer is one status of a route that is not an error, and its body.
type answer struct {
	Status      int
	Description string
	// Media is a body that is not JSON (text/html, text/plain): a string.
	Media string
	// JSON names the body's type; several: one of them; none (an empty
	// list): any object.
	JSON []string `json:"json"`
	// Page: the body is a list page (wire.Page) of items of these types.
	Page []string
	// Stream: the body is JSON lines of this type (or wire.ControlLine).
	Stream string
}

// shapes are the types routes.json names, by their Go names.
var shapes = map[string]reflect.Type{}

func init() {
	for _, v := range []any{
		wire.Accepted{}, wire.AuditEntry{}, wire.Estimate{}, wire.Evacuation{}, wire.Group{}, wire.GroupChange{},
		wire.Health{}, wire.HistoryEntry{}, wire.Instance{}, wire.InstanceBudget{}, wire.InstanceChanged{}, wire.InstanceMigration{},
		wire.Job{}, wire.MigrateAnswer{}, wire.MigrateBody{}, wire.MigrationLine{}, wire.Move{}, wire.Node{},
		wire.NodeAction{}, wire.PlanRow{}, wire.Reason{}, wire.Request{}, wire.RequestDetail{}, wire.SettingsBody{},
		wire.UserMigration{}, wire.WatchLine{}, events.SettingsChanged{},
	} {
		shapes[reflect.TypeOf(v).Name()] = reflect.TypeOf(v)
	}
}

func readTable() (table, error) {
	var t table
	dec := json.NewDecoder(bytes.NewReader(routesJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("routes.json: %w", err)
	}
	return t, nil
}

// shape is the type routes.json names name.
func shape(name string) (reflect.Type, error) {
	t, ok := shapes[name]
	if !ok {
		return nil, fmt.Errorf("routes.json names %q, which is not among the shapes (routes.go)", name)
	}
	return t, nil
}

// errorResponses name the error answers by status, each the ErrorAnswer shape.
var errorResponses = map[int]struct{ name, desc string }{
	400: {"BadRequest", "Malformed body, path or query parameter"},
	401: {"Unauthorized", "No or unknown bearer token (tokens configured)"},
	403: {"Forbidden", "The caller's role or account may not do this (audited)"},
	404: {"NotFound", "Unknown id or name"},
	405: {"MethodNotAllowed", "Method not allowed on this path"},
	409: {"Conflict", "The state does not allow it (conflict, active_request)"},
	413: {"TooLarge", "Body too large"},
	500: {"Internal", "The gateway's fault; its log has the details"},
	501: {"NotImplemented", "This gateway does not answer that (not_implemented): ?at= without point-in-time views"},
	503: {"Unavailable", "Postgres or Kafka did not answer (unavailable, with Retry-After while the views' Postgres is unreachable), or (watch) too many streams are open"},
}

const apiDescription = "Drove moves instances between nodes. Every /v1 route needs 'Authorization: Bearer <token>' once tokens are configured; without tokens every caller is an operator named by X-Drove-Actor. Requests, jobs, nodes, groups, settings and the bulk commands are for operators; owners (tenants) see and migrate only their own instances. Every error is the ErrorAnswer shape. Lists are paged: ?limit= and ?after= the 'next' cursor."

var tags = []string{"requests", "cluster", "instances", "migrations", "settings", "history", "system", "console"}
