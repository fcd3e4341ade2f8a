// Package partition tests network partitions, not only crashes: the
// executors run as hosts of their own (network namespaces with veth pairs
// on a bridge, each with its own address; the broker listens on the
// bridge's), and the test cuts a node off in the middle of a move — the
// source (link down), then the target, then a node from the broker only
// (a firewall rule in its namespace) — and heals it later. Afterwards
// drove verify must find no instance running twice, and every move must
// be done or rolled back. It needs root and ip(8) with netns, veth and
// bridge support, and iptables.
package partition
