package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/drovehq/drove/deploy/kafkaacl"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

func runACLs(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("acls", `
Usage: drove acls
       drove acls apply [flags]

Who may do what on Drove's Kafka (deploy/kafkaacl): one SASL user per
service (planner, projector, gateway, executor, notary), each allowed to
write only the topics it owns. Without arguments, prints the ACLs. 'apply'
sets the cluster up as the admin user (a super user of the brokers, which
run org.apache.kafka.metadata.authorizer.StandardAuthorizer): creates
Drove's topics and the ACLs, so that no service needs the right to create
either. Run it once before the services, and again after an upgrade;
what exists is kept.`, stderr)
	var sf serviceFlags
	sf.register(fs, false)
	timeout := fs.Duration("timeout", 2*time.Minute, "apply: give up after this long")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case len(pos) == 0:
		for _, a := range kafkaacl.ACLs() {
			fmt.Fprintln(stdout, a)
		}
		return exitOK
	case len(pos) != 1 || pos[0] != "apply":
		fs.Usage()
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cfg := sf.kafka("drove-acls")
	if err := kafka.EnsureTopics(ctx, cfg, sf.partitions, events.Topics()...); err != nil {
		return fail(stderr, "acls apply", err)
	}
	acls := kafkaacl.ACLs()
	if err := kafka.ApplyACLs(ctx, cfg, acls); err != nil {
		return fail(stderr, "acls apply", err)
	}
	fmt.Fprintf(stdout, "Drove's %d topics exist; %d ACLs applied for %v.\n", len(events.Topics()), len(acls), kafkaacl.Services)
	return exitOK
}
