package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/test/proc"
	"github.com/drovehq/drove/test/testenv"
)

const (
	killEvery = 3 * time.Second // a random process gets SIGKILL this often
	kills     = 16              // at least, and more while the workload lasts
	maxRounds = 80              // of chaos, for the workload to get through
	settle    = 4 * time.Minute // for everything to end after the chaos

	// The least work a run must have done for its survival to mean
	// something: the workload asks for 3 requests (2 evacuations, a group
	// change) and 2 migrations.
	minFinished = 3
	minMoved    = 6
)

// system is the running processes and what the test knows of them.
type system struct {
	t        *testing.T
	dir, bin string
	brokers  string
	pg       *embedded.PostgresServer
	kafka    *apachekafka.Cluster // three brokers, each partition on all three
	services []*proc.Proc         // what random kills choose from
	api      *client.Client
	cluster  *planner.Cluster
}

func TestChaos(t *testing.T) {
	seed := chaosSeed(t)
	t.Logf("chaos seed %d (CHAOS_SEED=%d replays the same kills)", seed, seed)
	s := startSystem(t)
	rng := rand.New(rand.NewPCG(seed, 18))
	l := ledger{refused: map[string]int{}}
	evacuate := func(node string) func() {
		return func() {
			l.requests = s.submit(l, l.requests, "evacuation of "+node, func(ctx context.Context) (string, error) {
				a, err := s.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all", Reason: "chaos"})
				return acceptedID(a, err)
			})
		}
	}
	// The workload, one step at a time: each waits for the one before to
	// end, so that two plans never count on the same room (concurrent
	// requests are not what this test is about).
	steps := []func(){
		evacuate("node-g1-001"),
		func() { l.migrations = s.migrate(l, "g2") },
		func() {
			l.requests = s.submit(l, l.requests, "group change", func(ctx context.Context) (string, error) {
				a, err := s.api.ChangeGroup(ctx, wire.GroupChange{Instances: s.mirrored("g2", "node-g2-003", 2), Reason: "chaos"})
				return acceptedID(a, err)
			})
		},
		evacuate("node-g2-003"),
		func() { l.migrations = s.migrate(l, "g1") },
	}
	killed := map[string]int{}
	next := 0
	for i := 0; next < len(steps) || i < kills; i++ {
		if i > maxRounds {
			s.keepLogs()
			t.Fatalf("the workload did not get through in %d rounds of chaos (step %d of %d)", maxRounds, next, len(steps))
		}
		if next < len(steps) && s.ended(l) {
			steps[next]()
			next++
		}
		switch i {
		case 5:
			s.killBusiestLeader()
		case 8:
			s.restartBrokers()
		case 10:
			s.crashPostgres()
		case 13:
			s.killAllBrokers()
			s.restartBrokers()
		}
		victim := s.services[rng.IntN(len(s.services))]
		victim.Stop(syscall.SIGKILL, 30*time.Second)
		killed[victim.Name]++
		victim.Start(t)
		time.Sleep(killEvery) // the chaos's own pace, not synchronisation
	}
	s.waitFor("every request and migration to end", settle, func() bool { return s.ended(l) })
	for _, p := range s.services {
		if gone, how := p.Exited(); gone {
			t.Errorf("%s exited by itself (%s); services must ride out restarts:\n%s", p.Name, how, p.Tail())
		}
	}
	summary := s.verify()
	s.replayEqual()
	o := s.account(l)
	s.checkWork(l, o)
	msg := fmt.Sprintf("chaos (seed %d): survived %d SIGKILLs of services %v, the SIGKILL of the busiest partition's leader, of all three brokers, and of Postgres; %s; drove verify: %s",
		seed, sum(killed), killed, o, summary)
	t.Log(msg)
	fmt.Println(msg)
}

func acceptedID(a *wire.Accepted, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return a.Request, nil
}

// startSystem builds drove, starts Postgres and the broker, seeds a small
// cluster (2 groups of 3 nodes) and starts every service as a process.
func startSystem(t *testing.T) *system {
	dir := t.TempDir()
	s := &system{t: t, dir: dir, bin: testenv.Drove(t)}
	t.Cleanup(func() {
		if t.Failed() {
			s.keepLogs()
		}
	})
	s.pg = startPostgres(t, 0, "")
	s.startKafka()
	s.seed()

	gw := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	db := s.pg.URL("postgres")
	add := func(name string, args ...string) {
		p := &proc.Proc{Name: name, Dir: dir, Argv: append(append([]string{s.bin}, args...),
			"--brokers", s.brokers, "--replication-factor", "3", "--min-insync-replicas", "2")}
		p.Start(t)
		t.Cleanup(func() { p.Stop(syscall.SIGTERM, 30*time.Second) })
		s.services = append(s.services, p)
	}
	add("planner-1", "planner")
	add("planner-2", "planner")
	add("projector", "projector", "--database-url", db)
	add("gateway", "gateway", "--database-url", db, "--addr", gw)
	for _, n := range s.cluster.Nodes {
		add("executor-"+n.Name, "executor", "--node", n.Name, "--driver", "sim", "--listen-addr", "127.0.0.1:0")
	}
	s.api = client.New("http://"+gw, "chaos")
	s.waitFor("the inventory in the views", 2*time.Minute, func() bool {
		var list struct {
			Items []json `json:"items"`
		}
		return s.api.Get(context.Background(), "/v1/instances?limit=1000", &list) == nil && len(list.Items) == len(s.cluster.Instances)
	})
	return s
}

type json = map[string]any

func (s *system) seed() {
	spec := clustergen.DefaultSpec()
	spec.Groups, spec.NodesPerGroup, spec.InstancesPerNode = 2, 3, 3
	spec.Fill = 0.45
	spec.DiskFill = 0.25
	spec.NodeMemory = clustergen.Range{Min: 64 << 10, Max: 96 << 10}
	spec.InstanceMemory = clustergen.Range{Min: 8 << 10, Max: 16 << 10}
	spec.Seed = 18
	c, err := clustergen.Generate(spec)
	if err != nil {
		s.t.Fatal(err)
	}
	s.cluster = c
	kc := s.kafka.Config()
	kc.TransactionalID, kc.ReplicationFactor, kc.MinInsyncReplicas = "chaos-seed", 3, 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.waitFor("the broker", time.Minute, func() bool { return kafka.EnsureTopics(ctx, kc, 3, events.Topics()...) == nil })
	p, err := kafka.NewProducer(kc)
	if err != nil {
		s.t.Fatal(err)
	}
	defer p.Close()
	if err := service.Seed(ctx, p, service.InventoryEvents(c, events.Reason{Actor: "chaos", Why: "test cluster"})); err != nil {
		s.t.Fatal(err)
	}
}

// startPostgres starts a cluster of the test's own; dir and port empty
// make a new one, else it is the same cluster started again.
func startPostgres(t *testing.T, port int, dir string) *embedded.PostgresServer {
	t.Helper()
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "drove-chaos-pg-"); err != nil {
			t.Fatal(err)
		}
		// The server may run as the postgres user: it must reach dir.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	pg, err := embedded.StartPostgres(context.Background(), embedded.Postgres{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	return pg
}

// crashPostgres kills Postgres with SIGKILL (the postmaster and its
// backends) and starts it again on the same data, through crash recovery.
func (s *system) crashPostgres() {
	s.t.Log("SIGKILL Postgres")
	if err := s.pg.Kill(); err != nil {
		s.t.Fatal(err)
	}
	s.pg = startPostgres(s.t, s.pg.Port, s.pg.Dir)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond until it holds or d passes.
func (s *system) waitFor(what string, d time.Duration, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for backoff := 20 * time.Millisecond; !cond(); backoff = min(backoff*2, 500*time.Millisecond) {
		if time.Now().After(deadline) {
			s.keepLogs()
			s.dumpLogs()
			s.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(backoff)
	}
}

func (s *system) dumpLogs() {
	for _, p := range s.services {
		s.t.Logf("---- %s:\n%s", p.Name, p.Tail())
	}
}

// submit sends a request until the API answers (the gateway may be dead
// or restarting); a refusal (4xx) is counted in l, by its reason.
func (s *system) submit(l ledger, ids []string, what string, send func(context.Context) (string, error)) []string {
	s.t.Helper()
	var id string
	s.waitFor("the API to take the "+what, time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		id, err = send(ctx)
		var ae *wire.Error
		if errors.As(err, &ae) && ae.Status < 500 {
			s.t.Logf("%s refused: %v", what, err)
			l.refused[fmt.Sprintf("%s: %d %s", what, ae.Status, ae.Message)]++
			return true
		}
		return err == nil
	})
	if id == "" {
		return ids
	}
	return append(ids, id)
}

// mirrored names n DRBD instances of group that do not touch node.
func (s *system) mirrored(group, node string, n int) []string {
	var out []string
	for _, in := range s.cluster.Instances {
		if in.Storage != planner.DRBD || s.cluster.Groups[s.cluster.Nodes[in.Primary].Group].Name != group ||
			s.cluster.Nodes[in.Primary].Name == node || s.cluster.Nodes[in.Secondary].Name == node {
			continue
		}
		if len(out) < n {
			out = append(out, in.Name)
		}
	}
	return out
}

// migrate starts an automatic per-instance migration of the first
// instance of group a migration can move and no request holds.
func (s *system) migrate(l ledger, group string) []string {
	ids := l.migrations
	for _, in := range s.cluster.Instances {
		if s.cluster.Groups[s.cluster.Nodes[in.Primary].Group].Name != group ||
			events.StorageKind(in.Storage).MigrationRefusal() != "" {
			continue
		}
		before := len(ids)
		ids = s.submit(l, ids, "migration of "+in.Name, func(ctx context.Context) (string, error) {
			a, err := s.api.Migrate(ctx, in.Name, "automatic", client.MigrateOptions{Reason: "chaos"})
			if err != nil {
				return "", err
			}
			return a.Migration, nil
		})
		if len(ids) > before {
			return ids
		}
	}
	s.t.Logf("no instance of %s could be migrated", group)
	return ids
}

// ended reports whether every tracked request and migration has ended,
// as the API tells (false while the API does not answer).
func (s *system) ended(l ledger) bool {
	ctx := context.Background()
	for _, id := range l.requests {
		var r struct {
			Status string `json:"status"`
		}
		if s.api.Get(ctx, "/v1/requests/"+id, &r) != nil || (r.Status != "finished" && r.Status != "rejected") {
			return false
		}
	}
	for _, id := range l.migrations {
		m, err := s.api.Migration(ctx, id)
		if err != nil {
			return false
		}
		if !over(events.MigrationState(m.State)) {
			return false
		}
	}
	return true
}

// verify runs drove verify on the log; it must pass. It returns the
// report's last lines.
func (s *system) verify() string {
	out, err := exec.Command(s.bin, "verify", "--brokers", s.brokers).CombinedOutput()
	if err != nil {
		s.keepLogs()
		s.t.Fatalf("drove verify: %v\n%s\nthe story of the instances it names:\n%s", err, out, s.story(string(out)))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	s.t.Logf("drove verify:\n%s", out)
	return lines[len(lines)-1]
}

// replayEqual runs drove replay until the views, caught up, equal the
// log (the projector may still be folding the last events).
func (s *system) replayEqual() {
	var out []byte
	s.waitFor("drove replay to find the views equal", 2*time.Minute, func() bool {
		var err error
		out, err = exec.Command(s.bin, "replay", "--brokers", s.brokers, "--database-url", s.pg.URL("postgres")).CombinedOutput()
		return err == nil
	})
	s.t.Logf("drove replay:\n%s", out)
}

// story lists every event of the placement and opcode topics naming an
// instance the report names, for a failure's diagnosis.
func (s *system) story(report string) string {
	var names []string
	for _, in := range s.cluster.Instances {
		if strings.Contains(report, `"`+in.Name+`"`) || strings.Contains(report, " "+in.Name+" ") {
			names = append(names, in.Name)
		}
	}
	var b strings.Builder
	for _, topic := range []string{events.TopicRequests, events.TopicPlans, events.TopicJobs, events.TopicOpcodes, events.TopicInventory, events.TopicMigrations} {
		recs, err := kafka.ReadAll(context.Background(), s.kafka.Config(), topic)
		if err != nil {
			return err.Error()
		}
		for _, r := range recs {
			for _, n := range names {
				if strings.Contains(string(r.Event.Payload), `"`+n+`"`) {
					fmt.Fprintf(&b, "%s %s %s by %s: %s\n", r, r.Event.Time.Format("15:04:05.000"), r.Event.Type, r.Event.Producer, r.Event.Payload)
					break
				}
			}
		}
	}
	return b.String()
}

// keepLogs copies the processes' logs where a failed run leaves them.
func (s *system) keepLogs() {
	keep, err := os.MkdirTemp("", "drove-chaos-failed-")
	if err != nil {
		return
	}
	for _, p := range s.services {
		_ = os.WriteFile(filepath.Join(keep, filepath.Base(p.Name)+".log"), []byte(p.Log()), 0o644)
	}
	for _, n := range s.kafka.Nodes {
		if b, err := os.ReadFile(filepath.Join(n.Dir, "broker.log")); err == nil {
			_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("broker-%d.log", n.ID)), b, 0o644)
		}
	}
	s.t.Logf("the processes' logs are kept in %s", keep)
}
