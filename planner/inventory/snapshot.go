package inventory

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/drovehq/drove/events"
)

// The planner service's snapshot holds the inventory as a stream of
// objects rather than one document, written and read one at a time: the
// counts, then each group (JSON: a handful, with nested policies), each
// node and each instance (codec.go: varints and strings, no reflection,
// no field names), every object with where it first appeared and in its
// order, so that restoring is appending. At 100,000 instances a JSON
// document was tens of megabytes built and parsed whole (seconds on a
// busy machine); JSON values one per object still cost half a second of
// CPU to parse, this a fraction of it.

// counts opens the stream: how many objects of each kind follow.
type counts struct {
	Groups    int `json:"groups"`
	Nodes     int `json:"nodes"`
	Instances int `json:"instances"`
}

// groupEntry is a group with where it first appeared.
type groupEntry struct {
	First Pos                   `json:"first"`
	Group *events.GroupDeclared `json:"group"`
}

// Encode writes the whole inventory to w. Equal inventories encode to
// equal bytes.
func (inv *Inventory) Encode(w *bufio.Writer) error {
	wr := &writer{w: w}
	n := counts{len(inv.groupOrder), len(inv.nodeOrder), len(inv.InstanceOrder)}
	wr.uvarint(uint64(n.Groups))
	wr.uvarint(uint64(n.Nodes))
	wr.uvarint(uint64(n.Instances))
	for _, name := range inv.groupOrder {
		b, err := json.Marshal(groupEntry{inv.first[object{kindGroup, name}], inv.groups[name]})
		if err != nil {
			return err
		}
		wr.str(string(b))
	}
	for _, name := range inv.nodeOrder {
		wr.pos(inv.first[object{kindNode, name}])
		wr.node(inv.Nodes[name])
	}
	for _, name := range inv.InstanceOrder {
		wr.pos(inv.first[object{kindInstance, name}])
		wr.instance(inv.Instances[name])
	}
	return wr.err
}

// Decode reads an inventory Encode wrote. Objects come in their order, so
// each is appended to it: no sorting, no search.
func Decode(r *bufio.Reader) (*Inventory, error) {
	rd := newReader(r)
	n := counts{rd.length(), rd.length(), rd.length()}
	if rd.err != nil {
		return nil, fmt.Errorf("inventory: counts: %w", rd.err)
	}
	inv := New()
	// Counts come from a file: cap the room made ahead, let append grow.
	inv.groupOrder = make([]string, 0, min(n.Groups, 1<<16))
	inv.nodeOrder = make([]string, 0, min(n.Nodes, 1<<20))
	inv.InstanceOrder = make([]string, 0, min(n.Instances, 1<<22))
	for i := range n.Groups {
		var e groupEntry
		if err := json.Unmarshal(rd.raw(), &e); err != nil || rd.err != nil || e.Group == nil {
			return nil, fmt.Errorf("inventory: group %d: %w", i, errors.Join(rd.err, err, errNoGroup(e)))
		}
		if err := inv.restore(&inv.groupOrder, kindGroup, e.Group.Name, e.First); err != nil {
			return nil, err
		}
		inv.groups[e.Group.Name] = e.Group
	}
	for range n.Nodes {
		pos, nd := rd.pos(), rd.node()
		if rd.err != nil {
			return nil, fmt.Errorf("inventory: node %d: %w", len(inv.nodeOrder), rd.err)
		}
		if err := inv.restore(&inv.nodeOrder, kindNode, nd.Name, pos); err != nil {
			return nil, err
		}
		inv.Nodes[nd.Name] = nd
	}
	for range n.Instances {
		pos, in := rd.pos(), rd.instance()
		if rd.err != nil {
			return nil, fmt.Errorf("inventory: instance %d: %w", len(inv.InstanceOrder), rd.err)
		}
		if err := inv.restore(&inv.InstanceOrder, kindInstance, in.Name, pos); err != nil {
			return nil, err
		}
		inv.Instances[in.Name] = in
	}
	return inv, nil
}

func errNoGroup(e groupEntry) error {
	if e.Group == nil {
		return errors.New("no group")
	}
	return nil
}

// restore appends a decoded object to its order.
func (inv *Inventory) restore(order *[]string, kind, name string, first Pos) error {
	key := object{kind, name}
	if _, dup := inv.first[key]; dup {
		return fmt.Errorf("inventory: %s %q twice", kind, name)
	}
	inv.first[key] = first
	*order = append(*order, name)
	return nil
}
