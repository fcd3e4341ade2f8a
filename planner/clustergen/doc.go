// Package clustergen builds synthetic Ganeti-like clusters for tests and
// benchmarks of the planner: node groups of realistic servers, instances of
// varied sizes and storage kinds placed on them, and the requests
// (node-evacuate, change-group) that exercise the planner and Ganeti's hail
// on the same input.
//
// Everything is derived from Spec.Seed through a PCG source, so the same
// Spec always gives the same cluster. The package does no I/O, like the
// planner it feeds.
//
// How a cluster is built:
//
//  1. spec.go fills in defaults and validates the Spec, including that the
//     memory fill asked for is reachable with the instance sizes allowed.
//  2. generate.go draws each node's capacity, then that node's primary
//     instances, sized so their memory adds up to Spec.Fill of the node.
//  3. Internally mirrored instances (drbd, zfs-replicated) get a secondary
//     in the same group, chosen among nodes with disk room so that the
//     secondary can still take over its peers (N+1) wherever possible.
//  4. recount.go derives each node's free memory and disk from the
//     placements, exactly as Ganeti reports them.
//  5. requests.go turns a cluster into planner requests.
package clustergen
