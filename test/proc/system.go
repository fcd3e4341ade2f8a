package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// System is what test/chaos and test/partition share of a Drove run as
// separate programs: its processes, the brokers and the Postgres the test
// started for them (testenv.OwnPostgres), and what a failure keeps of
// them.
type System struct {
	T       *testing.T
	Name    string // the test's kind (chaos, partition): names its kept logs
	Dir     string // the processes' logs
	Bin     string // the drove binary
	Brokers string // the brokers' addresses, comma-separated
	Kafka   *apachekafka.Cluster
	PG      *embedded.PostgresServer
	Procs   []*Proc
	kept    bool
}

// WaitFor polls cond until it holds; past d it keeps the logs, shows each
// process's tail and fails the test.
func (s *System) WaitFor(what string, d time.Duration, cond func() bool) {
	s.T.Helper()
	deadline := time.Now().Add(d)
	for backoff := 20 * time.Millisecond; !cond(); backoff = min(backoff*2, 300*time.Millisecond) {
		if time.Now().After(deadline) {
			for _, p := range s.Procs {
				s.T.Logf("---- %s:\n%s", p.Name, p.Tail())
			}
			s.KeepLogs()
			s.T.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(backoff)
	}
}

// Verify runs drove verify on the log and returns its verdict, its last
// line. A failure keeps the logs and fails the test with the report and
// what explain adds to it (nil: nothing).
func (s *System) Verify(explain func(report string) string) string {
	out, err := exec.Command(s.Bin, "verify", "--brokers", s.Brokers).CombinedOutput()
	if err != nil {
		s.KeepLogs()
		more := ""
		if explain != nil {
			more = explain(string(out))
		}
		s.T.Fatalf("drove verify: %v\n%s\n%s", err, out, more)
	}
	s.T.Logf("drove verify:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// ReplayEqual runs drove replay until the views, caught up, equal the
// log (the projector may still be folding the last events), for up to d.
func (s *System) ReplayEqual(d time.Duration) {
	var out []byte
	s.WaitFor("drove replay to find the views equal", d, func() bool {
		var err error
		out, err = exec.Command(s.Bin, "replay", "--brokers", s.Brokers, "--database-url", s.PG.URL("postgres")).CombinedOutput()
		return err == nil
	})
	s.T.Logf("drove replay:\n%s", out)
}

// BusiestPartition is the partition that holds the most events, its
// number of events and the broker leading it: the broker whose loss costs
// the most under load.
func (s *System) BusiestPartition() (tp kafka.TopicPartition, n int64, leader int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := s.Kafka.Config()
	ends, err := kafka.Ends(ctx, cfg, events.Topics()...)
	if err != nil {
		s.T.Fatalf("the busiest partition: %v", err)
	}
	for p, end := range ends {
		if end > ends[tp] {
			tp = p
		}
	}
	leaders, err := kafka.Leaders(ctx, cfg, tp.Topic)
	if err != nil || leaders[tp] < 1 {
		s.T.Fatalf("the leader of %s: %d, %v", tp, leaders[tp], err)
	}
	return tp, ends[tp], int(leaders[tp])
}

// KeepLogs copies the processes' and the brokers' logs where a failed run
// leaves them, once.
func (s *System) KeepLogs() {
	if s.kept {
		return
	}
	s.kept = true
	keep, err := os.MkdirTemp("", "drove-"+s.Name+"-failed-")
	if err != nil {
		return
	}
	for _, p := range s.Procs {
		_ = os.WriteFile(filepath.Join(keep, filepath.Base(p.Name)+".log"), []byte(p.Log()), 0o644)
	}
	if s.Kafka != nil {
		for _, n := range s.Kafka.Nodes {
			if b, err := os.ReadFile(filepath.Join(n.Dir, "broker.log")); err == nil {
				_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("broker-%d.log", n.ID)), b, 0o644)
			}
		}
	}
	s.T.Logf("the processes' and brokers' logs are kept in %s", keep)
}

// FreePort is a TCP port on 127.0.0.1 the kernel just reported free.
func (s *System) FreePort() int {
	port, err := embedded.FreePort()
	if err != nil {
		s.T.Fatal(err)
	}
	return port
}
