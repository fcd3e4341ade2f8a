package iallocator

import "github.com/drovehq/drove/planner"

// Answer decodes a request document, plans it and encodes the result. An
// error means the document itself is unusable (errors.Is ErrInvalid, or a
// planner error); instances that cannot move are not errors.
func Answer(input []byte, o planner.Options) ([]byte, error) {
	c, r, err := Decode(input)
	if err != nil {
		return nil, err
	}
	p, err := planner.Compute(c, r, o)
	if err != nil {
		return nil, err
	}
	return EncodeAnswer(r.Kind, p)
}
