package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
)

// devFlags are drove dev's settings.
type devFlags struct {
	dir, addr, brokerAddr, logLevel, driver, tokens string
	kafka                                           string
	pgPort                                          int
	partitions                                      int
}

func runDev(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("dev", `
Usage: drove dev [flags]     (make run; make run-kafka for --kafka apache;
                              make run-zfs for --driver zfs)

Runs the whole system on this machine, the embedded default: a Kafka-protocol
broker, a PostgreSQL cluster from the system's binaries, the projector, the
planner service, one simulated executor per node of a demo cluster (3 groups
of 8 nodes, about 200 instances), and the gateway. State is kept in --dir,
so a restart carries on where it stopped; delete the directory to start over.

With --driver zfs the demo runs on real parts instead (2 groups of 3 nodes):
each node is a file-backed ZFS pool (zfs-fuse, started if not running)
named drove-<node>, each instance a dataset in it with generated content
and a process that keeps writing to it, and each node's executor moves
datasets with the ZFS driver. A clean stop (Ctrl-C) stops the processes and
exports the pools; a restart on the same --dir imports them again.

With --kafka apache the system runs on a real Apache Kafka broker instead of
the embedded one: drove dev starts one (deploy/apachekafka: Java 17 or later
and the jars make test-deps fetches) with its log in DIR/apachekafka, and
stops it cleanly on Ctrl-C; a restart on the same --dir is the same broker
on the same port with the same topics and events. Each broker keeps its own
log, so a --dir holds one or the other.`, stderr)
	var f devFlags
	fs.StringVar(&f.dir, "dir", ".drove", "where the broker and Postgres keep their data")
	fs.StringVar(&f.addr, "addr", "localhost:8080", "the gateway's address")
	fs.StringVar(&f.kafka, "kafka", kafkaEmbedded, "the broker: embedded (franz-go's kfake, in this process) or apache (a real Apache Kafka broker this command starts, its data in DIR/apachekafka)")
	fs.StringVar(&f.brokerAddr, "broker-addr", embedded.DefaultBrokerAddr, "the embedded broker's address (--kafka apache picks a free port once and keeps it)")
	fs.IntVar(&f.pgPort, "pg-port", embedded.DefaultPostgresPort, "the embedded Postgres port (on 127.0.0.1)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "debug, info, warn or error")
	fs.IntVar(&f.partitions, "partitions", envInt("DROVE_PARTITIONS", 3), "partitions of each topic created in a new --dir (env DROVE_PARTITIONS)")
	fs.StringVar(&f.driver, "driver", "sim", "sim (a simulated data path) or zfs (ZFS pools, processes)")
	fs.StringVar(&f.tokens, "tokens", os.Getenv("DROVE_TOKENS"), `bearer tokens for the API, "tok1=alice:operator,tok2=acct-42:owner" (env DROVE_TOKENS); empty: no authentication, everyone is an operator`)
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	ctx, stop := signalContext()
	defer stop()
	if err := f.dev(ctx, stdout, stderr); err != nil {
		return fail(stderr, "dev", err)
	}
	return exitOK
}

// dev starts the infrastructure and the system on it, and runs until ctx
// ends (a signal).
func (f devFlags) dev(ctx context.Context, stdout, stderr io.Writer) error {
	if f.driver != "sim" && f.driver != "zfs" {
		return fmt.Errorf("unknown --driver %q: sim or zfs", f.driver)
	}
	abs, err := filepath.Abs(f.dir)
	if err != nil {
		return err
	}
	accounts, err := gateway.ParseTokens(f.tokens)
	if err != nil {
		return err
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(f.logLevel))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	fmt.Fprintf(stdout, "Starting Drove (data in %s)...\n", abs)
	broker, err := f.startDevBroker(ctx, abs)
	if err != nil {
		return err
	}
	defer broker.stop()
	fmt.Fprintln(stdout, broker.about)
	pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(abs, "postgres"), Port: f.pgPort})
	if err != nil {
		return err
	}
	defer pg.Stop()
	if err := pg.EnsureDatabase(ctx, embedded.DefaultDatabase); err != nil {
		return err
	}
	cfg := allinone.Config{
		Kafka:         kafka.Config{Brokers: broker.brokers},
		DatabaseURL:   pg.URL(embedded.DefaultDatabase),
		GatewayAddr:   f.addr,
		Logger:        log,
		Seed:          allinone.DemoCluster,
		Sim:           allinone.DemoSim(),
		GatewayTokens: accounts,
		PKIDir:        filepath.Join(abs, "pki"),
		Partitions:    f.partitions,
		// The planner's snapshot lives with the log it was taken of.
		PlannerSnapshotDir: filepath.Join(abs, "planner"),
		// The signed heads live outside the log, so `drove verify-log
		// --heads` sees a log cut at its end (docs/audit.md).
		NotaryHeads: filepath.Join(abs, "notary-heads.jsonl"),
	}
	if cfg.NotaryKey, err = devNotaryKey(abs); err != nil {
		return err
	}
	if f.driver == "zfs" {
		zdev, err := startZFSDev(ctx, abs, log, stdout)
		if err != nil {
			return err
		}
		cfg.Seed, cfg.Driver = allinone.ZFSDemoCluster, zdev.demo.Driver
		defer zdev.stopAndSay(stdout, stderr)
		return f.serve(ctx, cfg, zdev, stdout, stderr)
	}
	return f.serve(ctx, cfg, nil, stdout, stderr)
}

// serve runs the system on cfg until ctx ends, saying how to use it.
func (f devFlags) serve(ctx context.Context, cfg allinone.Config, zdev *zfsDev, stdout, stderr io.Writer) error {
	sys, err := allinone.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, `
Drove is running: %d nodes, API at http://%s (metrics at /metrics).
The web console: http://%s/console/   The API's description: /v1/openapi.json
Kafka brokers %v, Postgres %s.

Try:
  go run ./cmd/drove evacuate %s --mode all      # empty a node, with live progress
  go run ./cmd/drove plans                       # every request and its status
  go run ./cmd/drove verify-log --key %s --heads %s
                                                 # the log as the notary signed it

(or build it once: make build, then bin/drove ...). Ctrl-C stops everything.
`, len(sys.Nodes), f.addr, f.addr, cfg.Kafka.Brokers, cfg.DatabaseURL, sys.Nodes[0],
		filepath.Join(filepath.Dir(cfg.NotaryHeads), "notary.key"), cfg.NotaryHeads)
	if zdev != nil {
		zdev.describe(stdout)
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "\nStopping...")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sys.Stop(sctx); err != nil {
		fmt.Fprintf(stderr, "drove dev: stopping: %v\n", err)
	}
	return nil
}
