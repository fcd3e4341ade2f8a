package apachekafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drovehq/drove/events/kafka"
)

// Options describe a cluster to start.
type Options struct {
	// Dir holds one directory per node (node-1, …) and cluster.json, the
	// cluster's id and ports: a cluster started again on Dir is the same
	// cluster, with its topics. Required.
	Dir string
	// Nodes is how many brokers, each also a controller: 1 (the default)
	// or 3, the smallest quorum that outlives one node.
	Nodes int
	// Hosts are the addresses the nodes listen on, one per node or one for
	// all. Default 127.0.0.1.
	Hosts []string
	// Wrap, when set, is the command that runs a node's processes, given
	// the node's id: test/partition's `ip netns exec NS`.
	Wrap func(node int) []string
	// Listener is the clients' (and brokers') listener. Default plain TCP.
	Listener Listener
	// Settings are server properties over the defaults (ServerDefaults),
	// for every node.
	Settings map[string]string
	// JVM are the Java options. Default DefaultJVM.
	JVM []string
	// Client is how the readiness check connects (its TLS and SASL, for a
	// secured listener); Brokers is filled in.
	Client kafka.Config
	// StartTimeout bounds a start until every node is listed. Default 2m.
	StartTimeout time.Duration
}

// Listener names the listener clients use and its security protocol.
type Listener struct {
	Name     string // default PLAINTEXT
	Protocol string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; default PLAINTEXT
}

// DefaultJVM is a small broker's JVM: a heap that fits beside tests on a
// small machine, one collector thread, and code compiled by C1 only: it
// starts sooner, and for the minutes a test or demo broker lives it costs
// half the CPU (an end-to-end test run against it: 34 CPU-s of the broker
// with C1 only, 60 with C2 as well).
var DefaultJVM = []string{"-Xms64m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"}

func (o Options) wrap(node int) []string {
	if o.Wrap == nil {
		return nil
	}
	return o.Wrap(node)
}

func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if len(o.Hosts) == 0 {
		o.Hosts = []string{"127.0.0.1"}
	}
	if o.Listener.Name == "" {
		o.Listener.Name = "PLAINTEXT"
	}
	if o.Listener.Protocol == "" {
		o.Listener.Protocol = "PLAINTEXT"
	}
	if o.JVM == nil {
		o.JVM = DefaultJVM
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	return o
}

// Cluster is a started cluster.
type Cluster struct {
	Nodes []*Node

	opts Options
	id   string
	libs string
	java string
}

// layout is what cluster.json keeps: the cluster's id and each node's
// host and ports, so that a restart finds the same cluster where it was.
type layout struct {
	ID    string       `json:"cluster_id"`
	Nodes []nodeLayout `json:"nodes"`
}

type nodeLayout struct {
	ID             int    `json:"id"`
	Host           string `json:"host"`
	Port           int    `json:"port"`
	ControllerPort int    `json:"controller_port"`
}

// Start starts a cluster as opts say (or the one kept in opts.Dir) and
// waits until every node is listed by the cluster.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	if opts.Dir == "" {
		return nil, errors.New("apachekafka: Options.Dir is required")
	}
	if opts.Nodes != 1 && opts.Nodes != 3 {
		return nil, fmt.Errorf("apachekafka: Options.Nodes is %d; 1 or 3", opts.Nodes)
	}
	libs, err := FindLibs()
	if err != nil {
		return nil, err
	}
	java, err := FindJava()
	if err != nil {
		return nil, err
	}
	l, err := loadLayout(opts)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, id: l.ID, libs: libs, java: java}
	for _, nl := range l.Nodes {
		n := &Node{ID: nl.ID, Host: nl.Host, Port: nl.Port, ControllerPort: nl.ControllerPort,
			Dir: filepath.Join(opts.Dir, fmt.Sprintf("node-%d", nl.ID)), c: c}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	if err := c.Start(ctx); err != nil {
		_ = c.Kill()
		return nil, err
	}
	return c, nil
}

// Start starts every node that is not running, all at once, and waits
// until the cluster lists every node: after Kill, the cluster as it was.
// All at once, because a quorum of three elects no leader until two run,
// so no node can be waited for alone.
func (c *Cluster) Start(ctx context.Context) error {
	var stopped []*Node
	for _, n := range c.Nodes {
		if !n.Running() {
			stopped = append(stopped, n)
		}
	}
	errs := make(chan error, len(stopped))
	for _, n := range stopped {
		go func() { errs <- n.start() }()
	}
	var all []error
	for range stopped {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	return c.waitReady(ctx, c.Nodes)
}

// loadLayout reads cluster.json, or makes a new layout with free ports
// and writes it.
func loadLayout(opts Options) (layout, error) {
	file := filepath.Join(opts.Dir, "cluster.json")
	var l layout
	if b, err := os.ReadFile(file); err == nil {
		if err := json.Unmarshal(b, &l); err != nil {
			return l, fmt.Errorf("apachekafka: %s: %w", file, err)
		}
		if len(l.Nodes) != opts.Nodes {
			return l, fmt.Errorf("apachekafka: %s holds a cluster of %d nodes, not %d", file, len(l.Nodes), opts.Nodes)
		}
		return l, nil
	}
	l.ID = newClusterID()
	for i := range opts.Nodes {
		host := opts.Hosts[min(i, len(opts.Hosts)-1)]
		port, cport, err := nodePorts(opts, host, i)
		if err != nil {
			return l, err
		}
		l.Nodes = append(l.Nodes, nodeLayout{ID: i + 1, Host: host, Port: port, ControllerPort: cport})
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return l, err
	}
	b, _ := json.MarshalIndent(l, "", "  ")
	return l, os.WriteFile(file, b, 0o644)
}

// nodePorts are the client and controller ports of the i-th node, on
// host. A host that is no address of this machine's network namespace
// lives in the one Wrap enters (test/partition's brokers, each in a
// namespace of its own): no port can be probed there from here, and none
// is taken there but by the cluster's nodes, so each node gets a pair of
// its own from Kafka's usual 9092 on.
func nodePorts(opts Options, host string, i int) (port, cport int, err error) {
	port, err = freePort(host)
	if errors.Is(err, syscall.EADDRNOTAVAIL) && opts.Wrap != nil {
		return 9092 + 2*i, 9093 + 2*i, nil
	}
	if err != nil {
		return 0, 0, err
	}
	cport, err = freePort(host)
	return port, cport, err
}

// freePort is a port free on host now, outside the kernel's ephemeral
// range. A node keeps its port across restarts (cluster.json), and a port
// the kernel hands out itself could meanwhile be the local end of any
// outgoing connection, the test's own clients' among them; the node's
// start would then fail with "Address already in use". A port below the
// range is only ever taken by a process that asks for it by number.
// Another such process may take it before the broker binds it; the
// broker then fails to start and says so in its log.
func freePort(host string) (int, error) {
	low := ephemeralLow()
	n := low - firstPort
	start := mrand.IntN(n)
	for i := range n {
		port := firstPort + (start+i)%n
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return port, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return 0, fmt.Errorf("apachekafka: a free port on %s: %w", host, err)
		}
	}
	return 0, fmt.Errorf("apachekafka: no free port on %s from %d to %d", host, firstPort, low-1)
}

// firstPort is the lowest port freePort picks: above the well-known and
// the usual services' ports.
const firstPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range
// (Linux's default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if low, err := strconv.Atoi(f[0]); err == nil && low > firstPort+1000 {
			return low
		}
	}
	return 32768
}

// newClusterID is a KRaft cluster id: 16 random bytes, base64url, not
// starting with '-' (the storage tool would read it as an option).
func newClusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// Brokers are the client listeners of every node, host:port.
func (c *Cluster) Brokers() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// Config is a kafka.Config for the cluster: Options.Client with its
// brokers.
func (c *Cluster) Config() kafka.Config {
	cfg := c.opts.Client
	cfg.Brokers = c.Brokers()
	return cfg
}

// Node returns the node of id, nil if there is none.
func (c *Cluster) Node(id int) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Stop stops every node cleanly, each within grace.
func (c *Cluster) Stop(grace time.Duration) error {
	errs := make(chan error, len(c.Nodes))
	for _, n := range c.Nodes {
		go func() { errs <- n.Stop(grace) }()
	}
	var all []error
	for range c.Nodes {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// Kill kills every node with SIGKILL.
func (c *Cluster) Kill() error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.Kill())
	}
	return errors.Join(errs...)
}

// waitReady waits until the cluster lists every one of nodes, failing
// early if one of their processes exits.
func (c *Cluster) waitReady(ctx context.Context, nodes []*Node) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	cfg := c.Config()
	cfg.DialTimeout = 2 * time.Second
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		for _, n := range nodes {
			if !n.Running() {
				return n.exitedErr()
			}
		}
		if last = c.listed(ctx, cfg, nodes); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apachekafka: nodes not listed within %s: %w (see %s)", c.opts.StartTimeout, last, nodes[0].logFile())
		case <-tick.C:
		}
	}
}

// listed says whether the cluster lists every one of nodes, asking each.
func (c *Cluster) listed(ctx context.Context, cfg kafka.Config, nodes []*Node) error {
	for _, n := range nodes {
		cfg.Brokers = []string{n.Addr()}
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ids, err := kafka.BrokerIDs(actx, cfg)
		cancel()
		if err != nil {
			return err
		}
		for _, m := range nodes {
			if !slices.Contains(ids, int32(m.ID)) {
				return fmt.Errorf("%w: node %d not yet listed by %s", errNotReady, m.ID, n.Addr())
			}
		}
	}
	return nil
}
