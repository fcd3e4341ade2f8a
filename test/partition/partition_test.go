package partition

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/test/proc"
)

// Timings: short, so the test is bounded; the fence below the lease, as
// DESIGN.md says it must be.
const (
	heartbeat = 500 * time.Millisecond
	fence     = 4 * time.Second
	lease     = 10 * time.Second
	// diskMiB and simBandwidth make a disk (128 MiB simulated) take ~32 s
	// to send: a move is surely still under way when the node is declared
	// lost, even on a loaded machine.
	diskMiB      = 128 << 10
	simBandwidth = 4 << 20
	wait         = 2 * time.Minute // bound of every wait
)

var nodes = []string{"n1", "n2", "n3"}

type system struct {
	t       *testing.T
	dir     string
	bin     string
	net     *netw
	brokers string
	port    string
	api     *client.Client
	procs   []*proc.Proc
}

func TestPartitions(t *testing.T) {
	s := start(t)
	ctx := context.Background()

	// 1. The source cut off (link down) in the middle of a migration's sync.
	m1 := s.migrate("a1", "n2")
	s.awaitSync(m1)
	s.net.cut("n1")
	s.awaitNode("n1", "lost", func(n node) bool { return n.Offline })
	r1 := s.awaitMigration(m1, "to fail for its lost source", func(m *client.Migration) bool {
		return m.State == string(events.MigrationFailed) && strings.Contains(m.ErrorDetail, "operator action needed")
	})
	s.net.heal("n1")
	s.backOnline("n1")
	s.wantPrimary("a1", "n1")
	t.Logf("source cut: %s: %s (%s)", r1.State, r1.Error, r1.ErrorDetail)

	// 2. The target cut off (link down) in the middle of a sync: the
	// source aborts, and keeps the instance.
	m2 := s.migrate("b1", "n3")
	s.awaitSync(m2)
	s.net.cut("n3")
	r2 := s.awaitMigration(m2, "to abort to its source", func(m *client.Migration) bool {
		return m.State == string(events.MigrationFailed) && strings.Contains(m.Message, "back on n2")
	})
	s.net.heal("n3")
	s.backOnline("n3")
	s.wantPrimary("b1", "n2")
	t.Logf("target cut: %s: %s; %s", r2.State, r2.Error, r2.Message)

	// 3. A node cut off from the broker only (its link stays up) in the
	// middle of an evacuation's moves: it fences itself and rolls back,
	// the planner declares it lost and ends the jobs for an operator.
	acc, err := s.api.Evacuate(ctx, client.Evacuation{Nodes: []string{"n1"}, Mode: "all", Reason: "partition test"})
	if err != nil {
		t.Fatal(err)
	}
	s.awaitMoveRunning("a2")
	s.net.blockBroker("n1", s.port)
	s.awaitNode("n1", "lost", func(n node) bool { return n.Offline })
	s.awaitRequest(acc.Request)
	s.net.unblockBroker("n1", s.port)
	s.backOnline("n1")
	s.undrain("n1")
	// Reconnected, n1's executor reports how its fenced moves ended: each
	// rolled back (the instance still on n1) or done (on its target).
	for _, in := range []string{"a1", "a2"} {
		m := s.awaitMoveEnded(in)
		if want := map[bool]string{true: m.Target, false: m.Source}[m.State == "successful"]; s.primary(in) != want {
			s.t.Fatalf("%s's move ended %s but %s is on %s", in, m.State, in, s.primary(in))
		}
		t.Logf("broker cut: the move of %s ended %s: %s", in, m.State, m.Error)
	}
	if !strings.Contains(s.proc("executor-n1").Log(), "lease lost") {
		t.Fatal("n1's executor never fenced itself")
	}

	// Everything ended; every instance sits on one node; the log passes
	// drove verify (no instance placed or running twice, no opcode run
	// twice, capacity, requests, migrations).
	for _, in := range []string{"a1", "a2", "b1"} {
		t.Logf("%s ends on %s", in, s.primary(in))
	}
	summary := s.verify()
	msg := fmt.Sprintf("partitions: survived 3 (source cut, target cut, node cut from the broker), each healed; drove verify: %s", summary)
	t.Log(msg)
	fmt.Println(msg)
}

// start builds drove, makes the network, and runs Postgres, the broker
// (on the bridge), a planner, the projector and the gateway on the host,
// and one executor per node in its namespace.
func start(t *testing.T) *system {
	dir := t.TempDir()
	s := &system{t: t, dir: dir, bin: filepath.Join(dir, "drove")}
	if out, err := exec.Command("go", "build", "-o", s.bin, "github.com/drovehq/drove/cmd/drove").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s.net = newNetw(t, nodes)
	pgDir, err := os.MkdirTemp("", "drove-partition-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(pgDir) })
	if err := os.Chmod(pgDir, 0o755); err != nil { // the server may run as postgres
		t.Fatal(err)
	}
	pg, err := embedded.StartPostgres(context.Background(), embedded.Postgres{Dir: pgDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	s.port = strconv.Itoa(freePort(t))
	s.brokers = net.JoinHostPort(s.net.brokerIP(), s.port)
	s.add("broker", "broker", "--dir", filepath.Join(dir, "kafka"), "--addr", s.brokers)
	s.seed()
	gw := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	db := pg.URL("postgres")
	s.add("planner", "planner", "--brokers", s.brokers, "--node-lease", lease.String())
	s.add("projector", "projector", "--brokers", s.brokers, "--database-url", db)
	s.add("gateway", "gateway", "--brokers", s.brokers, "--database-url", db, "--addr", gw)
	for _, n := range nodes {
		h := s.net.nodes[n]
		s.addIn(h.ns, "executor-"+n, "executor", "--node", n, "--driver", "sim", "--brokers", s.brokers,
			"--listen-addr", h.addr+":0", "--sim-bandwidth", strconv.Itoa(simBandwidth),
			"--heartbeat", heartbeat.String(), "--fence", fence.String())
	}
	s.api = client.New("http://"+gw, "operator:partition-test")
	for _, n := range nodes {
		s.awaitNode(n, "to renew its lease", func(x node) bool { return x.HeartbeatAt != nil })
	}
	return s
}

func (s *system) add(name string, args ...string) {
	p := &proc.Proc{Name: name, Argv: append([]string{s.bin}, args...), Dir: s.dir}
	p.Start(s.t)
	s.t.Cleanup(func() { p.Stop(syscall.SIGTERM, 20*time.Second) })
	s.procs = append(s.procs, p)
}

// addIn runs a drove command in namespace ns: a host of its own.
func (s *system) addIn(ns, name string, args ...string) {
	p := &proc.Proc{Name: name, Argv: append([]string{"ip", "netns", "exec", ns, s.bin}, args...), Dir: s.dir}
	p.Start(s.t)
	s.t.Cleanup(func() { p.Stop(syscall.SIGTERM, 20*time.Second) })
	s.procs = append(s.procs, p)
}

// seed writes the cluster: one group of three nodes; a1 and a2 on n1, b1
// on n2, room everywhere.
func (s *system) seed() {
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	c.Groups = []planner.Group{{UUID: "g1", Name: "g1", AllocPolicy: planner.Preferred, Policy: planner.DefaultIPolicy()}}
	for _, n := range nodes {
		c.Nodes = append(c.Nodes, planner.Node{Name: n, TotalMemory: 64 << 10, FreeMemory: 64 << 10,
			TotalDisk: 1 << 20, FreeDisk: 1 << 20, TotalCPUs: 32, TotalSpindles: 8, FreeSpindles: 8, VMCapable: true})
	}
	for _, in := range []struct {
		name string
		node int
	}{{"a1", 0}, {"a2", 0}, {"b1", 1}} {
		c.Instances = append(c.Instances, planner.Instance{Name: in.name, Memory: 4096, DiskSpace: diskMiB,
			Disks: []planner.Disk{{Size: diskMiB}}, VCPUs: 1, SpindleUse: 1, NICs: 1, Owner: "acct-1",
			Storage: planner.ZFSLocal, State: planner.Up, Primary: in.node, Secondary: planner.NoNode})
		c.Nodes[in.node].FreeMemory -= 4096
		c.Nodes[in.node].FreeDisk -= diskMiB
	}
	kc := kafka.Config{Brokers: []string{s.brokers}, TransactionalID: "partition-seed"}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s.waitFor("the broker", func() bool { return kafka.EnsureTopics(ctx, kc, 3, events.Topics()...) == nil })
	p, err := kafka.NewProducer(kc)
	if err != nil {
		s.t.Fatal(err)
	}
	defer p.Close()
	if err := service.Seed(ctx, p, service.InventoryEvents(c, events.Reason{Actor: "partition-test", Why: "test cluster"})); err != nil {
		s.t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond until it holds or wait passes.
func (s *system) waitFor(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(wait)
	for backoff := 20 * time.Millisecond; !cond(); backoff = min(backoff*2, 300*time.Millisecond) {
		if time.Now().After(deadline) {
			for _, p := range s.procs {
				s.t.Logf("---- %s:\n%s", p.Name, p.Tail())
			}
			s.t.Fatalf("timed out after %s waiting for %s", wait, what)
		}
		time.Sleep(backoff)
	}
}

// node is a node as the API shows it.
type node struct {
	Offline     bool       `json:"offline"`
	Drained     bool       `json:"drained"`
	HeartbeatAt *time.Time `json:"heartbeat_at"`
}

func (s *system) awaitNode(name, what string, cond func(node) bool) node {
	s.t.Helper()
	var n node
	s.waitFor(name+" "+what, func() bool {
		return s.api.Get(context.Background(), "/v1/nodes/"+name, &n) == nil && cond(n)
	})
	return n
}

// backOnline waits for the healed node's executor to renew its lease
// again (a heartbeat after the heal), then brings the node online.
func (s *system) backOnline(name string) {
	s.t.Helper()
	healed := time.Now()
	s.awaitNode(name, "to renew its lease after the heal", func(n node) bool {
		return n.HeartbeatAt != nil && n.HeartbeatAt.After(healed)
	})
	s.act(name, "online")
	s.awaitNode(name, "online", func(n node) bool { return !n.Offline })
}

func (s *system) undrain(name string) {
	s.t.Helper()
	s.act(name, "undrain")
	s.awaitNode(name, "undrained", func(n node) bool { return !n.Drained })
}

// act runs a node command and waits for the planner's answer: done.
func (s *system) act(name, action string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	a, err := s.api.NodeAct(ctx, name, action, "partition test: "+name+" healed")
	if err != nil {
		s.t.Fatalf("%s %s: %v", action, name, err)
	}
	if _, err := s.api.AwaitNodeAction(ctx, a.Request); err != nil {
		s.t.Fatalf("%s %s: %v", action, name, err)
	}
}

// migrate starts an automatic migration of instance to target.
func (s *system) migrate(instance, target string) string {
	s.t.Helper()
	a, err := s.api.Migrate(context.Background(), instance, "automatic",
		client.MigrateOptions{Target: target, Reason: "partition test"})
	if err != nil {
		s.t.Fatalf("migrate %s: %v", instance, err)
	}
	return a.Migration
}

func (s *system) awaitMigration(id, what string, cond func(*client.Migration) bool) *client.Migration {
	s.t.Helper()
	var m *client.Migration
	s.waitFor("migration "+id+" "+what, func() bool {
		var err error
		m, err = s.api.Migration(context.Background(), id)
		return err == nil && cond(m)
	})
	return m
}

// awaitSync waits for the migration's sync to be sending.
func (s *system) awaitSync(id string) {
	s.t.Helper()
	s.awaitMigration(id, "to be syncing", func(m *client.Migration) bool {
		return m.Phase == events.PhaseSync && m.State == string(events.MigrationRunning) && m.Current > 0
	})
}

// awaitMoveRunning waits for a request's move of instance to be sending.
func (s *system) awaitMoveRunning(instance string) {
	s.t.Helper()
	s.waitFor("the move of "+instance+" to be sending", func() bool {
		ms, err := s.api.Migrations(context.Background(), client.MigrationFilter{Kind: "opcode", Instance: instance})
		if err != nil {
			return false
		}
		for _, m := range ms {
			if m.State == "running" && m.Current > 0 {
				return true
			}
		}
		return false
	})
}

// awaitMoveEnded waits for the request's move of instance to have an end.
func (s *system) awaitMoveEnded(instance string) client.Migration {
	s.t.Helper()
	var out client.Migration
	s.waitFor("the move of "+instance+" to end", func() bool {
		ms, err := s.api.Migrations(context.Background(), client.MigrationFilter{Kind: "opcode", Instance: instance})
		if err != nil || len(ms) == 0 {
			return false
		}
		out = ms[len(ms)-1]
		return out.State == "successful" || out.State == "aborted" || out.State == "failed"
	})
	return out
}

func (s *system) proc(name string) *proc.Proc {
	for _, p := range s.procs {
		if p.Name == name {
			return p
		}
	}
	s.t.Fatalf("no process %s", name)
	return nil
}

func (s *system) awaitRequest(id string) {
	s.t.Helper()
	s.waitFor("request "+id+" to end", func() bool {
		var r struct {
			Status string `json:"status"`
		}
		return s.api.Get(context.Background(), "/v1/requests/"+id, &r) == nil && (r.Status == "finished" || r.Status == "rejected")
	})
}

func (s *system) primary(instance string) string {
	var in struct {
		Primary string `json:"primary"`
	}
	if err := s.api.Get(context.Background(), "/v1/instances/"+instance, &in); err != nil {
		s.t.Fatal(err)
	}
	return in.Primary
}

func (s *system) wantPrimary(instance, node string) {
	s.t.Helper()
	if p := s.primary(instance); p != node {
		s.t.Fatalf("%s is on %s, want %s (the move rolled back)", instance, p, node)
	}
}

// verify runs drove verify; it must pass. It returns its last line.
func (s *system) verify() string {
	out, err := exec.Command(s.bin, "verify", "--brokers", s.brokers).CombinedOutput()
	if err != nil {
		s.t.Fatalf("drove verify: %v\n%s", err, out)
	}
	s.t.Logf("drove verify:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
