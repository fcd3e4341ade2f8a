package inventory

import (
	"encoding/json"

	"github.com/drovehq/drove/events"
)

// image is the inventory as a snapshot keeps it: every field, exported.
type image struct {
	Groups        map[string]*events.GroupDeclared    `json:"groups"`
	Nodes         map[string]*events.NodeAnnounced    `json:"nodes"`
	Instances     map[string]*events.InstanceDeclared `json:"instances"`
	GroupOrder    []string                            `json:"group_order"`
	NodeOrder     []string                            `json:"node_order"`
	InstanceOrder []string                            `json:"instance_order"`
	First         map[string]Pos                      `json:"first"`
}

// MarshalJSON encodes the whole inventory, for the planner service's
// snapshots. Maps encode with sorted keys, so equal inventories encode to
// equal bytes.
func (inv *Inventory) MarshalJSON() ([]byte, error) {
	return json.Marshal(image{inv.groups, inv.Nodes, inv.Instances, inv.groupOrder, inv.nodeOrder, inv.InstanceOrder, inv.first})
}

// UnmarshalJSON restores an inventory MarshalJSON encoded.
func (inv *Inventory) UnmarshalJSON(b []byte) error {
	var im image
	if err := json.Unmarshal(b, &im); err != nil {
		return err
	}
	*inv = *New()
	for k, v := range im.Groups {
		inv.groups[k] = v
	}
	for k, v := range im.Nodes {
		inv.Nodes[k] = v
	}
	for k, v := range im.Instances {
		inv.Instances[k] = v
	}
	for k, v := range im.First {
		inv.first[k] = v
	}
	inv.groupOrder, inv.nodeOrder, inv.InstanceOrder = im.GroupOrder, im.NodeOrder, im.InstanceOrder
	return nil
}
