package planner

import "errors"

// Errors returned by Plan for requests that cannot be planned at all. A
// request that is valid but whose instances cannot move is not an error: the
// plan lists those instances as failed, with reasons.
var (
	// ErrBadRequest means the request itself is malformed: unknown kind,
	// unknown mode, no instances.
	ErrBadRequest = errors.New("bad request")
	// ErrUnknownInstance means the request names an instance the snapshot
	// does not have.
	ErrUnknownInstance = errors.New("unknown instance")
	// ErrUnknownNode means a name refers to a node the snapshot does not
	// have.
	ErrUnknownNode = errors.New("unknown node")
	// ErrUnknownGroup means the request names a group the snapshot does not
	// have.
	ErrUnknownGroup = errors.New("unknown node group")
	// ErrInconsistent means the snapshot contradicts itself (an instance on
	// a node of no group, a mirrored instance without a secondary, ...).
	ErrInconsistent = errors.New("inconsistent cluster data")
)
