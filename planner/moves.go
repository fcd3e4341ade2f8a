package planner

// The primitive moves are Ganeti's (htools IMove); a candidate placement is
// a short list of them. Each is tried on an overlay: copies of the few node
// books it touches, so that a refused or outscored candidate leaves the
// state untouched.

type moveKind uint8

const (
	// mvFailover swaps primary and secondary.
	mvFailover moveKind = iota
	// mvFailoverToAny moves the primary to node (shared or copied disks).
	mvFailoverToAny
	// mvReplaceSecondary builds a new replica on node and drops the old.
	mvReplaceSecondary
	// mvReplaceAndFailover builds a replica on node, then fails over to it:
	// the old primary becomes the secondary.
	mvReplaceAndFailover
	// mvFailoverAndReplace fails over to the secondary, then builds a new
	// replica on node instead of the old primary.
	mvFailoverAndReplace
	// mvPlace puts a new instance on node as its primary.
	mvPlace
	// mvPlaceSecondary puts a new instance's replica on node. Like hail,
	// it never skips the soft checks, even when forced.
	mvPlaceSecondary
)

type move struct {
	kind moveKind
	node int32
}

// overlay holds trial copies of node books.
type overlay struct {
	n   int
	idx [8]int32
	ns  [8]nodeState
}

func (o *overlay) reset() { o.n = 0 }

// node returns the trial copy of node i, copying it in on first use.
func (o *overlay) node(s *state, i int32) *nodeState {
	for k := 0; k < o.n; k++ {
		if o.idx[k] == i {
			return &o.ns[k]
		}
	}
	o.idx[o.n] = i
	o.ns[o.n] = s.nodes[i]
	o.n++
	return &o.ns[o.n-1]
}

// apply tries one primitive move of in on the overlay. force skips soft
// checks (Options.IgnoreSoftErrors). On failure the overlay is left in an
// unspecified state and must be reset.
func (s *state) apply(o *overlay, in *instState, mv move, force bool) failure {
	P, S := in.pri, in.sec
	pOff := P != NoNode && s.nodes[P].offline
	var f failure
	switch mv.kind {
	case mvFailover, mvFailoverAndReplace:
		if f = s.migrationRefusal(P, S); !f.ok() {
			return f
		}
	case mvFailoverToAny, mvReplaceAndFailover:
		if f = s.migrationRefusal(P, mv.node); !f.ok() {
			return f
		}
	}
	switch mv.kind {
	case mvFailover:
		p, q := o.node(s, P), o.node(s, S)
		intP := removePri(*p, in)
		intS := removeSec(*q, in, P)
		strict := !(pOff || force)
		if *q, f = addPri(intS, in, strict); !f.ok() {
			return f
		}
		if *p, f = addSec(intP, in, S, strict, pOff); !f.ok() {
			return f
		}
		in.pri, in.sec = S, P
	case mvFailoverToAny:
		t := o.node(s, mv.node)
		if *t, f = addPri(*t, in, !(pOff || force)); !f.ok() {
			return f
		}
		p := o.node(s, P)
		*p = removePri(*p, in)
		in.pri = mv.node
	case mvReplaceSecondary:
		sOff := s.nodes[S].offline
		q := o.node(s, S)
		*q = removeSec(*q, in, P)
		t := o.node(s, mv.node)
		if *t, f = addSec(*t, in, P, !(sOff || force), false); !f.ok() {
			return f
		}
		in.sec = mv.node
	case mvReplaceAndFailover:
		sOff := s.nodes[S].offline
		p, q := o.node(s, P), o.node(s, S)
		intP := removePri(*p, in)
		*q = removeSec(*q, in, P)
		t := o.node(s, mv.node)
		if *t, f = addPri(*t, in, !force); !f.ok() {
			return f
		}
		if *p, f = addSec(intP, in, mv.node, !(sOff || force), false); !f.ok() {
			return f
		}
		in.pri, in.sec = mv.node, P
	case mvFailoverAndReplace:
		p, q := o.node(s, P), o.node(s, S)
		*p = removePri(*p, in)
		intS := removeSec(*q, in, P)
		strict := !(pOff || force)
		if *q, f = addPri(intS, in, strict); !f.ok() {
			return f
		}
		t := o.node(s, mv.node)
		if *t, f = addSec(*t, in, S, strict, false); !f.ok() {
			return f
		}
		in.pri, in.sec = S, mv.node
	case mvPlace:
		t := o.node(s, mv.node)
		if *t, f = addPri(*t, in, !force); !f.ok() {
			return f
		}
		in.pri = mv.node
	case mvPlaceSecondary:
		t := o.node(s, mv.node)
		if *t, f = addSec(*t, in, in.pri, true, false); !f.ok() {
			return f
		}
		in.sec = mv.node
	}
	s.refreshLocation(o, in)
	return failure{}
}

// opcodes turns the moves of in, starting from its current nodes, into the
// opcodes an executor (or Ganeti) runs.
func (s *state) opcodes(in instState, moves []move) []Opcode {
	name := s.spec(in.idx).Name
	var ops []Opcode
	fail := func(to int32, explicit bool) Opcode {
		op := Opcode{Kind: OpMigrate, Instance: name, AllowFailover: true,
			From: s.nodeName(in.pri), To: s.nodeName(to)}
		if s.c.Nodes[in.pri].Offline {
			// A dead node cannot hand over memory: restart from the disks.
			op = Opcode{Kind: OpFailover, Instance: name, IgnoreConsistency: true,
				From: op.From, To: op.To}
		}
		if explicit {
			op.TargetNode = s.nodeName(to)
		}
		return op
	}
	replace := func(to int32) Opcode {
		return Opcode{Kind: OpReplaceDisks, Instance: name, Mode: ReplaceNewSecondary,
			RemoteNode: s.nodeName(to), From: s.nodeName(in.pri), To: s.nodeName(to)}
	}
	for _, mv := range moves {
		switch mv.kind {
		case mvFailover:
			ops = append(ops, fail(in.sec, false))
			in.pri, in.sec = in.sec, in.pri
		case mvFailoverToAny:
			ops = append(ops, fail(mv.node, true))
			in.pri = mv.node
		case mvReplaceSecondary:
			ops = append(ops, replace(mv.node))
			in.sec = mv.node
		case mvReplaceAndFailover:
			ops = append(ops, replace(mv.node))
			in.sec = mv.node
			ops = append(ops, fail(in.sec, false))
			in.pri, in.sec = in.sec, in.pri
		case mvFailoverAndReplace:
			ops = append(ops, fail(in.sec, false))
			in.pri, in.sec = in.sec, in.pri
			ops = append(ops, replace(mv.node))
			in.sec = mv.node
		}
	}
	return ops
}
