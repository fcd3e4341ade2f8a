package partition

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/test/proc"
	"github.com/drovehq/drove/test/testenv"
)

// Timings: short, so the test is bounded, yet long enough for three real
// brokers on a loaded machine, where a heartbeat's transaction took over
// 4 s (a lease that fell then cancelled moves no cut had touched); the
// fence below the lease, as DESIGN.md says it must be.
const (
	heartbeat = time.Second
	fence     = 8 * time.Second
	lease     = 20 * time.Second
	// diskMiB and simBandwidth make a disk (128 MiB simulated) take ~32 s
	// to send: a move is surely still under way when the node is declared
	// lost, even on a loaded machine.
	diskMiB      = 128 << 10
	simBandwidth = 4 << 20
	wait         = 2 * time.Minute // bound of every wait
)

var nodes = []string{"n1", "n2", "n3"}

type system struct {
	*proc.System // three brokers, each in a namespace of its own
	net          *netw
	api          *client.Client
}

func TestPartitions(t *testing.T) {
	s := start(t)
	s.sourceCut()
	s.targetCut()
	s.nodeCutFromBrokers()
	s.brokerCutFromPeers()
	s.brokerLinkDown()

	// Everything ended; every instance sits on one node; the log passes
	// drove verify (no instance placed or running twice, no opcode run
	// twice, capacity, requests, migrations), and the views equal a
	// replay of it.
	for _, in := range []string{"a1", "a2", "b1"} {
		t.Logf("%s ends on %s", in, s.primary(in))
	}
	summary := s.Verify(nil)
	s.ReplayEqual(wait)
	msg := fmt.Sprintf("partitions: survived 5 (source cut, target cut, node cut from the brokers, a broker cut from its peers, a broker's link down), each healed; drove verify: %s", summary)
	t.Log(msg)
	fmt.Println(msg)
}

// sourceCut takes the source's link down in the middle of a migration's
// sync: the planner declares it lost and fails the migration for an
// operator; healed, the instance is still on its source.
func (s *system) sourceCut() {
	m1 := s.migrate("a1", "n2")
	s.awaitSync(m1)
	s.net.cut("n1")
	s.awaitNode("n1", "lost", func(n node) bool { return n.Offline })
	r1 := s.awaitMigration(m1, "to fail for its lost source", func(m *wire.InstanceMigration) bool {
		return m.State == string(events.MigrationFailed) && strings.Contains(m.ErrorDetail, "operator action needed")
	})
	s.net.heal("n1")
	s.backOnline("n1")
	s.regainedAfterLoss("n1", 1)
	s.wantPrimary("a1", "n1", "the move rolled back")
	s.T.Logf("source cut: %s: %s (%s)", r1.State, r1.Error, r1.ErrorDetail)
}

// targetCut takes the target's link down in the middle of a sync: the
// source aborts, and keeps the instance.
func (s *system) targetCut() {
	m2 := s.migrate("b1", "n3")
	s.awaitSync(m2)
	s.net.cut("n3")
	r2 := s.awaitMigration(m2, "to abort to its source", func(m *wire.InstanceMigration) bool {
		return m.State == string(events.MigrationFailed) && strings.Contains(m.Message, "back on n2")
	})
	s.net.heal("n3")
	s.backOnline("n3")
	s.wantPrimary("b1", "n2", "the move rolled back")
	s.T.Logf("target cut: %s: %s; %s", r2.State, r2.Error, r2.Message)
}

// nodeCutFromBrokers cuts a node off from every broker only (its link
// stays up) in the middle of an evacuation's moves: it fences itself and
// rolls back, the planner declares it lost and ends the jobs for an
// operator.
func (s *system) nodeCutFromBrokers() {
	acc, err := s.api.Evacuate(context.Background(), wire.Evacuation{Nodes: []string{"n1"}, Mode: "all", Reason: "partition test"})
	if err != nil {
		s.T.Fatal(err)
	}
	s.awaitMoveRunning("a2")
	s.net.blockBrokers("n1", s.Kafka.Brokers())
	s.awaitNode("n1", "lost", func(n node) bool { return n.Offline })
	s.awaitRequest(acc.Request)
	s.net.unblockBrokers("n1", s.Kafka.Brokers())
	s.backOnline("n1")
	s.regainedAfterLoss("n1", 2)
	s.undrain("n1")
	// Reconnected, n1's executor reports how its fenced moves ended: each
	// rolled back (the instance still on n1) or done (on its target).
	for _, in := range []string{"a1", "a2"} {
		m := s.wantMoveEnded(in)
		s.T.Logf("node cut from the brokers: the move of %s ended %s: %s", in, m.State, m.Error)
	}
	if !strings.Contains(s.proc("executor-n1").Log(), "lease lost") {
		s.T.Fatal("n1's executor never fenced itself")
	}
}

// regainedAfterLoss waits until node's executor has read the planner's
// loss of it, n times in all, before taking its lease back
// (executor/regain.go): its heartbeats landed again after the planner's
// lease check, and a lease taken back at once would have let it start
// what the planner dispatched to it before the loss.
func (s *system) regainedAfterLoss(node string, n int) {
	s.T.Helper()
	p := s.proc("executor-" + node)
	s.WaitFor(fmt.Sprintf("%s's executor to read its loss before taking its lease back (%d in all)", node, n), wait, func() bool {
		return strings.Count(p.Log(), "declared lost, as the lease check said") >= n
	})
}

// wantMoveEnded waits for the last move of instance to end and checks
// that the instance is where that end says: on its target if it
// succeeded, else on its source.
func (s *system) wantMoveEnded(instance string) wire.Move {
	s.T.Helper()
	m := s.awaitMoveEnded(instance)
	if want := map[bool]string{true: m.Target, false: m.Source}[m.State == "successful"]; s.primary(instance) != want {
		s.T.Fatalf("%s's move ended %s but %s is on %s", instance, m.State, instance, s.primary(instance))
	}
	return m
}

// brokerCutFromPeers cuts the busiest partition's leader off from the
// other two brokers in the middle of a migration's sync, while the host
// and the executors still reach it: it loses its leaderships and its
// place in the ISRs, yet clients may still talk to it. Writes through the
// API meanwhile are accepted or refused with a 503; healed, every one
// accepted ends, and so does the migration.
func (s *system) brokerCutFromPeers() {
	from := s.primary("b1")
	to := map[bool]string{true: "n1", false: "n3"}[from == "n3"]
	m := s.migrate("b1", to)
	s.awaitSync(m)
	id, tp := s.busiestLeader()
	peers, _ := s.others(id)
	s.T.Logf("broker %d cut off from brokers %v during the migration of b1 from %s to %s", id, peers, from, to)
	s.net.isolate(brokerHost(id), peers...)
	s.awaitLedElsewhere(id, tp)
	x := s.idle(from, to)
	pr := s.probeWrites(x, other(s.primary(x), to))
	s.net.unisolate(brokerHost(id), peers...)
	r := s.awaitMigration(m, "to end", func(m *wire.InstanceMigration) bool { return terminal(m.State) })
	s.wantPrimary("b1", map[bool]string{true: to, false: from}[r.State == string(events.MigrationSuccessful)], "its migration ended "+r.State)
	s.finalize(r)
	s.probed(pr)
	s.awaitInSync(id)
	s.allOnline()
	s.T.Logf("broker cut from its peers: b1's migration ended %s %s", r.State, r.Error)
}

// brokerLinkDown takes the busiest partition's leader's link down (it
// reaches nothing, nothing reaches it, and its connections hang rather
// than close) in the middle of an evacuation's move; healed, the
// evacuation ends, and every write accepted meanwhile.
func (s *system) brokerLinkDown() {
	node := s.primary("b1")
	acc, err := s.api.Evacuate(context.Background(), wire.Evacuation{Nodes: []string{node}, Mode: "all", Reason: "partition test"})
	if err != nil {
		s.T.Fatal(err)
	}
	s.awaitMoveRunning("b1")
	id, tp := s.busiestLeader()
	s.T.Logf("broker %d's link down during the evacuation of %s", id, node)
	s.net.cut(brokerHost(id))
	s.awaitLedElsewhere(id, tp)
	x := s.idle(node, "")
	pr := s.probeWrites(x, other(s.primary(x), node))
	s.net.heal(brokerHost(id))
	s.awaitRequest(acc.Request)
	m := s.wantMoveEnded("b1")
	s.probed(pr)
	s.awaitInSync(id)
	s.allOnline()
	s.undrain(node)
	s.T.Logf("broker link down: b1's move ended %s %s", m.State, m.Error)
}

// allOnline brings back online every node the planner declared lost
// while a broker was cut off: its executor's heartbeats may have waited on
// the cut broker for longer than the lease.
func (s *system) allOnline() {
	s.T.Helper()
	for _, n := range nodes {
		if x := s.awaitNode(n, "to be read", func(node) bool { return true }); x.Offline {
			s.T.Logf("%s was declared lost while the broker was cut off", n)
			s.backOnline(n)
		}
	}
}

// other is a node that is neither a nor b.
func other(a, b string) string {
	for _, n := range nodes {
		if n != a && n != b {
			return n
		}
	}
	return ""
}

// idle is an instance of a1 and a2 on neither node a nor b: one no move
// under way touches.
func (s *system) idle(a, b string) string {
	for _, in := range []string{"a1", "a2"} {
		if p := s.primary(in); p != a && p != b {
			return in
		}
	}
	s.T.Fatalf("a1 and a2 are both on %s or %s", a, b)
	return ""
}

func terminal(state string) bool {
	switch events.MigrationState(state) {
	case events.MigrationSuccessful, events.MigrationFailed, events.MigrationAborted:
		return true
	}
	return false
}

// start builds drove, makes the network, and runs Postgres, three
// brokers (each in a namespace of its own), a planner, the projector and
// the gateway on the host, and one executor per node in its namespace.
func start(t *testing.T) *system {
	dir := t.TempDir()
	s := &system{System: &proc.System{T: t, Name: "partition", Dir: dir, Bin: testenv.Drove(t)}}
	s.net = newNetw(t)
	s.net.addHosts(11, nodes...)
	t.Cleanup(func() {
		if t.Failed() {
			s.KeepLogs()
		}
	})
	s.startKafka()
	s.PG = testenv.OwnPostgres(t, 0, "")
	s.seed()
	gw := fmt.Sprintf("127.0.0.1:%d", s.FreePort())
	db := s.PG.URL("postgres")
	s.add("planner", "planner", "--node-lease", lease.String())
	s.add("projector", "projector", "--database-url", db)
	s.add("gateway", "gateway", "--database-url", db, "--addr", gw)
	for _, n := range nodes {
		h := s.net.nodes[n]
		s.addIn(h.ns, "executor-"+n, "executor", "--node", n, "--driver", "sim",
			"--listen-addr", h.addr+":0", "--sim-bandwidth", strconv.Itoa(simBandwidth),
			"--heartbeat", heartbeat.String(), "--fence", fence.String())
	}
	s.api = client.New("http://"+gw, "operator:partition-test")
	for _, n := range nodes {
		s.awaitNode(n, "to renew its lease", func(x node) bool { return x.HeartbeatAt != nil })
	}
	// Past the services' start, when their first appends may be slow
	// enough to make a lease fall, before any move is asked for: a
	// heartbeat a fence after the first ones shows the log keeps up.
	steady := time.Now().Add(fence)
	for _, n := range nodes {
		s.awaitNode(n, "to renew its lease steadily", func(x node) bool { return x.HeartbeatAt != nil && x.HeartbeatAt.After(steady) })
	}
	return s
}

// kafkaFlags are every service's: the three brokers, and topics that
// keep each event on all three and acknowledge it once on two.
func (s *system) kafkaFlags() []string {
	return []string{"--brokers", s.Brokers, "--replication-factor", "3", "--min-insync-replicas", "2"}
}

func (s *system) add(name string, args ...string) {
	p := &proc.Proc{Name: name, Argv: append(append([]string{s.Bin}, args...), s.kafkaFlags()...), Dir: s.Dir}
	p.Start(s.T)
	s.T.Cleanup(func() { p.Stop(syscall.SIGTERM, 20*time.Second) })
	s.Procs = append(s.Procs, p)
}

// addIn runs a drove command in namespace ns: a host of its own.
func (s *system) addIn(ns, name string, args ...string) {
	p := &proc.Proc{Name: name, Argv: append(append([]string{"ip", "netns", "exec", ns, s.Bin}, args...), s.kafkaFlags()...), Dir: s.Dir}
	p.Start(s.T)
	s.T.Cleanup(func() { p.Stop(syscall.SIGTERM, 20*time.Second) })
	s.Procs = append(s.Procs, p)
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
	kc := s.Kafka.Config()
	kc.TransactionalID, kc.ReplicationFactor, kc.MinInsyncReplicas = "partition-seed", 3, 2
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s.waitFor("the broker", func() bool { return kafka.EnsureTopics(ctx, kc, 3, events.Topics()...) == nil })
	p, err := kafka.NewProducer(kc)
	if err != nil {
		s.T.Fatal(err)
	}
	defer p.Close()
	if err := service.Seed(ctx, p, service.InventoryEvents(c, events.Reason{Actor: "partition-test", Why: "test cluster"})); err != nil {
		s.T.Fatal(err)
	}
}

// waitFor polls cond until it holds or wait passes.
func (s *system) waitFor(what string, cond func() bool) {
	s.T.Helper()
	s.WaitFor(what, wait, cond)
}

// node is a node as the API shows it.
type node struct {
	Offline     bool       `json:"offline"`
	Drained     bool       `json:"drained"`
	HeartbeatAt *time.Time `json:"heartbeat_at"`
}

func (s *system) awaitNode(name, what string, cond func(node) bool) node {
	s.T.Helper()
	var n node
	s.waitFor(name+" "+what, func() bool {
		return s.api.Get(context.Background(), "/v1/nodes/"+name, &n) == nil && cond(n)
	})
	return n
}

// backOnline waits for the healed node's executor to renew its lease
// again (a heartbeat after the heal), then brings the node online.
func (s *system) backOnline(name string) {
	s.T.Helper()
	healed := time.Now()
	s.awaitNode(name, "to renew its lease after the heal", func(n node) bool {
		return n.HeartbeatAt != nil && n.HeartbeatAt.After(healed)
	})
	s.act(name, "online")
	s.awaitNode(name, "online", func(n node) bool { return !n.Offline })
}

func (s *system) undrain(name string) {
	s.T.Helper()
	s.act(name, "undrain")
	s.awaitNode(name, "undrained", func(n node) bool { return !n.Drained })
}

// act runs a node command and waits for the planner's answer: done.
func (s *system) act(name, action string) {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	a, err := s.api.NodeAct(ctx, name, action, "partition test: "+name+" healed")
	if err != nil {
		s.T.Fatalf("%s %s: %v", action, name, err)
	}
	if _, err := s.api.AwaitNodeAction(ctx, a.Request); err != nil {
		s.T.Fatalf("%s %s: %v", action, name, err)
	}
}

// migrate starts an automatic migration of instance to target.
func (s *system) migrate(instance, target string) string {
	s.T.Helper()
	a, err := s.api.Migrate(context.Background(), instance, "automatic",
		client.MigrateOptions{Target: target, Reason: "partition test"})
	if err != nil {
		s.T.Fatalf("migrate %s: %v", instance, err)
	}
	return a.Migration
}

func (s *system) awaitMigration(id, what string, cond func(*wire.InstanceMigration) bool) *wire.InstanceMigration {
	s.T.Helper()
	var m *wire.InstanceMigration
	s.waitFor("migration "+id+" "+what, func() bool {
		var err error
		m, err = s.api.Migration(context.Background(), id)
		return err == nil && cond(m)
	})
	return m
}

// awaitSync waits for the migration's sync to be sending.
func (s *system) awaitSync(id string) {
	s.T.Helper()
	s.awaitMigration(id, "to be syncing", func(m *wire.InstanceMigration) bool {
		return m.Phase == events.PhaseSync && m.State == string(events.MigrationRunning) && m.CurrentBytes > 0
	})
}

// awaitMoveRunning waits for a request's move of instance to be sending.
func (s *system) awaitMoveRunning(instance string) {
	s.T.Helper()
	s.waitFor("the move of "+instance+" to be sending", func() bool {
		ms, err := s.api.Moves(context.Background(), client.MigrationFilter{Instance: instance})
		if err != nil {
			return false
		}
		for _, m := range ms {
			if m.State == "running" && m.CurrentBytes > 0 {
				return true
			}
		}
		return false
	})
}

// awaitMoveEnded waits for the request's move of instance to have an end.
func (s *system) awaitMoveEnded(instance string) wire.Move {
	s.T.Helper()
	var out wire.Move
	s.waitFor("the move of "+instance+" to end", func() bool {
		ms, err := s.api.Moves(context.Background(), client.MigrationFilter{Instance: instance})
		if err != nil || len(ms) == 0 {
			return false
		}
		out = ms[len(ms)-1]
		return out.State == "successful" || out.State == "aborted" || out.State == "failed"
	})
	return out
}

func (s *system) proc(name string) *proc.Proc {
	for _, p := range s.Procs {
		if p.Name == name {
			return p
		}
	}
	s.T.Fatalf("no process %s", name)
	return nil
}

func (s *system) awaitRequest(id string) {
	s.T.Helper()
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
		s.T.Fatal(err)
	}
	return in.Primary
}

// wantPrimary waits until the views put instance on node, as how its
// move ended (why) says it must be. A migration's end and its instance's
// placement are on different topics, which the projector may fold in
// either order: the placement can show a moment after the end.
func (s *system) wantPrimary(instance, node, why string) {
	s.T.Helper()
	s.waitFor(fmt.Sprintf("%s on %s, as %s", instance, node, why), func() bool { return s.primary(instance) == node })
}
