package iallocator

import (
	"fmt"
	"math"
	"strconv"
)

// scanner reads the members of one JSON object that objectOf already
// found valid, without building an intermediate tree: a large cluster's
// request holds tens of thousands of nodes and instances, and decoding them
// with encoding/json's reflection costs more than planning them. Type
// errors name the field, as every decoding error does.
type scanner struct {
	b []byte
	i int
	// where names the object in errors: a collection and a key, joined
	// only when an error is reported (most objects have none).
	coll, key string
}

func (s *scanner) path() string { return fmt.Sprintf("%s[%q]", s.coll, s.key) }

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) peek() byte {
	s.space()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// kind names the JSON type of the value at the cursor, for errors.
func (s *scanner) kind() string {
	switch s.peek() {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func (s *scanner) typeErr(field, want string) error {
	return fieldErr(s.path()+"."+field, fmt.Sprintf("expected %s, got JSON %s", want, s.kind()))
}

// object calls fn for each member of the object in field ("" for the
// scanner's own object); fn must consume the value (or call skip).
func (s *scanner) object(field string, fn func(key []byte) error) error {
	if s.peek() != '{' {
		if field == "" {
			return fieldErr(s.path(), "must be a JSON object")
		}
		return s.typeErr(field, "object")
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		end := skipString(s.b, s.i)
		key := s.b[s.i+1 : end-1]
		s.i = end
		s.space()
		s.i++ // the colon
		if err := fn(key); err != nil {
			return err
		}
		if s.peek() == ',' {
			s.i++
			continue
		}
		s.i++ // the closing brace
		return nil
	}
}

// array calls fn for each element.
func (s *scanner) array(field string, fn func(k int) error) error {
	if s.peek() != '[' {
		return s.typeErr(field, "array")
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for k := 0; ; k++ {
		if err := fn(k); err != nil {
			return err
		}
		if s.peek() == ',' {
			s.i++
			continue
		}
		s.i++
		return nil
	}
}

func (s *scanner) skip() {
	s.space()
	s.i = skipValue(s.b, s.i)
}

// null consumes a null and reports whether there was one: Ganeti treats a
// null member as absent.
func (s *scanner) null() bool {
	if s.peek() == 'n' {
		s.i += 4
		return true
	}
	return false
}

func (s *scanner) number(field string) (float64, error) {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.typeErr(field, "number")
	}
	start := s.i
	s.i = skipValue(s.b, s.i)
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
		return 0, fieldErr(s.path()+"."+field, "number out of range")
	}
	return f, nil
}

func (s *scanner) count(field string) (int64, error) {
	f, err := s.number(field)
	return int64(f), err
}

func (s *scanner) boolean(field string) (bool, error) {
	switch s.peek() {
	case 't':
		s.i += 4
		return true, nil
	case 'f':
		s.i += 5
		return false, nil
	}
	return false, s.typeErr(field, "bool")
}

func (s *scanner) str(field string) (string, error) {
	if s.peek() != '"' {
		return "", s.typeErr(field, "string")
	}
	start := s.i
	s.i = skipString(s.b, s.i)
	v, err := unquote(s.b[start:s.i])
	if err != nil {
		return "", fieldErr(s.path()+"."+field, describeJSONError(err))
	}
	return v, nil
}

func (s *scanner) strings(field string) ([]string, error) {
	var out []string
	err := s.array(field, func(k int) error {
		v, err := s.str(fmt.Sprintf("%s[%d]", field, k))
		out = append(out, v)
		return err
	})
	if out == nil && err == nil {
		out = []string{}
	}
	return out, err
}
