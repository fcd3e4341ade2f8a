package iallocator

import (
	"errors"
	"fmt"
)

// ErrInvalid wraps every decoding error: the request is not a usable
// IAllocator request. The message names the field.
var ErrInvalid = errors.New("invalid iallocator request")

// FieldError says which field of a request is wrong and how.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Msg) }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldErr(field, msg string) error { return &FieldError{Field: field, Msg: msg} }
