package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/events/verify"
)

// exitViolations is drove verify's answer when the log breaks an invariant.
const exitViolations = 3

func runVerify(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify", `
Usage: drove verify [flags]

Audits the log: reads every topic from offset zero and checks, with rules of
its own (none of the services' code), that
  placement     no instance was placed on two nodes at once, and no move left
                it running on both of its sides;
  once          no opcode or migration phase ran twice or ended twice;
  dependencies  no job was released before the jobs it depends on ended in a
                status it accepts (Ganeti's depends), and every released job
                and dispatched opcode is the plan's;
  capacity      no plan and no placement put a node over its memory or disk;
  requests      every request ended, and each finished one's instances are
                where its result says;
  migrations    every per-instance migration's record agrees with its phases.
It reads the log only (no database), so it works on any Drove log: against
make run with no flags, or on a copy of a production log with --brokers.

Exit status 0 when everything holds, 3 when something does not (the report
names each violation with the topic/partition@offset and id of its events),
1 when the log cannot be read (the reader is strict: a record that is not a
valid Drove event stops it, naming the record), 2 on a usage error.`, stderr)
	brokers := os.Getenv("KAFKA_BROKERS")
	if brokers == "" {
		brokers = embedded.DefaultBrokerAddr
	}
	fs.StringVar(&brokers, "brokers", brokers, "Kafka brokers, comma-separated (env KAFKA_BROKERS; default: the embedded broker of drove dev)")
	var ks kafkaSecurity
	ks.register(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	allowOpen := fs.Bool("allow-open", false, "accept requests and migrations still under way (a running system)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up reading the log after this long")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "drove verify: unexpected argument %q\n", pos[0])
		}
		return flagExit(err)
	}
	ctx, stop := signalContext()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cfg := kafka.Config{ClientID: "drove-verify"}
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Brokers = append(cfg.Brokers, b)
		}
	}
	ks.apply(&cfg)
	recs, err := readLog(ctx, cfg)
	if err != nil {
		return fail(stderr, "verify", fmt.Errorf("%w (is `make run` running? otherwise set KAFKA_BROKERS or --brokers)", err))
	}
	rep := verify.Check(recs, verify.Options{AllowOpen: *allowOpen})
	return printVerdict(stdout, rep, rep.OK, *asJSON)
}

// printVerdict prints a check's report, as JSON or as text, and answers
// exitViolations when the check failed: verify and verify-log share it.
func printVerdict(stdout io.Writer, rep interface{ WriteText(io.Writer) error }, ok, asJSON bool) int {
	if asJSON {
		if code := printJSON(stdout, rep); code != exitOK {
			return code
		}
	} else if err := rep.WriteText(stdout); err != nil {
		return exitError
	}
	if !ok {
		return exitViolations
	}
	return exitOK
}

// readLog reads every topic whole. A topic nobody created yet (settings on
// a system nobody configured) is an empty one.
func readLog(ctx context.Context, cfg kafka.Config) ([]verify.Record, error) {
	var out []verify.Record
	for _, topic := range events.Topics() {
		recs, err := kafka.ReadAll(ctx, cfg, topic)
		if errors.Is(err, kafka.ErrUnknownTopic) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			out = append(out, verify.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Event: r.Event})
		}
	}
	return out, nil
}
