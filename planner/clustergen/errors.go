package clustergen

import "errors"

var (
	// ErrInvalidSpec is returned by Spec.Validate and Generate when a Spec
	// asks for something impossible or meaningless; the message lists every
	// problem.
	ErrInvalidSpec = errors.New("invalid cluster spec")
	// ErrNoRoom is returned by Generate when a mirrored instance finds no
	// node in its group with disk space for its secondary: the disk fill is
	// too high for the node sizes drawn.
	ErrNoRoom = errors.New("no room for a secondary")
)
