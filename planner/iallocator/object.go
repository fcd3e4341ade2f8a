package iallocator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object with its keys in document order. Ganeti breaks
// ties between equally good nodes by their order in the request, so Drove
// keeps that order instead of Go's random map order.
type object struct {
	path   string
	fields []field
	index  map[string]int
}

type field struct {
	key   string
	value json.RawMessage
}

// objectOf parses data as one JSON object; path names it in errors.
func objectOf(data []byte, path string) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	where := path
	if where == "" {
		where = "request document"
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fieldErr(where, describeJSONError(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fieldErr(where, "must be a JSON object")
	}
	o := &object{path: path, index: map[string]int{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fieldErr(where, describeJSONError(err))
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fieldErr(where, "object key is not a string")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fieldErr(o.sub(key), describeJSONError(err))
		}
		if _, dup := o.index[key]; dup {
			continue // Ganeti reads the first of repeated keys; so does Drove
		}
		o.index[key] = len(o.fields)
		o.fields = append(o.fields, field{key, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fieldErr(where, describeJSONError(err))
	}
	if path == "" {
		if _, err := dec.Token(); err == nil {
			return nil, fieldErr(where, "trailing data after the JSON object")
		}
	}
	return o, nil
}

// sub is the path of a member, in the style nodes["node1"].total_memory.
func (o *object) sub(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get returns a member; a null member counts as absent, as in Ganeti.
func (o *object) get(key string) (json.RawMessage, bool) {
	i, ok := o.index[key]
	if !ok {
		return nil, false
	}
	v := o.fields[i].value
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, false
	}
	return v, true
}

// required decodes a member that must be present.
func (o *object) required(key string, dst any) error {
	v, ok := o.get(key)
	if !ok {
		return fieldErr(o.sub(key), "missing")
	}
	return decodeInto(v, o.sub(key), dst)
}

// object returns a member that must be an object, keys in order; its
// members are named parent["key"].
func (o *object) object(key string) (*object, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, fieldErr(o.sub(key), "missing")
	}
	sub, err := objectOf(v, o.sub(key))
	if err != nil {
		return nil, err
	}
	return sub, nil
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("expected %s, got JSON %s", te.Type, te.Value)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "invalid JSON: the document ends too early"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	return err.Error()
}
