// Package gen writes the OpenAPI document of the gateway's HTTP API
// (gateway/openapi/openapi.json) from the Go types the gateway answers
// with (gateway/wire) and a table of its routes (routes.json, naming
// those types): the shapes by reflection, their descriptions from the
// types' doc comments. Run it
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

// Document is the OpenAPI document, as committed in openapi.json. root is
// the module's root folder: the doc comments are read from the source.
func Document(root string) ([]byte, error) {
	t, err := readTable()
	if err != nil {
		return nil, err
	}
	b := &builder{docs: docReader{root: root}, schemas: obj{}, names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
	errShape := b.schemaOf(reflect.TypeFor[wire.ErrorAnswer]())
	paths := obj{}
	for _, r := range t.Routes {
		op, err := b.operation(r, t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
		}
		if paths[r.Path] == nil {
			paths[r.Path] = obj{}
		}
		paths[r.Path].(obj)[strings.ToLower(r.Method)] = op
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
	for k, v := range t.Parameters {
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
	if err := write(&out, doc, 0, 0); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// lineWidth is how wide a line of the document may be before a value
// on it is written over several lines: short objects and lists stay on
// one line, so the document reads as a table.
const lineWidth = 110

// write writes v as JSON, indented by level, after lead characters on its
// line: on one line when it fits, else one member a line.
func write(out *bytes.Buffer, v any, level, lead int) error {
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	flat := bytes.TrimSuffix(one.Bytes(), []byte("\n"))
	m, isObj := v.(obj)
	list := reflect.ValueOf(v)
	isList := list.Kind() == reflect.Slice
	if 2*level+lead+len(flat) <= lineWidth || (!isObj && !isList) || len(flat) <= 2 {
		out.Write(flat)
		return nil
	}
	pad := strings.Repeat("  ", level+1)
	if isObj {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out.WriteString("{\n")
		for i, k := range keys {
			key, _ := json.Marshal(k)
			out.WriteString(pad)
			out.Write(key)
			out.WriteString(": ")
			if err := write(out, m[k], level+1, len(key)+2); err != nil {
				return err
			}
			if i < len(keys)-1 {
				out.WriteByte(',')
			}
			out.WriteByte('\n')
		}
		out.WriteString(strings.Repeat("  ", level) + "}")
		return nil
	}
	out.WriteString("[\n")
	for i := range list.Len() {
		out.WriteString(pad)
		if err := write(out, list.Index(i).Interface(), level+1, 0); err != nil {
			return err
		}
		if i < list.Len()-1 {
			out.WriteByte(',')
		}
		out.WriteByte('\n')
	}
	out.WriteString(strings.Repeat("  ", level) + "]")
	return nil
}

func (b *builder) operation(r route, shared map[string]obj) (obj, error) {
	op := obj{"summary": r.Summary, "tags": []string{r.Tag}}
	if r.Description != "" {
		op["description"] = r.Description
	}
	var params []obj
	for _, raw := range r.Parameters {
		var name string
		if json.Unmarshal(raw, &name) == nil {
			if shared[name] == nil {
				return nil, fmt.Errorf("no shared parameter %q", name)
			}
			params = append(params, obj{"$ref": "#/components/parameters/" + name})
			continue
		}
		var p obj
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("a parameter: %w", err)
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if r.Body != "" {
		t, err := shape(r.Body)
		if err != nil {
			return nil, err
		}
		b.closed(t)
		op["requestBody"] = obj{"required": r.BodyRequired, "content": obj{"application/json": obj{"schema": b.schemaOf(t)}}}
	}
	responses := obj{}
	for _, a := range r.Answers {
		ans := obj{"description": a.Description}
		media, schema, err := b.answerSchema(a)
		if err != nil {
			return nil, err
		}
		if schema != nil {
			ans["content"] = obj{media: obj{"schema": schema}}
		}
		responses[strconv.Itoa(a.Status)] = ans
	}
	for _, status := range r.Errors {
		e, ok := errorResponses[status]
		if !ok {
			return nil, fmt.Errorf("no error answer %d (errorResponses)", status)
		}
		responses[strconv.Itoa(status)] = obj{"$ref": "#/components/responses/" + e.name}
	}
	op["responses"] = responses
	return op, nil
}

// answerSchema is the media type and schema of an answer's body; a nil
// schema when it has none.
func (b *builder) answerSchema(a answer) (string, obj, error) {
	switch {
	case a.Media != "":
		return a.Media, obj{"type": "string"}, nil
	case a.Stream != "":
		t, err := shape(a.Stream)
		if err != nil {
			return "", nil, err
		}
		b.schemaOf(t)
		ctl := reflect.TypeFor[wire.ControlLine]()
		b.schemaOf(ctl)
		return "application/x-ndjson", obj{"type": "string", "description": "newline-delimited JSON lines, flushed as they happen: each a " +
			b.name(t) + ", or a " + b.name(ctl) + " (keepalive; the end; the error that ends the stream)"}, nil
	case a.Page != nil:
		items, err := b.oneOf(a.Page)
		if err != nil {
			return "", nil, err
		}
		page := b.objectOf(reflect.TypeFor[wire.Page[json.RawMessage]](), false)
		page["properties"].(obj)["items"] = obj{"type": "array", "items": items}
		return "application/json", page, nil
	case a.JSON != nil:
		s, err := b.oneOf(a.JSON)
		return "application/json", s, err
	}
	return "", nil, nil
}

// oneOf is the schema of a value of one of the types names names; of
// any object when names is empty.
func (b *builder) oneOf(names []string) (obj, error) {
	var alts []any
	for _, n := range names {
		t, err := shape(n)
		if err != nil {
			return nil, err
		}
		alts = append(alts, b.schemaOf(t))
	}
	switch len(alts) {
	case 0:
		return obj{"type": "object"}, nil
	case 1:
		return alts[0].(obj), nil
	}
	return obj{"oneOf": alts}, nil
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
// add: enum, minimum, maximum, format, description, and null where Go
// sends it.
func (b *builder) fieldSchema(owner reflect.Type, f reflect.StructField, omit bool) obj {
	s := b.schemaOf(f.Type)
	extra := obj{}
	if e := f.Tag.Get("enum"); e != "" {
		extra["enum"] = strings.Split(e, ",")
	}
	for _, bound := range []string{"minimum", "maximum"} {
		if m := f.Tag.Get(bound); m != "" {
			n, err := strconv.ParseFloat(m, 64)
			if err != nil {
				panic(fmt.Sprintf("openapi/gen: %s.%s: %s %q: %v", owner, f.Name, bound, m, err))
			}
			extra[bound] = n
		}
	}
	if fm := f.Tag.Get("format"); fm != "" {
		extra["format"] = fm
	}
	if d := b.docs.fieldDoc(owner, f.Name); d != "" {
		extra["description"] = d
	}
	switch f.Type.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		// Go sends nil as null unless omitempty; a nullable tag marks a
		// member the gateway also takes as null from older clients.
		if !omit || f.Tag.Get("nullable") == "true" {
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
