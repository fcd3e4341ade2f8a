package chaos

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// ledger is what the workload asked for and what the API answered: the
// ids it acknowledged (2xx) and, by reason, what it refused (4xx). A
// refusal is an outcome to count, not a request to forget.
type ledger struct {
	requests, migrations []string
	refused              map[string]int
}

// outcome is what became of the acknowledged work, read from the log
// itself (not the views): a test that survived chaos having moved nothing
// proves nothing.
type outcome struct {
	finished, rejected int            // requests
	moved              int            // instances the finished requests moved
	failed             map[string]int // instances they did not, by reason
	migrations         map[string]int // migrations by final state
	migrationErrors    map[string]int // failed or aborted migrations, by error
	missing            []string       // acknowledged, yet not in the log or not ended there
}

func (o outcome) String() string {
	return fmt.Sprintf("requests: %d finished, %d rejected; instances moved %d, failed %d %v; migrations %v %v",
		o.finished, o.rejected, o.moved, sum(o.failed), o.failed, o.migrations, o.migrationErrors)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// chaosSeed is CHAOS_SEED when set (to replay a failed run), else the
// clock; the test logs it either way.
func chaosSeed(t *testing.T) uint64 {
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", v, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// account reads drove.requests and drove.migrations and tells what became
// of every acknowledged request and migration.
func (s *system) account(l ledger) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := outcome{failed: map[string]int{}, migrations: map[string]int{}, migrationErrors: map[string]int{}}
	submitted, ended := map[string]bool{}, map[string]bool{}
	final := map[string]events.MigrationStateChanged{}
	for _, topic := range []string{events.TopicRequests, events.TopicMigrations} {
		recs, err := kafka.ReadAll(ctx, s.Kafka.Config(), topic)
		if err != nil {
			s.T.Fatalf("reading %s: %v", topic, err)
		}
		for _, r := range recs {
			p, err := r.Event.DecodePayload()
			if err != nil {
				s.T.Fatalf("%s: %v", r, err)
			}
			switch v := p.(type) {
			case events.EvacuationRequested:
				submitted[v.Request] = true
			case events.GroupChangeRequested:
				submitted[v.Request] = true
			case events.MigrationActionRequested:
				submitted[v.Migration] = true
			case events.RequestRejected:
				ended[v.Request] = true
				o.rejected++
			case events.RequestFinished:
				ended[v.Request] = true
				o.finished++
				o.moved += len(v.Moved)
				for _, f := range v.Failed {
					o.failed[f.Reason]++
				}
			case events.MigrationStateChanged:
				final[v.Migration] = v
			}
		}
	}
	for _, id := range l.requests {
		if !submitted[id] || !ended[id] {
			o.missing = append(o.missing, fmt.Sprintf("request %s (in the log %v, ended %v)", id, submitted[id], ended[id]))
		}
	}
	for _, id := range l.migrations {
		m, ok := final[id]
		if !submitted[id] || !ok || !over(m.State) {
			o.missing = append(o.missing, fmt.Sprintf("migration %s (in the log %v, state %q)", id, submitted[id], m.State))
			continue
		}
		o.migrations[string(m.State)]++
		if m.State != events.MigrationSuccessful {
			o.migrationErrors[firstLine(m.Error)]++
		}
	}
	return o
}

// over reports whether a migration in state st has ended.
func over(st events.MigrationState) bool {
	return st == events.MigrationSuccessful || st == events.MigrationFailed || st == events.MigrationAborted
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// checkWork fails the test unless every acknowledged request and migration
// is in the log and ended there, and the workload did real work: both
// evacuations and the group change moved instances, and a migration
// succeeded.
func (s *system) checkWork(l ledger, o outcome) {
	s.T.Helper()
	if len(o.missing) > 0 {
		s.T.Errorf("acknowledged with a 2xx, yet not ended in the log: %s", strings.Join(o.missing, "; "))
	}
	if len(l.refused) > 0 {
		s.T.Logf("refused by the API: %v", l.refused)
	}
	for _, reason := range slices.Sorted(maps.Keys(o.migrationErrors)) {
		s.T.Logf("migration ended without success (%d): %s", o.migrationErrors[reason], reason)
	}
	if o.finished < minFinished || o.moved < minMoved || o.migrations[string(events.MigrationSuccessful)] < 1 {
		s.T.Errorf("the workload did too little to prove anything: %s; want at least %d requests finished, %d instances moved and a migration successful",
			o, minFinished, minMoved)
	}
}
