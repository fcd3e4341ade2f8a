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

// objectOf parses data as one JSON object; path names it in errors. It
// checks the whole text is valid JSON once, then splits the members with a
// plain scanner: encoding/json's token API is several times slower, and a
// large cluster's request is megabytes.
func objectOf(data []byte, path string) (*object, error) {
	where := path
	if where == "" {
		where = "request document"
		if !json.Valid(data) {
			var v any
			err := json.Unmarshal(data, &v) // for the position of the fault
			if err == nil {
				err = errors.New("invalid JSON")
			}
			return nil, fieldErr(where, describeJSONError(err))
		}
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, fieldErr(where, "must be a JSON object")
	}
	o := &object{path: path, index: map[string]int{}}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			end := skipString(data, i)
			key, err := unquote(data[i:end])
			if err != nil {
				return nil, fieldErr(where, describeJSONError(err))
			}
			i = skipSpace(data, end)
			i = skipSpace(data, i+1) // the colon
			vend := skipValue(data, i)
			if _, dup := o.index[key]; !dup { // Ganeti reads the first of repeated keys; so does Drove
				o.index[key] = len(o.fields)
				o.fields = append(o.fields, field{key, json.RawMessage(data[i:vend])})
			}
			i = skipSpace(data, vend)
			if data[i] == '}' {
				i++
				break
			}
			i = skipSpace(data, i+1) // the comma
		}
	}
	if path == "" && skipSpace(data, i) != len(data) {
		return nil, fieldErr(where, "trailing data after the JSON object")
	}
	return o, nil
}

// The scanners below assume valid JSON (objectOf checked it).

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
		i++
	}
	return i
}

func unquote(q []byte) (string, error) {
	if bytes.IndexByte(q, '\\') < 0 && len(q) >= 2 {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
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
