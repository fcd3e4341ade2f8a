package partition

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// netw is the test's network: a bridge on the host and one namespace per
// host (each executor's node, each broker), joined to it by a veth pair.
type netw struct {
	t      *testing.T
	prefix string // of every interface and namespace name
	subnet string // "10.213.N"
	bridge string
	nodes  map[string]*host // executors' and brokers' alike
}

// host is one node's (or broker's) namespace.
type host struct {
	ns, hostIf, addr string
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// netws counts the networks this process made: with -count=2 the second
// run's names must not be the first's, whose veth pairs the kernel may
// still be taking down with their namespaces.
var netws atomic.Int32

// newNetw makes the bridge (the host's side, subnet.1); addHosts makes the
// namespaces on it. All is removed at the test's end (with a namespace go
// its firewall rules).
func newNetw(t *testing.T) *netw {
	pid, seq := os.Getpid(), int(netws.Add(1)-1)
	n := &netw{t: t, prefix: fmt.Sprintf("dp%d%c", pid%10000, 'a'+seq%26), subnet: freeSubnet(t, pid+seq),
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
	return n
}

// freeSubnet is the first 10.213.N/24, from N = from%250 on, that no
// address of the host's is in: a bridge a killed run left behind keeps
// its address, and a second route to the same subnet would take the
// test's packets.
func freeSubnet(t *testing.T, from int) string {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr show: %v", err)
	}
	for i := range 250 {
		subnet := fmt.Sprintf("10.213.%d", (from+i)%250)
		if !strings.Contains(string(out), " "+subnet+".") {
			return subnet
		}
	}
	t.Fatal("every subnet 10.213.0-249.0/24 is in use on this host")
	return ""
}

// addHosts makes a namespace for each name, at subnet.first, .first+1, ...
func (n *netw) addHosts(first int, names ...string) {
	t := n.t
	for _, name := range names {
		i := len(n.nodes)
		h := &host{ns: fmt.Sprintf("%sn%d", n.prefix, i), hostIf: fmt.Sprintf("%sh%d", n.prefix, i),
			addr: fmt.Sprintf("%s.%d", n.subnet, first)}
		first++
		peer := fmt.Sprintf("%sp%d", n.prefix, i)
		run(t, "ip", "netns", "add", h.ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", h.ns).Run() })
		run(t, "ip", "link", "add", h.hostIf, "type", "veth", "peer", "name", peer)
		// Deleting one end deletes the pair at once; with the namespace
		// it goes only when the kernel gets to it.
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", h.hostIf).Run() })
		run(t, "ip", "link", "set", peer, "netns", h.ns)
		run(t, "ip", "link", "set", h.hostIf, "master", n.bridge)
		run(t, "ip", "link", "set", h.hostIf, "up")
		run(t, "ip", "netns", "exec", h.ns, "ip", "addr", "add", h.addr+"/24", "dev", peer)
		run(t, "ip", "netns", "exec", h.ns, "ip", "link", "set", peer, "up")
		run(t, "ip", "netns", "exec", h.ns, "ip", "link", "set", "lo", "up")
		n.nodes[name] = h
	}
}

// cut takes node's link down: it reaches nothing and nothing reaches it.
func (n *netw) cut(node string) { run(n.t, "ip", "link", "set", n.nodes[node].hostIf, "down") }

// heal brings node's link up again.
func (n *netw) heal(node string) { run(n.t, "ip", "link", "set", n.nodes[node].hostIf, "up") }

// blockBrokers drops, in node's namespace, what it sends to each of the
// brokers (host:port): the node is cut off from the brokers only.
func (n *netw) blockBrokers(node string, brokers []string) { n.brokerRules(node, "-A", brokers) }

func (n *netw) unblockBrokers(node string, brokers []string) { n.brokerRules(node, "-D", brokers) }

func (n *netw) brokerRules(node, op string, brokers []string) {
	for _, b := range brokers {
		host, port, _ := net.SplitHostPort(b)
		run(n.t, "ip", "netns", "exec", n.nodes[node].ns, "iptables", op, "OUTPUT", "-d", host,
			"-p", "tcp", "--dport", port, "-j", "DROP")
	}
}

// isolate drops, in name's namespace, every packet to or from the
// addresses of others: name still reaches, and is reached by, the host
// and the executors, but not the others (a broker cut off from its peers
// while its clients still talk to it).
func (n *netw) isolate(name string, others ...string) { n.isolation(name, "-A", others) }

func (n *netw) unisolate(name string, others ...string) { n.isolation(name, "-D", others) }

func (n *netw) isolation(name, op string, others []string) {
	ns := n.nodes[name].ns
	for _, o := range others {
		addr := n.nodes[o].addr
		run(n.t, "ip", "netns", "exec", ns, "iptables", op, "INPUT", "-s", addr, "-j", "DROP")
		run(n.t, "ip", "netns", "exec", ns, "iptables", op, "OUTPUT", "-d", addr, "-j", "DROP")
	}
}
