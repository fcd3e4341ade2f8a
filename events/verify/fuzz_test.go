package verify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// gen draws small values from the fuzzer's bytes, so that random logs
// name the same few nodes, instances, requests and jobs and the checks
// meet each other's state.
type gen struct{ b []byte }

func (g *gen) next() int {
	if len(g.b) == 0 {
		return 0
	}
	v := int(g.b[0])
	g.b = g.b[1:]
	return v
}

func (g *gen) pick(vs ...string) string { return vs[g.next()%len(vs)] }
func (g *gen) node() string             { return g.pick("n1", "n2", "n3", "") }
func (g *gen) inst() string             { return g.pick("i1", "i2", "i3") }
func (g *gen) req() string              { return g.pick("r1", "r2", "m1") }
func (g *gen) small() int               { return g.next()%4 - 1 }
func (g *gen) status() events.JobStatus {
	return events.JobStatus(g.pick("success", "error", "canceled", "bogus"))
}

func (g *gen) opcode() events.Opcode {
	return events.Opcode{OpID: events.OpID(g.pick(string(events.OpInstanceMigrate), string(events.OpInstanceFailover))),
		Instance: g.inst(), From: g.node(), To: g.node()}
}

func (g *gen) job() events.Job {
	j := events.Job{Index: g.small(), Opcodes: []events.Opcode{g.opcode()}}
	for range g.next() % 3 {
		j.Depends = append(j.Depends, events.Dependency{Job: g.small() - 1, Statuses: []events.JobStatus{g.status()}})
	}
	return j
}

// payload returns one random event of any type the checker reads.
func (g *gen) payload() events.Payload {
	res := events.Resources{MemoryMiB: int64(g.next() * 16), DiskMiB: int64(g.next() * 64)}
	moved := []events.Moved{{Instance: g.inst(), Group: "g1", Nodes: []string{g.node(), g.node()}[:1+g.next()%2]}}
	switch g.next() % 22 {
	case 0:
		return events.NodeAnnounced{Name: g.node(), Group: "g1", Total: res, Free: res}
	case 1:
		return events.NodeUpdated{Name: g.node(), Group: "g1", Total: res, Free: res, Drained: true}
	case 2:
		return events.InstanceDeclared{Name: g.inst(), Owner: "o", PrimaryNode: g.node(), SecondaryNode: g.node(),
			Storage: events.StorageKind(g.pick("plain", "drbd", "zfs-local", "rbd")), RunState: events.RunRunning,
			Size: events.Size{MemoryMiB: int64(g.next() * 8), DisksMiB: []int64{int64(g.next() * 32)}}}
	case 3:
		return events.InstancePlaced{Instance: g.inst(), Group: "g1", PrimaryNode: g.node(), SecondaryNode: g.node(),
			PreviousGroup: "g1", PreviousPrimary: g.node(), PreviousSecondary: g.node(), Request: g.req()}
	case 4:
		return events.MoveStatusReported{Request: g.req(), Instance: g.inst(), Node: g.node(),
			Status: events.NodeMoveStatus(g.pick("migration source", "migration destination", "up", "down"))}
	case 5:
		return events.EvacuationRequested{Request: g.req(), Nodes: []string{g.node()}, Mode: events.EvacAll, DryRun: g.next()%2 == 0}
	case 6:
		return events.GroupChangeRequested{Request: g.req(), Instances: []string{g.inst()}}
	case 7:
		return events.RequestApproved{Request: g.req()}
	case 8:
		return events.RequestCancelled{Request: g.req()}
	case 9:
		return events.RequestRejected{Request: g.req(), Reason: "no"}
	case 10:
		return events.RequestFinished{Request: g.req(), Moved: moved, Failed: []events.Failed{{Instance: g.inst(), Reason: "x"}}}
	case 11:
		return events.PlanComputed{Request: g.req(), Moved: moved, Jobs: []events.Job{g.job(), g.job()}}
	case 12:
		return events.JobReleased{Request: g.req(), Job: g.job()}
	case 13:
		return events.JobCancelled{Request: g.req(), Job: g.small(), Reason: "x"}
	case 14:
		return events.JobEnded{Request: g.req(), Job: g.small(), Status: g.status()}
	case 15:
		return events.OpcodeDispatched{Request: g.req(), Job: g.small(), Index: g.small(), Node: g.node(), Opcode: g.opcode()}
	case 16:
		return events.OpcodeStarted{Request: g.req(), Job: g.small(), Index: g.small(), Node: g.node()}
	case 17:
		return events.OpcodeEnded{Request: g.req(), Job: g.small(), Index: g.small(), Node: g.node(), Status: g.status()}
	case 18:
		return events.MigrationPhaseDispatched{Migration: g.req(), Instance: g.inst(), Node: g.node(), Seq: g.small(),
			Phase: g.pick("begin", "sync", "switch", "abort", "rollback", "finalize"), Source: g.node(), Target: g.node()}
	case 19:
		return events.MigrationPhaseEnded{Migration: g.req(), Instance: g.inst(), Node: g.node(), Seq: g.small(),
			Phase: g.pick("begin", "sync", "switch", "rollback", "finalize"), Status: g.status(), Bytes: int64(g.next())}
	case 20:
		return events.MigrationStateChanged{Migration: g.req(), Instance: g.inst(), Source: g.node(), Target: g.node(),
			State: events.MigrationState(g.pick("running", "successful", "aborted", "failed")), Syncs: g.small(),
			Switched: g.next()%2 == 0, Finalized: g.next()%2 == 0}
	default:
		return events.End{Request: g.req(), Instance: g.inst(), Node: g.node(), Phase: "sync", State: events.EndSuccessful}
	}
}

// Random logs, valid or not, in any order, on any topic and partition,
// with repeated ids and offsets and broken payloads: Check never panics,
// and its report is consistent.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x02\x00\x01\x03\x05\x0b\x0c\x0f\x10\x11\x0e\x0a"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		topics := events.Topics()
		var recs []Record
		for len(g.b) > 0 && len(recs) < 200 {
			env := events.New(g.payload(), events.WithTime(t0.Add(time.Duration(g.next()-128)*time.Second)))
			switch g.next() % 8 {
			case 0:
				env.Payload = json.RawMessage(g.pick(`{}`, `null`, `[`, `{"name":1}`))
			case 1:
				if len(recs) > 0 {
					env.ID = recs[g.next()%len(recs)].Event.ID
				}
			}
			recs = append(recs, Record{Topic: topics[g.next()%len(topics)], Partition: int32(g.next() % 3),
				Offset: int64(g.next() % 16), Event: env})
		}
		for _, opts := range []Options{{}, {AllowOpen: true}} {
			rep := Check(recs, opts)
			if rep.OK != (len(rep.Violations) == 0) || (len(rep.Failed) == 0) != rep.OK {
				t.Fatalf("inconsistent report: ok %t, %d violations, failed %v", rep.OK, len(rep.Violations), rep.Failed)
			}
			if rep.Counts.Events+rep.Counts.Duplicates > len(recs) {
				t.Fatalf("%d events and %d duplicates from %d records", rep.Counts.Events, rep.Counts.Duplicates, len(recs))
			}
		}
	})
}
