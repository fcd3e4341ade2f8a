package planner

import (
	"math"
	"testing"
)

const mb = 1 << 20

func links(m map[string]Link) Links {
	return func(n string) Link {
		if l, ok := m[n]; ok {
			return l
		}
		return DefaultLinks(n)
	}
}

// The bound of small hand-made evacuations, each term worked out by hand
// here rather than by the code under test.
func TestLowerBoundByHand(t *testing.T) {
	fast := Link{Send: 1000 * mb, Receive: 1000 * mb}
	slow := Link{Send: 100 * mb, Receive: 100 * mb}
	cases := []struct {
		name  string
		links map[string]Link
		ts    []Transfer
		limit int
		want  float64
		node  string
	}{
		{
			// a sends 600 MB at 100 MB/s: 6 s; b and c receive 300 MB at 1000.
			name:  "one slow sender",
			links: map[string]Link{"a": slow, "b": fast, "c": fast},
			ts:    []Transfer{{"a", "b", 300 * mb}, {"a", "c", 300 * mb}},
			limit: 5, want: 6, node: "a",
		},
		{
			// c receives 400 MB at 100 MB/s: 4 s, above a's 2 s and b's 2 s.
			name:  "one slow receiver",
			links: map[string]Link{"a": fast, "b": fast, "c": slow},
			ts:    []Transfer{{"a", "c", 200 * mb}, {"b", "c", 200 * mb}},
			limit: 5, want: 4, node: "c",
		},
		{
			// Four moves of 1000 MB at 1000 MB/s, one at a time: 4 s; each
			// node sends or receives 1000 MB only (1 s).
			name:  "the cluster limit",
			links: map[string]Link{"a": fast, "b": fast, "c": fast, "d": fast, "w": fast, "x": fast, "y": fast, "z": fast},
			ts:    []Transfer{{"a", "w", 1000 * mb}, {"b", "x", 1000 * mb}, {"c", "y", 1000 * mb}, {"d", "z", 1000 * mb}},
			limit: 1, want: 4,
		},
		{
			// The cluster term with mixed links: 2 moves of 10 s (slow
			// receiver) and 2 of 1 s, 2 at a time: 22/2 = 11 s.
			name:  "the cluster limit, mixed links",
			links: map[string]Link{"a": fast, "b": fast, "c": fast, "d": fast, "w": slow, "x": slow, "y": fast, "z": fast},
			ts:    []Transfer{{"a", "w", 1000 * mb}, {"b", "x", 1000 * mb}, {"c", "y", 1000 * mb}, {"d", "z", 1000 * mb}},
			limit: 2, want: 11,
		},
		{
			// One move of 500 MB into a slow receiver: 5 s alone, more than
			// anything else.
			name:  "the largest move",
			links: map[string]Link{"a": fast, "b": fast, "c": fast, "w": slow},
			ts:    []Transfer{{"a", "w", 500 * mb}, {"b", "c", 100 * mb}},
			limit: 5, want: 5, node: "w",
		},
	}
	for _, c := range cases {
		var moves [][]Transfer
		for _, t := range c.ts {
			moves = append(moves, []Transfer{t})
		}
		b := LowerBound(moves, links(c.links), c.limit)
		if math.Abs(b.Seconds-c.want) > 1e-9 {
			t.Errorf("%s: bound %.3f s (%+v), want %.3f", c.name, b.Seconds, b, c.want)
		}
		if c.node != "" && b.Node != c.node {
			t.Errorf("%s: busiest node %q, want %q", c.name, b.Node, c.node)
		}
	}
}

// A job's opcodes run one after another, so the largest move is the
// longest job: a new secondary from a to b (2 s) then from b to c (3 s) is
// 5 s, though no opcode alone takes more than 3 s and no node sends or
// receives for more than 3 s.
func TestLowerBoundOfAJobIsItsChain(t *testing.T) {
	l := links(map[string]Link{"a": {Send: 100 * mb, Receive: 100 * mb}, "b": {Send: 100 * mb, Receive: 100 * mb},
		"c": {Send: 100 * mb, Receive: 100 * mb}})
	b := LowerBound([][]Transfer{{{"a", "b", 200 * mb}, {"b", "c", 300 * mb}}}, l, 5)
	if b.Seconds != 5 || b.LargestMoveSeconds != 5 || b.NodeSeconds != 3 || b.ClusterSeconds != 1 {
		t.Fatalf("bound %+v; want 5 s (the chain), busiest node 3 s, cluster 5/5 = 1 s", b)
	}
}

// Links are shared max-min fairly: a slow receiver holds its flow down and
// the sender's other flows take the rest of its link.
func TestShareLinks(t *testing.T) {
	l := links(map[string]Link{
		"a": {Send: 1000 * mb, Receive: 1000 * mb},
		"b": {Send: 1000 * mb, Receive: 100 * mb},
		"c": {Send: 1000 * mb, Receive: 1000 * mb},
		"d": {Send: 1000 * mb, Receive: 1000 * mb},
	})
	rates := ShareLinks([]Transfer{{"a", "b", 1}, {"a", "c", 1}, {"a", "d", 1}}, l)
	want := []float64{100 * mb, 450 * mb, 450 * mb}
	for i := range want {
		if math.Abs(rates[i]-want[i]) > 1 {
			t.Fatalf("rates %v, want %v", rates, want)
		}
	}
	if r := ShareLinks([]Transfer{{"a", "c", 1}, {"d", "c", 1}}, l); r[0] != 500*mb || r[1] != 500*mb {
		t.Fatalf("two senders into one receiver: %v, want half each", r)
	}
}
