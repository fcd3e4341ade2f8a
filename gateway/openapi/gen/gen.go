// Package gen writes the OpenAPI document of the gateway's HTTP API
// (gateway/openapi/openapi.json) from the Go types the gateway answers
// with (gateway/wire) and a table of its routes (routes.go): the shapes
// by reflection, their descriptions from the types' doc comments. Run it
// with `go generate ./gateway/openapi`; a test fails when the committed
// document is not what it writes.
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drovehq/drove/gateway/wire"
)

type obj = map[string]any

// route is one operation of the API.
type route struct {
	method, path, tag, summary, desc string
	params                           []obj
	// body is a value of the body's type; nil when the route reads none.
	// A body's schema is closed: the gateway refuses unknown fields.
	body         any
	bodyRequired bool
	answers      []answer
	// errors are the error statuses the route answers (errorResponses).
	errors []int
}

// answer is one non-error status of a route and what it carries.
type answer struct {
	status int
	desc   string
	shape  *shape // nil: no body
}

// shape is an answer's media type and schema.
type shape struct {
	media  string
	schema func(*builder) obj
}

// typed is a JSON answer of v's type.
func typed(v any) *shape {
	return &shape{"application/json", func(b *builder) obj { return b.schemaOf(reflect.TypeOf(v)) }}
}

// oneOf is a JSON answer of one of the types of vs.
func oneOf(vs ...any) *shape {
	return &shape{"application/json", func(b *builder) obj {
		var alts []any
		for _, v := range vs {
			alts = append(alts, b.schemaOf(reflect.TypeOf(v)))
		}
		return obj{"oneOf": alts}
	}}
}

// pageOf is a list answer (wire.Page) of items of s's schema.
func pageOf(s *shape) *shape {
	return &shape{"application/json", func(b *builder) obj {
		page := b.objectOf(reflect.TypeFor[wire.Page[json.RawMessage]](), false)
		page["properties"].(obj)["items"] = obj{"type": "array", "items": s.schema(b)}
		return page
	}}
}

// stream is a stream of JSON lines of line's type, or ControlLines.
func stream(line any) *shape {
	return &shape{"application/x-ndjson", func(b *builder) obj {
		name := b.name(reflect.TypeOf(line))
		b.schemaOf(reflect.TypeOf(line))
		b.schemaOf(reflect.TypeFor[wire.ControlLine]())
		return obj{"type": "string", "description": "newline-delimited JSON lines, flushed as they happen: each a " + name +
			", or a " + b.name(reflect.TypeFor[wire.ControlLine]()) + " (keepalive; the end; the error that ends the stream)"}
	}}
}

// text is an answer that is not JSON.
func text(media string) *shape {
	return &shape{media, func(*builder) obj { return obj{"type": "string"} }}
}

// anyObject is a JSON object of no fixed shape.
func anyObject() *shape {
	return &shape{"application/json", func(*builder) obj { return obj{"type": "object"} }}
}

// param refers to one of the shared parameters.
func param(name string) obj { return obj{"$ref": "#/components/parameters/" + name} }

// Document is the OpenAPI document, as committed in openapi.json. root is
// the module's root folder: the doc comments are read from the source.
func Document(root string) ([]byte, error) {
	b := &builder{docs: docReader{root: root}, schemas: obj{}, names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
	errShape := b.schemaOf(reflect.TypeFor[wire.ErrorAnswer]())
	paths := obj{}
	for _, r := range routes {
		if paths[r.path] == nil {
			paths[r.path] = obj{}
		}
		paths[r.path].(obj)[strings.ToLower(r.method)] = b.operation(r)
	}
	responses := obj{}
	for _, e := range errorResponses {
		responses[e.name] = obj{"description": e.desc, "content": obj{"application/json": obj{"schema": errShape}}}
	}
	responses[errorResponses[503].name].(obj)["headers"] = obj{"Retry-After": obj{
		"description": "seconds to wait before asking again", "schema": obj{"type": "integer"}}}
	var tagList []obj
	for _, t := range tags {
		tagList = append(tagList, obj{"name": t})
	}
	params := obj{}
	for k, v := range parameters {
		params[k] = v
	}
	if b.docs.err != nil {
		return nil, b.docs.err
	}
	doc := obj{
		"openapi":  "3.0.3",
		"info":     obj{"title": "Drove API", "version": "1", "description": apiDescription},
		"servers":  []obj{{"url": "/"}},
		"tags":     tagList,
		"security": []obj{{}, {"bearer": []string{}}},
		"paths":    paths,
		"components": obj{
			"schemas":         b.schemas,
			"responses":       responses,
			"parameters":      params,
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer"}},
		},
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (b *builder) operation(r route) obj {
	op := obj{"summary": r.summary, "tags": []string{r.tag}}
	if r.desc != "" {
		op["description"] = r.desc
	}
	if len(r.params) > 0 {
		op["parameters"] = r.params
	}
	if r.body != nil {
		t := reflect.TypeOf(r.body)
		b.closed(t)
		op["requestBody"] = obj{"required": r.bodyRequired, "content": obj{"application/json": obj{"schema": b.schemaOf(t)}}}
	}
	responses := obj{}
	for _, a := range r.answers {
		ans := obj{"description": a.desc}
		if a.shape != nil {
			ans["content"] = obj{a.shape.media: obj{"schema": a.shape.schema(b)}}
		}
		responses[strconv.Itoa(a.status)] = ans
	}
	for _, status := range r.errors {
		responses[strconv.Itoa(status)] = obj{"$ref": "#/components/responses/" + errorResponses[status].name}
	}
	op["responses"] = responses
	return op
}

// builder turns Go types into schemas: a named struct becomes a
// component, referred to by name; anything else is written in place.
type builder struct {
	docs    docReader
	schemas obj
	names   map[reflect.Type]string
	taken   map[string]reflect.Type
	shut    map[reflect.Type]bool
}

// closed marks t's schema as refusing unknown fields (a request body).
func (b *builder) closed(t reflect.Type) {
	if b.shut == nil {
		b.shut = map[reflect.Type]bool{}
	}
	b.shut[t] = true
}

// name is t's component name: its Go name, or with its package's in
// front when another package's type took the name first.
func (b *builder) name(t reflect.Type) string {
	if n, ok := b.names[t]; ok {
		return n
	}
	n := t.Name()
	if other, ok := b.taken[n]; ok && other != t {
		pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
		n = strings.ToUpper(pkg[:1]) + pkg[1:] + n
	}
	b.names[t], b.taken[n] = n, t
	return n
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schemaOf is the schema of a value of type t.
func (b *builder) schemaOf(t reflect.Type) obj {
	switch {
	case t == timeType:
		return obj{"type": "string", "format": "date-time"}
	case t == rawType || t.Kind() == reflect.Interface:
		return obj{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return b.schemaOf(t.Elem())
	case reflect.Struct:
		if t.Name() == "" || strings.Contains(t.Name(), "[") {
			return b.objectOf(t, b.shut[t])
		}
		name := b.name(t)
		if _, done := b.schemas[name]; !done {
			b.schemas[name] = obj{} // a type that contains itself refers to itself
			s := b.objectOf(t, b.shut[t])
			if d := b.docs.typeDoc(t); d != "" {
				s["description"] = d
			}
			b.schemas[name] = s
		}
		return obj{"$ref": "#/components/schemas/" + name}
	case reflect.Slice, reflect.Array:
		return obj{"type": "array", "items": b.schemaOf(t.Elem())}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return obj{"type": "object"}
		}
		return obj{"type": "object", "additionalProperties": b.schemaOf(t.Elem())}
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Float32, reflect.Float64:
		return obj{"type": "number"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return obj{"type": "integer"}
	}
	panic(fmt.Sprintf("openapi/gen: no schema for %s", t))
}

// objectOf is the object schema of struct type t: its JSON fields
// (an embedded struct's inline), each required unless omitempty.
func (b *builder) objectOf(t reflect.Type, closed bool) obj {
	props, required := obj{}, []string{}
	b.fields(t, props, &required)
	s := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	if closed {
		s["additionalProperties"] = false
	}
	return s
}

func (b *builder) fields(t reflect.Type, props obj, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			b.fields(f.Type, props, required)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := strings.Contains(opts, "omitempty")
		props[name] = b.fieldSchema(t, f, omit)
		if !omit {
			*required = append(*required, name)
		}
	}
}

// fieldSchema is field f's schema with what its tags and doc comment
// add: enum, minimum, format, description, and null where Go sends it.
func (b *builder) fieldSchema(owner reflect.Type, f reflect.StructField, omit bool) obj {
	s := b.schemaOf(f.Type)
	extra := obj{}
	if e := f.Tag.Get("enum"); e != "" {
		extra["enum"] = strings.Split(e, ",")
	}
	if m := f.Tag.Get("minimum"); m != "" {
		n, err := strconv.ParseFloat(m, 64)
		if err != nil {
			panic(fmt.Sprintf("openapi/gen: %s.%s: minimum %q: %v", owner, f.Name, m, err))
		}
		extra["minimum"] = n
	}
	if fm := f.Tag.Get("format"); fm != "" {
		extra["format"] = fm
	}
	if d := b.docs.fieldDoc(owner, f.Name); d != "" {
		extra["description"] = d
	}
	switch f.Type.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		if !omit {
			extra["nullable"] = true
		}
	}
	if len(extra) == 0 {
		return s
	}
	if _, isRef := s["$ref"]; isRef {
		// A $ref takes no siblings in OpenAPI 3.0: wrap it.
		extra["allOf"] = []obj{s}
		return extra
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}
