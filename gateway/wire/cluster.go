package wire

import "time"

// Node is a node with the number of instances it holds in each role.
type Node struct {
	Name  string `db:"name" json:"name"`
	Group string `db:"group_name" json:"group"`
	NodeCapacity
	Offline            bool      `db:"offline" json:"offline"`
	Drained            bool      `db:"drained" json:"drained"`
	VMCapable          bool      `db:"vm_capable" json:"vm_capable"`
	Tags               []string  `db:"tags" json:"tags"`
	UpdatedAt          time.Time `db:"updated_at" json:"updated_at"`
	PrimaryInstances   int64     `db:"primary_instances" json:"primary_instances"`
	SecondaryInstances int64     `db:"secondary_instances" json:"secondary_instances"`
	// when the node's executor last renewed its lease; absent when it never has
	HeartbeatAt *time.Time `db:"heartbeat_at" json:"heartbeat_at,omitempty"`
}

// NodeCapacity is what a node has, in all and free.
type NodeCapacity struct {
	TotalMemoryMiB int64 `db:"total_memory_mib" json:"total_memory_mib"`
	TotalDiskMiB   int64 `db:"total_disk_mib" json:"total_disk_mib"`
	TotalCPUs      int   `db:"total_cpus" json:"total_cpus"`
	TotalSpindles  int   `db:"total_spindles" json:"total_spindles"`
	FreeMemoryMiB  int64 `db:"free_memory_mib" json:"free_memory_mib"`
	FreeDiskMiB    int64 `db:"free_disk_mib" json:"free_disk_mib"`
}

// Instance is an instance with where it runs now.
type Instance struct {
	Name      string   `db:"name" json:"name"`
	Owner     string   `db:"owner" json:"owner"`
	MemoryMiB int64    `db:"memory_mib" json:"memory_mib"`
	VCPUs     int      `db:"vcpus" json:"vcpus"`
	DiskMiB   int64    `db:"disk_mib" json:"disk_mib"`
	Storage   string   `db:"storage" json:"storage"`
	RunState  string   `db:"run_state" json:"run_state"`
	Group     string   `db:"group_name" json:"group"`
	Primary   string   `db:"primary_node" json:"primary"`
	Secondary string   `db:"secondary_node" json:"secondary"`
	Tags      []string `db:"tags" json:"tags"`
	// whether the owner may migrate it: true or false override the
	// setting, null follows it
	UserMigration *bool `db:"user_migration" json:"user_migration"`
	// its own downtime budget (PUT .../max-downtime): a migration of it
	// that asks for none is held to it, over the settings'; 0 follows the
	// settings'
	MaxDowntimeMS int64     `db:"max_downtime_ms" json:"max_downtime_ms"`
	LastRequest   string    `db:"last_request" json:"last_request,omitempty"`
	UpdatedAt     time.Time `db:"updated_at" json:"updated_at"`
}

// InstanceSize is what an instance takes of its node.
type InstanceSize struct {
	MemoryMiB int64 `db:"memory_mib" json:"memory_mib"`
	VCPUs     int   `db:"vcpus" json:"vcpus"`
	DiskMiB   int64 `db:"disk_mib" json:"disk_mib"`
}

// Group is a node group with its node count.
type Group struct {
	Name        string    `db:"name" json:"name"`
	AllocPolicy string    `db:"alloc_policy" json:"alloc_policy"`
	Tags        []string  `db:"tags" json:"tags"`
	UpdatedAt   time.Time `db:"updated_at" json:"updated_at"`
	Nodes       int64     `db:"nodes" json:"nodes"`
}

// NodeAction is a node command (undrain, offline, online) as the API
// shows it (GET /v1/node-actions/{id}): requested, then done or refused
// with the planner service's answer.
type NodeAction struct {
	Request string `db:"request" json:"request"`
	Node    string `db:"node" json:"node"`
	Action  string `db:"action" json:"action" enum:"undrain,offline,online"`
	Actor   string `db:"actor" json:"actor"`
	// why the actor asked
	Why         string    `db:"why" json:"reason"`
	RequestedAt time.Time `db:"requested_at" json:"requested_at"`
	State       string    `db:"state" json:"state" enum:"requested,done,refused"`
	// the planner service's reason, when refused
	Answer  string     `db:"reason" json:"answer,omitempty"`
	EndedAt *time.Time `db:"ended_at" json:"ended_at,omitempty"`
}

// Page is every list answer: a page of items and the cursor of the next.
type Page[T any] struct {
	Items []T `json:"items"`
	// cursor: pass as ?after= for the next page; absent on the last page
	Next string `json:"next,omitempty"`
}
