package planner

import (
	"fmt"
	"slices"
	"strings"
)

// Ganeti's location and migration tags, read from cluster and node tags the
// way htools reads them.
//
// Location: a cluster tag "htools:nlocation:P" makes every node tag that
// starts with "P:" a location tag of that node: a common-failure domain
// (a rack, a power feed). An internally mirrored instance whose primary and
// secondary share k location tags has location score k; a node's location
// score is the sum over its primaries of their location scores plus, for
// each, the number of the instance's desired locations the node is not in
// (cluster tag "htools:desiredlocation:P": instance tags starting with P
// are desired locations). The cluster score adds the location scores of the
// online nodes (weight 1) and, for every pair of a node location tag and
// an instance exclusion tag, the number of online primaries beyond the
// first that carry both (weight 1): instances that exclude each other
// should not share a failure domain either.
//
// Migration: a cluster tag "htools:migration:P" makes every node tag that
// starts with "P:" a migration tag. An instance may only migrate or fail
// over from a node to a node that accepts all the source's migration tags;
// a node accepts its own migration tags and, for each cluster tag
// "htools:allowmigration:A::B", tag A wherever it has tag B.

const (
	LocationTagPrefix        = "htools:nlocation:"
	DesiredLocationTagPrefix = "htools:desiredlocation:"
	MigrationTagPrefix       = "htools:migration:"
	AllowMigrationTagPrefix  = "htools:allowmigration:"
)

// prefixedTags returns the node tags that the cluster tags with prefix
// make special: node tags starting with "P:" for each cluster tag prefix+P.
func prefixedTags(clusterTags, nodeTags []string, prefix string) []string {
	var out []string
	for _, ct := range clusterTags {
		p, ok := strings.CutPrefix(ct, prefix)
		if !ok {
			continue
		}
		for _, t := range nodeTags {
			if strings.HasPrefix(t, p+":") && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// allowedMigrations parses "htools:allowmigration:A::B" cluster tags into
// (A, B) pairs; a tag with no "::" or more than one is ignored, as in
// Ganeti.
func allowedMigrations(clusterTags []string) [][2]string {
	var out [][2]string
	for _, ct := range clusterTags {
		rest, ok := strings.CutPrefix(ct, AllowMigrationTagPrefix)
		if !ok || strings.Count(rest, "::") != 1 {
			continue
		}
		a, b, _ := strings.Cut(rest, "::")
		out = append(out, [2]string{a, b})
	}
	return out
}

// receivable is the set of migration tags a node with tags mig accepts.
func receivable(mig []string, allowed [][2]string) []string {
	out := slices.Clone(mig)
	for _, t := range mig {
		for _, ab := range allowed {
			if ab[1] == t && !slices.Contains(out, ab[0]) {
				out = append(out, ab[0])
			}
		}
	}
	slices.Sort(out)
	return out
}

// desiredLocations returns the instance tags that name desired locations.
func desiredLocations(clusterTags, instTags []string) []string {
	var out []string
	for _, ct := range clusterTags {
		p, ok := strings.CutPrefix(ct, DesiredLocationTagPrefix)
		if !ok || p == "" {
			continue
		}
		for _, t := range instTags {
			if strings.HasPrefix(t, p) && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// commonCount counts the strings two sorted lists share.
func commonCount(a, b []string) int32 {
	var n int32
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); ok {
			n++
		}
	}
	return n
}

// dsrdScore is how many of in's desired locations node n is not in.
func dsrdScore(n *nodeState, in *instState) int32 {
	if len(in.dsrd) == 0 {
		return 0
	}
	return int32(len(in.dsrd)) - commonCount(in.dsrd, n.loc)
}

// pairScore is the location score of an instance on primary p and
// secondary sec (0 without a secondary).
func (s *state) pairScore(p, sec int32) int32 {
	if p == NoNode || sec == NoNode {
		return 0
	}
	return commonCount(s.nodes[p].loc, s.nodes[sec].loc)
}

// refreshLocation updates in's location score after a move changed its
// nodes, and its primary's sum with it, on the trial copies in o. Location
// tags never change, so the base books tell them.
func (s *state) refreshLocation(o *overlay, in *instState) {
	if !s.locActive || in.pri == NoNode {
		return
	}
	ls := s.pairScore(in.pri, in.sec)
	if ls != in.locScore {
		p := o.node(s, in.pri)
		p.locScore += ls - in.locScore
		in.locScore = ls
	}
}

// migrationRefusal checks that in may migrate or fail over from node
// from to node to.
func (s *state) migrationRefusal(from, to int32) failure {
	if !s.migActive || from == NoNode {
		return failure{}
	}
	src, dst := s.mig[from], s.rmig[to]
	for _, t := range src {
		if _, ok := slices.BinarySearch(dst, t); !ok {
			return failure{kind: failMigration, node: to, tag: fmt.Sprintf(
				"%s has migration tags [%s] but %s accepts only [%s]",
				s.nodeName(from), strings.Join(src, ", "), s.nodeName(to), strings.Join(dst, ", "))}
		}
	}
	return failure{}
}

// loadTags reads location and migration tags into the books.
func (s *state) loadTags() {
	c := s.c
	allowed := allowedMigrations(c.Tags)
	s.mig = make([][]string, len(c.Nodes))
	s.rmig = make([][]string, len(c.Nodes))
	for i := range c.Nodes {
		tags := c.Nodes[i].Tags
		s.nodes[i].loc = prefixedTags(c.Tags, tags, LocationTagPrefix)
		s.mig[i] = prefixedTags(c.Tags, tags, MigrationTagPrefix)
		s.rmig[i] = receivable(s.mig[i], allowed)
		s.locActive = s.locActive || len(s.nodes[i].loc) > 0
		s.migActive = s.migActive || len(s.mig[i]) > 0
	}
	for _, t := range c.Tags {
		s.locActive = s.locActive || strings.HasPrefix(t, DesiredLocationTagPrefix)
	}
}

// lxKey is one (node location tag, instance exclusion tag) pair, within a
// group (group -1: the whole cluster).
type lxKey struct {
	group     int32
	loc, excl string
}

// locExclPairs calls fn for every pair in on node n makes.
func locExclPairs(n *nodeState, in *instState, fn func(loc, excl string)) {
	for _, l := range n.loc {
		for _, e := range in.exclTags {
			fn(l, e)
		}
	}
}

// locExclAdd records (sign 1) or forgets (sign -1) in as a primary of
// node n in the pair counts, keeping each group's component and the
// cluster's correction current.
func (s *state) locExclAdd(n *nodeState, in *instState, sign int32) {
	if n.offline || len(in.exclTags) == 0 || len(n.loc) == 0 {
		return
	}
	g := n.group
	locExclPairs(n, in, func(l, e string) {
		for _, k := range []lxKey{{g, l, e}, {-1, l, e}} {
			before := s.lx[k]
			after := before + sign
			if after == 0 {
				delete(s.lx, k)
			} else {
				s.lx[k] = after
			}
			if k.group < 0 {
				s.lxSpread += float64(spread(after) - spread(before))
			} else {
				s.groups[g].locExcl += float64(spread(after) - spread(before))
			}
		}
	})
}

// spread is a pair's share of the component: the primaries beyond the
// first.
func spread(count int32) int32 {
	if count <= 0 {
		return 0
	}
	return count - 1
}

// locExclDelta is how the component of scope (a group, or wholeCluster)
// changes when in's primary moves from node a to node b (either may be
// NoNode); a and b are the books before and after.
func (s *state) locExclDelta(in *instState, a, b *nodeState, scope int32) float64 {
	if len(in.exclTags) == 0 {
		return 0
	}
	var adj map[lxKey]int32
	var d int32
	count := func(k lxKey) int32 { return s.lx[k] + adj[k] }
	step := func(n *nodeState, sign int32) {
		if n == nil || n.offline || len(n.loc) == 0 || (scope != wholeCluster && n.group != scope) {
			return
		}
		g := n.group
		if scope == wholeCluster {
			g = -1
		}
		locExclPairs(n, in, func(l, e string) {
			k := lxKey{g, l, e}
			before := count(k)
			if adj == nil {
				adj = map[lxKey]int32{}
			}
			adj[k] += sign
			d += spread(before+sign) - spread(before)
		})
	}
	step(a, -1)
	step(b, 1)
	return float64(d)
}

// books returns node i's committed books, or nil for NoNode.
func (s *state) books(i int32) *nodeState {
	if i == NoNode {
		return nil
	}
	return &s.nodes[i]
}

// CheckTarget says why instance may not move its primary to node, or ""
// when it may: the move the planner would make for it (a failover to its
// secondary, a new replica there then a failover, or a migration to a node
// of shared or copied storage) is tried against every node check, the
// group's instance policy ratios and the migration tags, as a planned move
// is. It lets a move whose target a person chose obey the same rules; o's
// IgnoreSoftErrors lets it break the soft ones.
func CheckTarget(c *Cluster, instance, node string, o Options) (string, error) {
	s, err := newState(c, o)
	if err != nil {
		return "", err
	}
	i, t := s.instance(instance), s.node(node)
	switch {
	case i < 0:
		return "", fmt.Errorf("%w: %q", ErrUnknownInstance, instance)
	case t < 0:
		return "", fmt.Errorf("%w: %q", ErrUnknownNode, node)
	}
	in := s.insts[i]
	var c1 candidate
	switch {
	case in.mirror == NotMirrored:
		return fmt.Sprintf("storage kind %q is not mirrored: it cannot leave %s", in.kind, s.nodeName(in.pri)), nil
	case in.mirror == MirroredInternally && t == in.sec:
		c1 = mk(move{mvFailover, 0})
	case in.mirror == MirroredInternally:
		c1 = mk(move{mvReplaceAndFailover, t})
	default:
		c1 = mk(move{mvFailoverToAny, t})
	}
	x := newSearch(s, in, s.nodes[t].group)
	if _, _, f := x.eval(c1); !f.ok() {
		x.why.add(f)
		return x.why.describe(s), nil
	}
	return "", nil
}
