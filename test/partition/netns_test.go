package partition

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// netw is the test's network: a bridge on the host and one namespace per
// node, joined to it by a veth pair.
type netw struct {
	t      *testing.T
	prefix string // of every interface and namespace name
	subnet string // "10.213.N"
	bridge string
	nodes  map[string]*host
}

// host is one node's namespace.
type host struct {
	ns, hostIf, addr string
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newNetw makes the bridge (the broker's side, subnet.1) and a namespace
// per node (subnet.11, .12, ...); all is removed at the test's end.
func newNetw(t *testing.T, nodes []string) *netw {
	pid := os.Getpid()
	n := &netw{t: t, prefix: fmt.Sprintf("dp%d", pid%10000), subnet: fmt.Sprintf("10.213.%d", pid%250),
		nodes: map[string]*host{}}
	n.bridge = n.prefix + "br"
	if out, err := exec.Command("ip", "netns", "add", n.prefix+"probe").CombinedOutput(); err != nil {
		t.Fatalf("this test runs executors in network namespaces: `ip netns add` failed (run as root with ip(8)): %v\n%s", err, out)
	}
	run(t, "ip", "netns", "del", n.prefix+"probe")
	run(t, "ip", "link", "add", n.bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", n.bridge).Run() })
	run(t, "ip", "addr", "add", n.subnet+".1/24", "dev", n.bridge)
	run(t, "ip", "link", "set", n.bridge, "up")
	for i, name := range nodes {
		h := &host{ns: fmt.Sprintf("%sn%d", n.prefix, i), hostIf: fmt.Sprintf("%sh%d", n.prefix, i),
			addr: fmt.Sprintf("%s.%d", n.subnet, 11+i)}
		peer := fmt.Sprintf("%sp%d", n.prefix, i)
		run(t, "ip", "netns", "add", h.ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", h.ns).Run() })
		run(t, "ip", "link", "add", h.hostIf, "type", "veth", "peer", "name", peer)
		run(t, "ip", "link", "set", peer, "netns", h.ns)
		run(t, "ip", "link", "set", h.hostIf, "master", n.bridge)
		run(t, "ip", "link", "set", h.hostIf, "up")
		run(t, "ip", "netns", "exec", h.ns, "ip", "addr", "add", h.addr+"/24", "dev", peer)
		run(t, "ip", "netns", "exec", h.ns, "ip", "link", "set", peer, "up")
		run(t, "ip", "netns", "exec", h.ns, "ip", "link", "set", "lo", "up")
		n.nodes[name] = h
	}
	return n
}

// brokerAddr is where the broker listens: the bridge's address.
func (n *netw) brokerIP() string { return n.subnet + ".1" }

// cut takes node's link down: it reaches nothing and nothing reaches it.
func (n *netw) cut(node string) { run(n.t, "ip", "link", "set", n.nodes[node].hostIf, "down") }

// heal brings node's link up again.
func (n *netw) heal(node string) { run(n.t, "ip", "link", "set", n.nodes[node].hostIf, "up") }

// blockBroker drops, in node's namespace, what it sends to the broker's
// port: the node is cut off from the broker only.
func (n *netw) blockBroker(node, port string) {
	run(n.t, "ip", "netns", "exec", n.nodes[node].ns, "iptables", "-A", "OUTPUT", "-d", n.brokerIP(),
		"-p", "tcp", "--dport", port, "-j", "DROP")
}

func (n *netw) unblockBroker(node, port string) {
	run(n.t, "ip", "netns", "exec", n.nodes[node].ns, "iptables", "-D", "OUTPUT", "-d", n.brokerIP(),
		"-p", "tcp", "--dport", port, "-j", "DROP")
}
