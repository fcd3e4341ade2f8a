// Package partition tests network partitions, not only crashes: the
// executors and the three Apache Kafka brokers (replication 3,
// min.insync.replicas 2) run as hosts of their own (network namespaces
// with veth pairs on a bridge, each with its own address; the planner,
// projector and gateway run on the host, on the bridge's), and the test
// cuts a host off in the middle of a move and heals it later: the source
// (link down), then the target, then a node from the brokers only (a
// firewall rule in its namespace), then the busiest partition's leader
// from the other brokers only (its clients still reach it), then that
// leader's link. While a broker is cut off, writes through the API are
// acknowledged or refused with a 503, and each acknowledged one is kept.
// Afterwards drove verify must find no instance running twice and no
// opcode run twice, every move must be done or rolled back, and drove
// replay must find the views equal to the log. It needs root, ip(8) with
// netns, veth and bridge support, iptables, and the broker's jars
// (test/tools/deps.sh).
package partition
