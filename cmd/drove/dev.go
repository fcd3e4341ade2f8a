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
	"github.com/drovehq/drove/gateway"
)

func runDev(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("dev", `
Usage: drove dev [flags]     (make run; make run-zfs for --driver zfs)

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
exports the pools; a restart on the same --dir imports them again.`, stderr)
	dir := fs.String("dir", ".drove", "where the broker and Postgres keep their data")
	addr := fs.String("addr", "localhost:8080", "the gateway's address")
	brokerAddr := fs.String("broker-addr", embedded.DefaultBrokerAddr, "the embedded broker's address")
	pgPort := fs.Int("pg-port", embedded.DefaultPostgresPort, "the embedded Postgres port (on 127.0.0.1)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	driver := fs.String("driver", "sim", "sim (a simulated data path) or zfs (ZFS pools, processes)")
	tokens := fs.String("tokens", os.Getenv("DROVE_TOKENS"), `bearer tokens for the API, "tok1=alice:operator,tok2=acct-42:owner" (env DROVE_TOKENS); empty: no authentication, everyone is an operator`)
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	if *driver != "sim" && *driver != "zfs" {
		return fail(stderr, "dev", fmt.Errorf("unknown --driver %q: sim or zfs", *driver))
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fail(stderr, "dev", err)
	}
	accounts, err := gateway.ParseTokens(*tokens)
	if err != nil {
		return fail(stderr, "dev", err)
	}
	ctx, stop := signalContext()
	defer stop()

	var level slog.Level
	_ = level.UnmarshalText([]byte(*logLevel))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	fmt.Fprintf(stdout, "Starting Drove (data in %s)...\n", abs)
	broker, err := embedded.StartBroker(embedded.Broker{Dir: filepath.Join(abs, "kafka"), Addr: *brokerAddr})
	if err != nil {
		return fail(stderr, "dev", err)
	}
	defer broker.Stop()
	pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(abs, "postgres"), Port: *pgPort})
	if err != nil {
		return fail(stderr, "dev", err)
	}
	defer pg.Stop()
	if err := pg.EnsureDatabase(ctx, embedded.DefaultDatabase); err != nil {
		return fail(stderr, "dev", err)
	}

	cfg := allinone.Config{
		Brokers:       broker.Addrs(),
		DatabaseURL:   pg.URL(embedded.DefaultDatabase),
		GatewayAddr:   *addr,
		Logger:        log,
		Seed:          allinone.DemoCluster,
		Sim:           allinone.DemoSim(),
		GatewayTokens: accounts,
	}
	var zdev *zfsDev
	if *driver == "zfs" {
		if zdev, err = startZFSDev(ctx, abs, log, stdout); err != nil {
			return fail(stderr, "dev", err)
		}
		cfg.Seed, cfg.Driver = allinone.ZFSDemoCluster, zdev.demo.Driver
		defer func() {
			if err := zdev.stop(context.Background()); err != nil {
				fmt.Fprintf(stderr, "drove dev: stopping the ZFS demo: %v\n", err)
			} else {
				fmt.Fprintf(stdout, "Workloads stopped, pools exported; their files stay in %s.\n", zdev.dir)
			}
		}()
	}
	sys, err := allinone.Start(ctx, cfg)
	if err != nil {
		return fail(stderr, "dev", err)
	}
	node := sys.Nodes[0]
	fmt.Fprintf(stdout, `
Drove is running: %d nodes, API at http://%s (metrics at /metrics).
Kafka brokers %v, Postgres %s.

Try:
  go run ./cmd/drove evacuate %s --mode all      # empty a node, with live progress
  go run ./cmd/drove plans                       # every request and its status

(or build it once: make build, then bin/drove ...). Ctrl-C stops everything.
`, len(sys.Nodes), *addr, broker.Addrs(), pg.URL("drove"), node)
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
	return exitOK
}
