package partition

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/test/testenv"
)

// brokerHost names broker id's namespace in the test's network.
func brokerHost(id int) string { return fmt.Sprintf("kafka-%d", id) }

// brokerStart bounds a start (or restart) of the three brokers: seconds
// on a quiet machine, yet past 2 minutes when all three restart at once
// beside a load average of 50.
const brokerStart = 4 * time.Minute

// startKafka starts three Apache Kafka brokers, each also a controller and
// each a host of its own on the bridge (subnet.21-23): one can be cut off
// from the others, or from everything, as a node can.
func (s *system) startKafka() {
	s.net.addHosts(21, brokerHost(1), brokerHost(2), brokerHost(3))
	var hosts []string
	for id := 1; id <= 3; id++ {
		hosts = append(hosts, s.net.nodes[brokerHost(id)].addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), brokerStart+time.Minute)
	defer cancel()
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: filepath.Join(s.Dir, "kafka"), Nodes: 3, StartTimeout: brokerStart,
		Hosts: hosts, Settings: testenv.BrokerSettings,
		Wrap: func(id int) []string { return []string{"ip", "netns", "exec", s.net.nodes[brokerHost(id)].ns} }})
	if err != nil {
		s.T.Fatal(err)
	}
	s.T.Cleanup(func() { _ = c.Kill() })
	s.Kafka = c
	s.Brokers = strings.Join(c.Brokers(), ",")
	// The internal topics made now, not by the services' first appends:
	// those, all at once on a loaded machine, took longer than the
	// executors' fence.
	if err := testenv.WarmUp(ctx, c.Config()); err != nil {
		s.T.Fatalf("warming the brokers up: %v", err)
	}
}

// busiestLeader is the broker leading the partition that holds the most
// events, and that partition: the broker whose loss of its peers costs
// the most under load.
func (s *system) busiestLeader() (int, kafka.TopicPartition) {
	tp, held, leader := s.BusiestPartition()
	s.T.Logf("broker %d leads %s (%d events), the busiest partition", leader, tp, held)
	return leader, tp
}

// others are the brokers but id, their hosts' names and their addresses.
func (s *system) others(id int) (names, addrs []string) {
	for _, n := range s.Kafka.Nodes {
		if n.ID != id {
			names, addrs = append(names, brokerHost(n.ID)), append(addrs, n.Addr())
		}
	}
	return names, addrs
}

// awaitLedElsewhere waits until the other brokers, asked alone, name
// another leader of tp than id: the controller has fenced id and moved
// its leadership. The cut broker itself may still believe it leads.
func (s *system) awaitLedElsewhere(id int, tp kafka.TopicPartition) {
	s.T.Helper()
	_, addrs := s.others(id)
	cfg := s.Kafka.Config()
	cfg.Brokers = addrs
	t0 := time.Now()
	s.waitFor(fmt.Sprintf("the controller to move %s's leadership off broker %d", tp, id), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		leaders, err := kafka.Leaders(ctx, cfg, tp.Topic)
		return err == nil && leaders[tp] > 0 && int(leaders[tp]) != id
	})
	s.T.Logf("%s led elsewhere %s after broker %d's cut", tp, time.Since(t0).Round(time.Millisecond), id)
}

// awaitInSync waits until every partition, the internal topics' too, has
// all its replicas in sync again: only then can another broker be lost
// without writes stopping (min.insync.replicas 2).
// It asks the brokers but cut, whose metadata comes from the controller:
// the healed one may still answer from what it knew when cut off.
func (s *system) awaitInSync(cut int) {
	s.T.Helper()
	t0 := time.Now()
	_, addrs := s.others(cut)
	s.waitFor("every replica to be in sync", func() bool { return len(s.laggingReplicas(addrs)) == 0 })
	s.T.Logf("every replica in sync again (waited %s)", time.Since(t0).Round(time.Millisecond))
}

// laggingReplicas names the partitions whose ISR is short of their
// replicas, as brokers tell, or the error if they do not answer.
func (s *system) laggingReplicas(brokers []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg := s.Kafka.Config()
	cfg.Brokers = brokers
	out, err := kafka.UnderReplicated(ctx, cfg)
	if err != nil {
		return []string{err.Error()}
	}
	return out
}

// probeWrites writes through the API while a broker is cut off: a
// user-migration override of instance (which, if acknowledged, must be in
// the views once healed), then a migration of it to target (a request,
// which must end if accepted). Each must be accepted
// or refused with a clear 503, within the gateway's bound of an append.
func (s *system) probeWrites(instance, target string) probe {
	s.T.Helper()
	var p probe
	no := false
	s.answered("a user-migration override of "+instance, func(ctx context.Context) error {
		err := s.api.SetUserMigration(ctx, instance, &no)
		if err == nil {
			p.flag = instance
		}
		return err
	})
	s.answered("a migration of "+instance, func(ctx context.Context) error {
		a, err := s.api.Migrate(ctx, instance, "automatic", client.MigrateOptions{Target: target, Reason: "partition test: a write while a broker is cut off"})
		if err == nil {
			p.migration, p.instance, p.source, p.target = a.Migration, instance, s.primary(instance), target
		}
		return err
	})
	return p
}

// probe is what probeWrites had acknowledged.
type probe struct {
	migration, instance, source, target string
	flag                                string
}

// answered sends one write and checks its answer: acknowledged, or a 503.
func (s *system) answered(what string, write func(context.Context) error) {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	err := write(ctx)
	took := time.Since(t0).Round(time.Millisecond)
	var ae *wire.Error
	switch {
	case err == nil:
		s.T.Logf("while cut, %s: acknowledged in %s", what, took)
	case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable:
		s.T.Logf("while cut, %s: refused in %s: %v", what, took, err)
	default:
		s.KeepLogs()
		s.T.Fatalf("while a broker is cut off, %s got %v after %s, want an acknowledgement or a 503", what, err, took)
	}
}

// probed checks, once healed, that what the probe had acknowledged was
// not lost: the migration ended, its instance where its end says, and
// the override is in the views (then cleared).
func (s *system) probed(p probe) {
	s.T.Helper()
	if p.migration != "" {
		r := s.awaitMigration(p.migration, "to end", func(m *wire.InstanceMigration) bool { return terminal(m.State) })
		s.wantPrimary(p.instance, map[bool]string{true: p.target, false: p.source}[r.State == string(events.MigrationSuccessful)], "its migration ended "+r.State)
		s.T.Logf("the migration of %s acknowledged while cut ended %s %s", p.instance, r.State, r.Error)
		s.finalize(r)
	}
	if p.flag != "" {
		s.waitFor("the acknowledged override of "+p.flag+" in the views", func() bool {
			var in struct {
				UserMigration *bool `json:"user_migration"`
			}
			return s.api.Get(context.Background(), "/v1/instances/"+p.flag, &in) == nil && in.UserMigration != nil && !*in.UserMigration
		})
		// A successful migration holds its instance until its finalize
		// (the source's cleanup) has run: a 409 until then.
		s.waitFor("clearing "+p.flag+"'s override", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := s.api.SetUserMigration(ctx, p.flag, nil)
			var ae *wire.Error
			if err != nil && !(errors.As(err, &ae) && ae.Status == http.StatusConflict) {
				s.T.Fatalf("clearing %s's override: %v", p.flag, err)
			}
			return err == nil
		})
	}
}

// finalize finalizes a migration that switched: until then it holds its
// instance (the source's copy is kept), which accepts no other operation.
func (s *system) finalize(m *wire.InstanceMigration) {
	s.T.Helper()
	if !m.Switched || m.Finalized {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.api.Migrate(ctx, m.Instance, "finalize", client.MigrateOptions{Reason: "partition test"}); err != nil {
		s.T.Fatalf("finalize the migration of %s: %v", m.Instance, err)
	}
	s.awaitMigration(m.ID, "to be finalized", func(m *wire.InstanceMigration) bool { return m.Finalized })
}
