// Package kafkaacl is who may do what on Drove's Kafka: one SASL user per
// service, and the ACLs that let each write only the topics it owns, read
// what it folds, and use its own consumer groups and transactional ids.
// It is the one table both deployments use: `drove acls` prints it and
// applies it (deploy/compose.yaml's kafka-setup service, as the admin
// user), and the compose test proves it on a real broker. The brokers run
// the standard KRaft authorizer (org.apache.kafka.metadata.authorizer.
// StandardAuthorizer) and deny what no ACL allows.
//
// The admin user is the brokers' own (inter-broker) principal and a super
// user: it creates the topics and the ACLs, so no service holds CREATE
// or ALTER. Services still call EnsureTopics, which then only checks.
package kafkaacl

import (
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// The SASL users: the admin, and one per service.
const (
	Admin     = "admin"
	Planner   = "planner"
	Projector = "projector"
	Gateway   = "gateway"
	Executor  = "executor"
	Notary    = "notary"
)

// Services are the users of the services, in the order the table lists
// them.
var Services = []string{Planner, Projector, Gateway, Executor, Notary}

// Principal is user's principal as the authorizer names it.
func Principal(user string) string { return "User:" + user }

// grant is one service's rights.
type grant struct {
	writes, reads []string
	groups        []name
	txnIDs        []name
}

type name struct {
	name     string
	prefixed bool
}

// grants are each service's rights, read off its code: the topics its
// producer appends to (events' registry maps each event type to its
// topic) and those its readers fold.
var grants = map[string]grant{
	// Decides: plans and jobs from requests, opcodes to nodes, the ends
	// of requests and migrations, placements it concludes; it elects its
	// leader through a group.
	Planner: {
		writes: []string{events.TopicInventory, events.TopicRequests, events.TopicPlans, events.TopicJobs,
			events.TopicOpcodes, events.TopicProgress, events.TopicMigrations},
		reads: []string{events.TopicInventory, events.TopicRequests, events.TopicPlans, events.TopicJobs,
			events.TopicOpcodes, events.TopicMigrations, events.TopicSettings, events.TopicProgress, events.TopicHeartbeats},
		groups: []name{{events.GroupPlannerElection, false}},
		txnIDs: []name{{"drove-planner", false}},
	},
	// Folds every topic into Postgres; writes nothing.
	Projector: {reads: events.Topics()},
	// Takes what operators and owners ask: requests, migrations' actions,
	// settings, instances restated, and the audit of who was allowed or
	// refused. Reads the whole log for point-in-time queries. Each
	// gateway's transactional id is its own (host and pid).
	Gateway: {
		writes: []string{events.TopicRequests, events.TopicMigrations, events.TopicSettings, events.TopicAudit, events.TopicInventory},
		reads:  events.Topics(),
		txnIDs: []name{{"drove-gateway-", true}},
	},
	// Runs its node's opcodes: reads them (and the settings), reports
	// their start, end and progress, placements and heartbeats. Its
	// checkpoint is its group's offset; group and transactional id are
	// drove-executor-NODE.
	Executor: {
		writes: []string{events.TopicOpcodes, events.TopicProgress, events.TopicInventory, events.TopicHeartbeats},
		reads:  []string{events.TopicOpcodes, events.TopicSettings},
		groups: []name{{events.GroupExecutorPrefix, true}},
		txnIDs: []name{{events.GroupExecutorPrefix, true}},
	},
	// Chains every topic and writes its checkpoints.
	Notary: {
		writes: []string{events.TopicCheckpoints},
		reads:  events.Topics(),
		txnIDs: []name{{"drove-notary", false}},
	},
}

// Writes are the topics user may append to.
func Writes(user string) []string { return slices.Clone(grants[user].writes) }

// ACLs are the grants of every service. Every service may describe every
// topic and its configuration: EnsureTopics checks each at start.
func ACLs() []kafka.ACL {
	var out []kafka.ACL
	for _, user := range Services {
		g, p := grants[user], Principal(user)
		for _, t := range events.Topics() {
			ops := []string{"DESCRIBE", "DESCRIBE_CONFIGS"}
			if slices.Contains(g.reads, t) {
				ops = append(ops, "READ")
			}
			if slices.Contains(g.writes, t) {
				ops = append(ops, "WRITE")
			}
			out = append(out, kafka.ACL{Principal: p, Resource: "topic", Name: t, Operations: ops})
		}
		for _, gr := range g.groups {
			out = append(out, kafka.ACL{Principal: p, Resource: "group", Name: gr.name, Prefixed: gr.prefixed,
				Operations: []string{"READ", "DESCRIBE"}})
		}
		for _, id := range g.txnIDs {
			out = append(out, kafka.ACL{Principal: p, Resource: "transactional-id", Name: id.name, Prefixed: id.prefixed,
				Operations: []string{"WRITE", "DESCRIBE"}})
		}
	}
	return out
}
