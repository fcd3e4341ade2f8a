// Command drove is Drove's one binary: the services, the embedded
// development system and the client commands are its subcommands.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/drovehq/drove/cmd/drove/hailcli"
)

// command is one subcommand; run gets the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"dev", "run the whole system on this machine, with a demo cluster (make run)", runDev},
		{"broker", "run the embedded Kafka-protocol broker alone", runBroker},
		{"gateway", "serve the HTTP API", runGatewayCmd},
		{"planner", "run the planner service", runPlannerCmd},
		{"executor", "run the agent of one node", runExecutorCmd},
		{"projector", "fold the log into the Postgres views", runProjectorCmd},
		{"replay", "rebuild every view from offset zero and compare with the live ones", runReplay},
		{"history", "the story of an instance, node, request or migration: every event, who asked and why", runHistory},
		{"audit", "the audit trail: who asked what, who was refused (operators)", runAudit},
		{"verify", "audit the log from offset zero: placements, opcodes, dependencies, capacity, requests, migrations", runVerify},
		{"notary", "checkpoint the log's hash chains (tamper evidence); keygen makes its signing key", runNotary},
		{"verify-log", "prove the log was not altered: recompute its hash chains against the notary's checkpoints", runVerifyLog},
		{"seed", "load an inventory (the demo, or a Ganeti cluster) into the log", runSeed},
		{"evacuate", "empty nodes, with live progress", runEvacuate},
		{"group-change", "move instances to another node group, with live progress", runGroupChange},
		{"approve", "run a reviewed dry-run plan", runApprove},
		{"cancel", "stop a request", runCancel},
		{"undrain", "return a drained node to service after maintenance", runUndrain},
		{"node", "mark a node offline (down) or online again", runNode},
		{"plans", "list requests, or print one request's plan", runPlans},
		{"watch", "follow a request or an instance", runWatch},
		{"migrate", "migrate one instance (RFD 34): begin, sync, switch, abort, pause, schedule, watch", runMigrate},
		{"settings", "read or change the migration settings (operators)", runSettings},
		{"acls", "who may write which Kafka topic: print the ACLs, or apply them and create the topics (as the admin user)", runACLs},
		{"ca", "a small CA for the executors' node certificates: init, issue NODE", runCA},
		{"iallocator", "answer a Ganeti IAllocator request (stands in for hail)", runIAllocator},
	}
}

func main() {
	if name, ok := asAllocator(os.Args[0]); ok {
		os.Exit(hailcli.Run(name, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "drove: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "drove moves virtual machines and containers between servers.")
	fmt.Fprintln(w, "\nUsage: drove COMMAND [flags] [args]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'drove COMMAND --help' for a command's flags.")
}
