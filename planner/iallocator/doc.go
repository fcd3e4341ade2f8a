// Package iallocator speaks Ganeti's IAllocator protocol: it decodes a
// request document (the cluster's groups, nodes and instances, and an
// allocate, multi-allocate, relocate, node-evacuate or change-group
// request) into planner values, and encodes a plan as the result Ganeti
// expects: {"success", "info", "result"}, where result is the chosen nodes
// (allocate, relocate; success=false when there are none), [[allocated],
// [failed]] (multi-allocate) or [moved, failed, jobs] (node-evacuate,
// change-group). With it, `drove iallocator` can stand in for Ganeti's hail.
//
// Decoding is strict about what Drove needs and lenient about the rest:
// Ganeti sends many fields the planner does not use, and they are ignored;
// a missing or mistyped field the planner needs is a FieldError naming it.
// Object keys keep their document order, because Ganeti breaks ties between
// equally good nodes by that order.
//
// The package does no I/O; it is as pure as the planner.
package iallocator
