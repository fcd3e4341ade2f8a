package iallocator

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid wraps every decoding error: the request is not a usable
// IAllocator request. The message names the field.
var ErrInvalid = errors.New("invalid iallocator request")

// FieldError says which field of a request is wrong and how.
type FieldError struct {
	Field string
	Msg   string
}

// Error says it first in hail's words where hail has words for it
// ("key 'name': Unable to read String"), so that tools written against
// hail's messages read Drove's, then in Drove's, naming the whole path.
func (e *FieldError) Error() string {
	if h := e.hailWords(); h != "" {
		return fmt.Sprintf("%s (%s: %s)", h, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldErr(field, msg string) error { return &FieldError{Field: field, Msg: msg} }

// hailWords is what Ganeti's JSON reader says of the same fault: it names
// only the last key, and the type it could not read.
func (e *FieldError) hailWords() string {
	key := e.Field
	if i := strings.LastIndexAny(key, ".]"); i >= 0 {
		key = key[i+1:]
	}
	whole := e.Field == "request document"
	switch {
	case strings.HasPrefix(e.Msg, "invalid JSON"):
		return "Invalid JSON"
	case e.Msg == "must be a JSON object" && whole:
		return "Unable to read JSObject"
	case whole || key == "":
		return ""
	case e.Msg == "must be a JSON object":
		return fmt.Sprintf("key '%s': Unable to read JSObject", key)
	case e.Msg == "missing":
		return fmt.Sprintf("key '%s' not found", key)
	case strings.HasPrefix(e.Msg, "expected "):
		return fmt.Sprintf("key '%s': Unable to read %s", key, hailType(e.Msg))
	}
	return ""
}

// hailType names the type an "expected T, got ..." message wanted as
// Haskell's JSON reader does.
func hailType(msg string) string {
	want, _, _ := strings.Cut(strings.TrimPrefix(msg, "expected "), ",")
	switch {
	case strings.Contains(want, "[]") || strings.Contains(want, "array") || strings.Contains(want, "list"):
		return "list"
	case strings.Contains(want, "string"):
		return "String"
	case strings.Contains(want, "bool"):
		return "Bool"
	case strings.Contains(want, "float"):
		return "Double"
	case strings.Contains(want, "int") || strings.Contains(want, "number"):
		return "Integer"
	case strings.Contains(want, "object") || strings.Contains(want, "map") || strings.Contains(want, "struct"):
		return "JSObject"
	}
	return want
}
