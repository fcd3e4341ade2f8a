package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

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

// system is the running processes (every one a service random kills
// choose from; three brokers, each partition on all three) and what the
// test knows of them.
type system struct {
	*proc.System
	api     *client.Client
	cluster *planner.Cluster
}

func TestChaos(t *testing.T) {
	seed := chaosSeed(t)
	t.Logf("chaos seed %d (CHAOS_SEED=%d replays the same kills)", seed, seed)
	s := startSystem(t)
	rng := rand.New(rand.NewPCG(seed, 18))
	l := ledger{refused: map[string]int{}}
	evacuate := func(node string) func() bool {
		return func() bool {
			l.requests = s.submit(l, l.requests, "evacuation of "+node, func(ctx context.Context) (string, error) {
				a, err := s.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all", Reason: "chaos"})
				return acceptedID(a, err)
			})
			return true
		}
	}
	// The workload, one step at a time: each waits for the work of the
	// one before to end, so that two plans never count on the same room
	// (concurrent requests are not what this test is about). A step
	// reports whether it is done; a migration's comes round again until
	// one succeeds.
	steps := []func() bool{
		evacuate("node-g1-001"),
		s.migrations(&l, "g2"),
		func() bool {
			l.requests = s.submit(l, l.requests, "group change", func(ctx context.Context) (string, error) {
				a, err := s.api.ChangeGroup(ctx, wire.GroupChange{Instances: s.mirrored("g2", "node-g2-003", 2), Reason: "chaos"})
				return acceptedID(a, err)
			})
			return true
		},
		evacuate("node-g2-003"),
		s.undrain(&l, "node-g1-001"),
		s.migrations(&l, "g1"),
	}
	killed := map[string]int{}
	next := 0
	for i := 0; next < len(steps) || i < kills; i++ {
		if i > maxRounds {
			s.KeepLogs()
			t.Fatalf("the workload did not get through in %d rounds of chaos (step %d of %d)", maxRounds, next, len(steps))
		}
		if next < len(steps) && s.ended(l) && steps[next]() {
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
		victim := s.Procs[rng.IntN(len(s.Procs))]
		victim.Stop(syscall.SIGKILL, 30*time.Second)
		killed[victim.Name]++
		victim.Start(t)
		time.Sleep(killEvery) // the chaos's own pace, not synchronisation
	}
	s.WaitFor("every request and migration to end", settle, func() bool { return s.ended(l) })
	for _, p := range s.Procs {
		if gone, how := p.Exited(); gone {
			t.Errorf("%s exited by itself (%s); services must ride out restarts:\n%s", p.Name, how, p.Tail())
		}
	}
	summary := s.Verify(func(report string) string {
		return "the story of the instances it names:\n" + s.story(report)
	})
	s.ReplayEqual(2 * time.Minute)
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

// startSystem builds drove, starts Postgres and the brokers, seeds a small
// cluster (2 groups of 3 nodes) and starts every service as a process.
func startSystem(t *testing.T) *system {
	dir := t.TempDir()
	s := &system{System: &proc.System{T: t, Name: "chaos", Dir: dir, Bin: testenv.Drove(t)}}
	t.Cleanup(func() {
		if t.Failed() {
			s.KeepLogs()
		}
	})
	s.PG = testenv.OwnPostgres(t, 0, "")
	s.startKafka()
	s.seed()

	gw := fmt.Sprintf("127.0.0.1:%d", s.FreePort())
	db := s.PG.URL("postgres")
	add := func(name string, args ...string) {
		p := &proc.Proc{Name: name, Dir: dir, Argv: append(append([]string{s.Bin}, args...),
			"--brokers", s.Brokers, "--replication-factor", "3", "--min-insync-replicas", "2")}
		p.Start(t)
		t.Cleanup(func() { p.Stop(syscall.SIGTERM, 30*time.Second) })
		s.Procs = append(s.Procs, p)
	}
	add("planner-1", "planner")
	add("planner-2", "planner")
	add("projector", "projector", "--database-url", db)
	add("gateway", "gateway", "--database-url", db, "--addr", gw)
	for _, n := range s.cluster.Nodes {
		add("executor-"+n.Name, "executor", "--node", n.Name, "--driver", "sim", "--listen-addr", "127.0.0.1:0")
	}
	s.api = client.New("http://"+gw, "chaos")
	s.WaitFor("the inventory in the views", 2*time.Minute, func() bool {
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
		s.T.Fatal(err)
	}
	s.cluster = c
	kc := s.Kafka.Config()
	kc.TransactionalID, kc.ReplicationFactor, kc.MinInsyncReplicas = "chaos-seed", 3, 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.WaitFor("the broker", time.Minute, func() bool { return kafka.EnsureTopics(ctx, kc, 3, events.Topics()...) == nil })
	p, err := kafka.NewProducer(kc)
	if err != nil {
		s.T.Fatal(err)
	}
	defer p.Close()
	if err := service.Seed(ctx, p, service.InventoryEvents(c, events.Reason{Actor: "chaos", Why: "test cluster"})); err != nil {
		s.T.Fatal(err)
	}
}

// crashPostgres kills Postgres with SIGKILL (the postmaster and its
// backends) and starts it again on the same data, through crash recovery.
func (s *system) crashPostgres() {
	s.T.Log("SIGKILL Postgres")
	if err := s.PG.Kill(); err != nil {
		s.T.Fatal(err)
	}
	s.PG = testenv.OwnPostgres(s.T, s.PG.Port, s.PG.Dir)
}

// submit sends a request until the API answers (the gateway may be dead
// or restarting); a refusal (4xx) is counted in l, by its reason.
func (s *system) submit(l ledger, ids []string, what string, send func(context.Context) (string, error)) []string {
	s.T.Helper()
	var id string
	s.WaitFor("the API to take the "+what, time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		id, err = send(ctx)
		var ae *wire.Error
		if errors.As(err, &ae) && ae.Status < 500 {
			s.T.Logf("%s refused: %v", what, err)
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

// undrain returns the step that puts node back in service, as an operator
// does once its maintenance is over, and is done when the planner service
// has answered (a refusal is logged, not fatal). Without it the first
// evacuation left g1's other two nodes no room for its migration.
func (s *system) undrain(l *ledger, node string) func() bool {
	var id string
	return func() bool {
		if id == "" {
			ids := s.submit(*l, nil, "undrain of "+node, func(ctx context.Context) (string, error) {
				a, err := s.api.NodeAct(ctx, node, "undrain", "chaos: maintenance over")
				return acceptedID(a, err)
			})
			if len(ids) == 0 {
				return true // refused, and counted
			}
			id = ids[0]
		}
		var a wire.NodeAction
		if s.api.Get(context.Background(), "/v1/node-actions/"+id, &a) != nil || a.State == "requested" {
			return false // not answered yet, or the API down: the next round asks again
		}
		if a.State != "done" {
			s.T.Logf("undrain of %s %s: %s", node, a.State, a.Answer)
		}
		return true
	}
}

// migrationTries is how many migrations of a group's instances a tenant
// starts before it gives up on the group.
const migrationTries = 3

// migrations returns the step that migrates an instance of group and, each
// time it comes round again with that migration failed, another instance,
// as a tenant would: under chaos a migration may rightly fail (a node whose
// heartbeats could not reach the log fences itself and the migration's
// phase with it; an evacuation may have left the group no room for the
// instance), while a run where none succeeds proves nothing of them.
func (s *system) migrations(l *ledger, group string) func() bool {
	tried := map[string]bool{} // refused instances too, so none is asked twice
	var started []string
	return func() bool {
		if n := len(started); n > 0 && (s.succeeded(started[n-1]) || n >= migrationTries) {
			return true
		}
		before := len(l.migrations)
		l.migrations = s.migrate(*l, group, tried)
		if len(l.migrations) == before {
			return true // no instance of group left to try
		}
		started = append(started, l.migrations[before])
		return false
	}
}

// succeeded reports whether migration id ended successful, as the API
// tells (false while the API does not answer).
func (s *system) succeeded(id string) bool {
	m, err := s.api.Migration(context.Background(), id)
	return err == nil && events.MigrationState(m.State) == events.MigrationSuccessful
}

// migrate starts an automatic per-instance migration of the first
// instance of group not yet tried that a migration can move and no
// request holds, and adds it to tried.
func (s *system) migrate(l ledger, group string, tried map[string]bool) []string {
	ids := l.migrations
	for _, in := range s.cluster.Instances {
		if s.cluster.Groups[s.cluster.Nodes[in.Primary].Group].Name != group || tried[in.Name] ||
			events.StorageKind(in.Storage).MigrationRefusal() != "" {
			continue
		}
		tried[in.Name] = true
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
	s.T.Logf("no instance of %s could be migrated", group)
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
		recs, err := kafka.ReadAll(context.Background(), s.Kafka.Config(), topic)
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
