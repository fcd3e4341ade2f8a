package planner

import "fmt"

// RequestKind is the kind of a request, with Ganeti's IAllocator names.
type RequestKind string

const (
	// NodeEvacuate moves instances off their nodes within their group.
	NodeEvacuate RequestKind = "node-evacuate"
	// ChangeGroup moves instances to other node groups.
	ChangeGroup RequestKind = "change-group"
	// Allocate places one new instance (gnt-instance add -I).
	Allocate RequestKind = "allocate"
	// MultiAllocate places several new instances, one after the other, each
	// seeing the ones placed before it (gnt-instance add in bulk).
	MultiAllocate RequestKind = "multi-allocate"
	// Relocate gives one instance a new secondary (internally mirrored
	// storage) or a new primary (external or copied storage) instead of the
	// node(s) in RelocateFrom (gnt-instance replace-disks -I).
	Relocate RequestKind = "relocate"
	// AllocateSecondary finds a secondary for an instance on one node, to
	// convert its disks to DRBD (gnt-instance modify -t drbd -I).
	AllocateSecondary RequestKind = "allocate-secondary"
)

// EvacMode says which role an evacuation empties the nodes of.
type EvacMode string

const (
	PrimaryOnly   EvacMode = "primary-only"
	SecondaryOnly EvacMode = "secondary-only"
	EvacAll       EvacMode = "all"
)

// Valid reports whether m is a known mode.
func (m EvacMode) Valid() bool {
	return m == PrimaryOnly || m == SecondaryOnly || m == EvacAll
}

// Request asks the planner to move instances.
type Request struct {
	Kind      RequestKind
	Instances []string
	// TargetGroups, for ChangeGroup, are the groups (UUID or name) the
	// instances may go to; empty means any group but their own.
	TargetGroups []string
	// Mode, for NodeEvacuate, is the role being emptied.
	Mode EvacMode
	// EvacuatedNodes, for NodeEvacuate, are the nodes being emptied; they
	// never receive instances. Ganeti's protocol does not carry them, so
	// when empty they are inferred: a node is being emptied when every
	// instance holding it in the mode's role is in the request.
	EvacuatedNodes []string
	// New, for Allocate (exactly one) and MultiAllocate, are the instances
	// to place, in order.
	New []NewInstance
	// RelocateFrom, for Relocate, is the node the instance leaves: its
	// secondary, or its primary when its storage has no secondary.
	RelocateFrom []string
	// RequiredNodes, for Relocate, is how many nodes to change; Ganeti (and
	// Drove) support 1.
	RequiredNodes int
}

// NewInstance is an instance to place. Its Primary and Secondary are
// ignored.
type NewInstance struct {
	Instance Instance
	// RequiredNodes is 2 for internally mirrored storage, 1 otherwise.
	RequiredNodes int
	// Group, when set, is the only group (name) it may go to.
	Group string
	// RestrictToNodes, when not empty, are the only nodes it may use.
	RestrictToNodes []string
	// Networks are the networks its NICs connect to; a group must be
	// connected to all of them.
	Networks []string
}

// Options tune a plan. The zero value is not valid; start from
// DefaultOptions.
type Options struct {
	// MaxMovesPerNode bounds the moves a node sends at once (KubeVirt's
	// default is 2 outbound migrations per node).
	MaxMovesPerNode int
	// IgnoreSoftErrors lets moves break soft constraints (N+1, exclusion
	// tags, vCPU and spindle ratios, the disk reserve) in an emergency.
	// Memory and disk capacity still hold.
	IgnoreSoftErrors bool
	// PairCandidates is how many best nodes per role the search keeps when
	// it has to choose a new primary and a new secondary together; larger
	// groups are pruned to this many before pairs are scored exactly. Zero
	// means the default.
	PairCandidates int
	// NoCapacityChecks skips hail's global N+1 check on allocations: that
	// after placing an instance every node of the cluster can still be
	// emptied (hail's --no-capacity-checks).
	NoCapacityChecks bool
	// LimitAtRelease says that whoever runs the plan keeps MaxMovesPerNode
	// itself when it releases jobs, as Drove's job queue does: the plan
	// then chains no node's sends (no dependency on an earlier move of the
	// same sender), so the queue may run a node's moves in the order that
	// finishes soonest. Dependencies that keep memory and disk safe stay.
	LimitAtRelease bool
}

// DefaultOptions returns the options Drove runs with.
func DefaultOptions() Options {
	return Options{MaxMovesPerNode: 2, PairCandidates: 12}
}

// Validate reports every problem of the options at once.
func (o Options) Validate() error {
	var probs []string
	if o.MaxMovesPerNode < 1 {
		probs = append(probs, fmt.Sprintf("max moves per node must be at least 1, got %d", o.MaxMovesPerNode))
	}
	if o.PairCandidates < 0 {
		probs = append(probs, fmt.Sprintf("pair candidates must not be negative, got %d", o.PairCandidates))
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: invalid options: %s", ErrBadRequest, joinProblems(probs))
}

func joinProblems(p []string) string {
	out := ""
	for i, s := range p {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}
