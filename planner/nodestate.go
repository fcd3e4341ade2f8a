package planner

// This file keeps each node's books the way Ganeti's htools keep them, so
// that Drove accepts and refuses exactly the placements hail does where
// their rules overlap. Every operation returns a changed copy of the node
// and never writes the shared maps: callers try moves on copies and commit
// only the one they choose (see overlay in moves.go).

// failKind is why a node refused an instance.
type failKind uint8

const (
	failNone failKind = iota
	failMem
	failDisk
	failDiskReserve
	failSpindles
	failSpindleRatio
	failCPU
	failRedundancy
	failSecMem
	failTags
	failPolicy    // outside the group's instance policy; tag holds why
	failCapacity  // the cluster would lose N+1 redundancy; tag holds why
	failMigration // migration tags forbid the move; tag holds why
	failKinds     // number of kinds
)

// failure is one refusal, with the figures an operator needs to act on it.
type failure struct {
	kind failKind
	node int32
	need int64 // what the instance needs (MiB, vCPUs, spindles)
	have int64 // what the node has left
	tag  string
	// pmode is hail's mode of a policy refusal (failPolicy).
	pmode FailMode
}

func (f failure) ok() bool { return f.kind == failNone }

// instState is what the node books need to know about an instance.
type instState struct {
	idx        int32
	mem        int64
	dsk        int64
	vcpus      int64
	spindleUse int64
	spindles   int64 // total spindles of its disks; -1 when not given
	usesMem    bool  // running: takes memory on its primary
	online     bool  // not offline: takes CPUs on its primary
	usesSecMem bool  // its secondary must be able to run it (N+1)
	localDisk  bool
	exclTags   []string
	dsrd       []string // desired location tags
	locScore   int32    // location tags its primary and secondary share
	kind       StorageKind
	mirror     Mirroring
	pri, sec   int32
}

// nodeState is one node's mutable books. It is copied by value when moves
// are tried; peers and tags are shared and written only on commit.
type nodeState struct {
	idx     int32
	group   int32
	offline bool // offline, drained or not vm-capable: takes nothing new

	tMem      float64
	nMem      int64
	iMem      int64
	xMem      int64 // memory the node is missing against the records
	fMemForth int64

	tDsk  float64
	fDsk  int64
	loDsk int64

	tCpu      float64
	uCpu      int64
	vcpuRatio float64

	tSp    int64
	fSp    int64
	instSp float64
	hiSp   float64
	excl   bool

	rMem   int64
	failN1 bool

	nPri      int32
	nSec      int32
	conflicts int32    // Ganeti's conflictingPrimaries: sum(tag counts) - distinct tags
	loc       []string // location tags, sorted; shared, never written
	locScore  int32    // sum over primaries of location and desired-location scores

	peers map[int32]int64 // memory reserved per primary peer
	// peerBits has bit p%64 set for every primary peer p in peers: most
	// lookups of a peer the node does not have end on it, without the
	// map (a search asks every node of a group).
	peerBits uint64
	tags     map[string]int32

	// padj holds changes to peers made on this copy and not yet written to
	// the shared map: a tried move may add and then remove a secondary on
	// the same node, and must see its own changes.
	padj  [4]peerAdj
	npadj int8
}

type peerAdj struct {
	pdx int32
	d   int64
}

// peer is the memory reserved on n for instances whose primary is pdx.
func (n *nodeState) peer(pdx int32) int64 {
	var v int64
	if n.peerBits&peerBit(pdx) != 0 {
		v = n.peers[pdx]
	}
	for i := int8(0); i < n.npadj; i++ {
		if n.padj[i].pdx == pdx {
			v += n.padj[i].d
		}
	}
	return v
}

func (n *nodeState) adjustPeer(pdx int32, d int64) {
	for i := int8(0); i < n.npadj; i++ {
		if n.padj[i].pdx == pdx {
			n.padj[i].d += d
			return
		}
	}
	if int(n.npadj) == len(n.padj) {
		panic("planner: too many peer changes on one node in one move")
	}
	n.padj[n.npadj] = peerAdj{pdx, d}
	n.npadj++
}

// maxPeer is the largest reservation among the node's peers.
func (n *nodeState) maxPeer() int64 {
	var m int64
	for p, r := range n.peers {
		for i := int8(0); i < n.npadj; i++ {
			if n.padj[i].pdx == p {
				r += n.padj[i].d
			}
		}
		if r > m {
			m = r
		}
	}
	for i := int8(0); i < n.npadj; i++ {
		if _, ok := n.peers[n.padj[i].pdx]; !ok && n.padj[i].d > m {
			m = n.padj[i].d
		}
	}
	return m
}

// peerBit is pdx's bit in peerBits.
func peerBit(pdx int32) uint64 { return 1 << (uint32(pdx) % 64) }

// setPeer writes the reservation for primary pdx to the shared map.
func (n *nodeState) setPeer(pdx int32, v int64) {
	if v > 0 {
		n.peers[pdx] = v
		n.peerBits |= peerBit(pdx)
		return
	}
	delete(n.peers, pdx)
	n.peerBits = 0
	for p := range n.peers {
		n.peerBits |= peerBit(p)
	}
}

// flushPeers writes the copy's peer changes to the shared map.
func (n *nodeState) flushPeers() {
	for i := int8(0); i < n.npadj; i++ {
		a := n.padj[i]
		n.setPeer(a.pdx, n.peers[a.pdx]+a.d)
	}
	n.npadj = 0
}

// unallocated is the memory the node can still give, trusting the smaller
// of what the records say and what the node reported.
func (n *nodeState) unallocated() int64 {
	x := n.xMem
	if x < 0 {
		x = 0
	}
	return int64(n.tMem) - n.nMem - n.iMem - x
}

func (n *nodeState) pMem() float64 { return float64(n.unallocated()) / n.tMem }

func (n *nodeState) pDsk() float64 {
	if n.excl {
		if n.tSp == 0 {
			return 1
		}
		return float64(n.fSp) / float64(n.tSp)
	}
	if n.tDsk == 0 {
		return 1
	}
	return float64(n.fDsk) / n.tDsk
}

func (n *nodeState) spindleDelta(in *instState, add bool) (free int64, inst float64) {
	free, inst = 0, n.instSp
	if n.excl {
		inst = 0
		free = n.fSp
		if in.spindles < 0 {
			if add {
				free = -1 // unknown spindles never fit exclusive storage
			}
		} else if add {
			free -= in.spindles
		} else {
			free += in.spindles
		}
		return free, inst
	}
	if in.localDisk {
		if add {
			inst += float64(in.spindleUse)
		} else {
			inst -= float64(in.spindleUse)
		}
	}
	return free, inst
}

// tagConflict returns the first exclusion tag of in already on the node.
func (n *nodeState) tagConflict(in *instState) string {
	for _, t := range in.exclTags {
		if n.tags[t] > 0 {
			return t
		}
	}
	return ""
}

// tagDelta is how conflictingPrimaries changes when in is added or removed.
func (n *nodeState) tagDelta(in *instState, add bool) int32 {
	var d int32
	for _, t := range in.exclTags {
		c := n.tags[t]
		if add && c > 0 {
			d++
		}
		if !add && c > 1 {
			d--
		}
	}
	return d
}

// addPri places in as a primary instance. strict=false skips the soft
// checks, as Ganeti does when forced or when leaving an offline node.
func addPri(n nodeState, in *instState, strict bool) (nodeState, failure) {
	fail := func(k failKind, need, have int64) (nodeState, failure) {
		return n, failure{kind: k, node: n.idx, need: need, have: have}
	}
	iMem := n.iMem
	if in.usesMem {
		iMem += in.mem
	}
	old := n
	n.iMem = iMem
	free := n.unallocated()
	newFailN1 := free <= n.rMem
	dsk := n.fDsk
	if in.localDisk {
		dsk -= in.dsk
	}
	fSp, instSp := n.spindleDelta(in, true)
	uCpu := n.uCpu
	if in.online {
		uCpu += in.vcpus
	}
	memForth := n.fMemForth - in.mem
	switch {
	case free <= 0:
		return fail(failMem, in.mem, old.unallocated())
	case in.localDisk && dsk <= 0:
		return fail(failDisk, in.dsk, old.fDsk)
	case strict && in.localDisk && dsk < n.loDsk:
		return fail(failDiskReserve, in.dsk, old.fDsk-n.loDsk)
	case in.localDisk && n.excl && fSp < 0:
		return fail(failSpindles, in.spindles, old.fSp)
	case strict && in.localDisk && instSp > n.hiSp:
		return fail(failSpindleRatio, in.spindleUse, int64(n.hiSp-old.instSp))
	case strict && newFailN1 && !old.failN1:
		return fail(failRedundancy, in.mem, old.unallocated()-old.rMem)
	case strict && n.vcpuRatio >= 0 && n.vcpuRatio < float64(uCpu)/n.tCpu:
		return fail(failCPU, in.vcpus, int64(n.vcpuRatio*n.tCpu)-old.uCpu)
	case strict && n.tagConflict(in) != "":
		f := failure{kind: failTags, node: n.idx, tag: n.tagConflict(in)}
		return old, f
	case strict && memForth <= 0:
		return fail(failMem, in.mem, old.fMemForth)
	}
	n.failN1 = newFailN1
	n.fDsk = dsk
	n.fSp, n.instSp = fSp, instSp
	n.uCpu = uCpu
	n.fMemForth = memForth
	n.nPri++
	n.conflicts += n.tagDelta(in, true)
	n.locScore += in.locScore + dsrdScore(&n, in)
	return n, failure{}
}

// removePri takes in off the node as a primary. It cannot fail.
func removePri(n nodeState, in *instState) nodeState {
	if in.usesMem {
		n.iMem -= in.mem
	}
	n.failN1 = n.unallocated() <= n.rMem
	if in.localDisk {
		n.fDsk += in.dsk
	}
	n.fSp, n.instSp = n.spindleDelta(in, false)
	if in.online {
		n.uCpu -= in.vcpus
	}
	n.fMemForth += in.mem
	n.nPri--
	n.conflicts += n.tagDelta(in, false)
	n.locScore -= in.locScore + dsrdScore(&n, in)
	return n
}

// addSec places in as a secondary whose primary is pdx. ignoreDisks is
// Ganeti's escape for failing over from an offline primary.
func addSec(n nodeState, in *instState, pdx int32, strict, ignoreDisks bool) (nodeState, failure) {
	fail := func(k failKind, need, have int64) (nodeState, failure) {
		return n, failure{kind: k, node: n.idx, need: need, have: have}
	}
	var secMem int64
	if in.usesSecMem {
		secMem = in.mem
	}
	peem := n.peer(pdx) + secMem
	oldMem := n.unallocated()
	dsk := n.fDsk - in.dsk
	fSp, instSp := n.spindleDelta(in, true)
	rMem := n.rMem
	if peem > rMem {
		rMem = peem
	}
	newFailN1 := oldMem <= rMem
	switch {
	case !ignoreDisks && dsk <= 0:
		return fail(failDisk, in.dsk, n.fDsk)
	case strict && dsk < n.loDsk:
		return fail(failDiskReserve, in.dsk, n.fDsk-n.loDsk)
	case n.excl && fSp < 0:
		return fail(failSpindles, in.spindles, n.fSp)
	case strict && instSp > n.hiSp:
		return fail(failSpindleRatio, in.spindleUse, int64(n.hiSp-n.instSp))
	case strict && secMem >= oldMem:
		return fail(failSecMem, secMem, oldMem)
	case strict && newFailN1 && !n.failN1:
		return fail(failRedundancy, secMem, oldMem-n.rMem)
	case strict && secMem >= n.fMemForth:
		return fail(failSecMem, secMem, n.fMemForth)
	}
	n.fDsk = dsk
	n.fSp, n.instSp = fSp, instSp
	n.rMem = rMem
	n.failN1 = newFailN1
	n.nSec++
	if secMem != 0 {
		n.adjustPeer(pdx, secMem)
	}
	return n, failure{}
}

// removeSec takes in off the node as a secondary whose primary is pdx.
func removeSec(n nodeState, in *instState, pdx int32) nodeState {
	if in.localDisk {
		n.fDsk += in.dsk
	}
	n.fSp, n.instSp = n.spindleDelta(in, false)
	old := n.peer(pdx)
	if in.usesSecMem && in.mem != 0 {
		n.adjustPeer(pdx, -in.mem)
	}
	if old >= n.rMem {
		n.rMem = n.maxPeer()
	}
	n.failN1 = n.unallocated() <= n.rMem
	n.nSec--
	return n
}

// commitPriTags records on the shared tag map that in left or joined the
// node as a primary.
func commitPriTags(n *nodeState, in *instState, add bool) {
	for _, t := range in.exclTags {
		if add {
			n.tags[t]++
		} else if n.tags[t] > 1 {
			n.tags[t]--
		} else {
			delete(n.tags, t)
		}
	}
}
