package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/deploy/supervise"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/executor/zfs"
)

// driverFlags choose and configure the executor's driver.
type driverFlags struct {
	driver     string
	zfsParent  string
	runtime    string
	stateDir   string
	command    string
	listenAddr string
	advertise  string
	sendMbps   float64
	simBps     int64
}

func runExecutorCmd(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("executor", `
Usage: drove executor --node NAME [--driver sim|zfs|qemu|process] [flags]

Runs the agent of one node: it takes the opcodes dispatched to this node,
runs them through a driver, reports progress and how each ended, and the
new placement when an instance has moved. When this node is a move's
target it runs the receiving side and tells the source where it listens.
Transient faults are retried with backoff; fatal ones roll back and leave
the instance where it was.

Drivers:
  sim      a simulated data path (the demo)
  zfs      instance datasets under --zfs-parent, sent between nodes with
           incremental zfs send; --runtime qemu boots each instance's VM from
           the disk.raw in its dataset and hands a running VM over live,
           --runtime process runs --command in each instance's dataset (its
           working directory) and moves it with the data,
           --runtime none moves storage only
  qemu     QEMU VMs over QMP on shared storage: live migration (opcodes and
           per-instance phases), post-copy
  process  instances that are plain processes (--command "CMD {instance}")`, stderr)
	var sf serviceFlags
	sf.register(fs, false)
	var df driverFlags
	var tf tlsFlags
	tf.register(fs)
	node := fs.String("node", "", "this node's name (required)")
	fs.StringVar(&df.driver, "driver", "sim", "sim, zfs, qemu or process")
	fs.StringVar(&df.zfsParent, "zfs-parent", "", "zfs: the dataset holding one dataset per instance, e.g. tank/drove")
	fs.StringVar(&df.runtime, "runtime", "none", "zfs: what runs instances: none, qemu or process")
	fs.StringVar(&df.stateDir, "state-dir", "/var/lib/drove", "qemu, process: where sockets, pid files and logs go")
	fs.StringVar(&df.command, "command", "", `process, and zfs with --runtime process: the command of an instance, with {instance} replaced`)
	fs.StringVar(&df.listenAddr, "listen-addr", "0.0.0.0:0", "where the receiving side of moves listens")
	fs.StringVar(&df.advertise, "advertise-addr", "", "the host other nodes reach this one at (default: the listen host)")
	fs.Int64Var(&df.simBps, "sim-bandwidth", 0, "sim: the simulated link's bytes per second; 0: the demo's (slow it to watch moves, or to cut a node off mid-move)")
	heartbeat := fs.Duration("heartbeat", 5*time.Second, "how often to renew this node's lease with a heartbeat")
	fence := fs.Duration("fence", 15*time.Second, "cut off from the broker this long, stop acting on moves (cancel them, refuse switches) until a heartbeat lands again and the log shows the planner did not declare this node lost meanwhile (if it did: until it is brought online); keep it below the planner's --node-lease")
	fs.Float64Var(&df.sendMbps, "send-mbps", 0, "cap on this node's sends in Mbit/s; 0: none (per-migration settings may cap further)")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	if *node == "" {
		fs.Usage()
		return exitUsage
	}
	id, err := tf.identity(*node)
	if err != nil {
		return fail(stderr, "executor", err)
	}
	ctx, stop := signalContext()
	defer stop()
	log := sf.logger(stderr)
	d, closeDriver, err := buildDriver(ctx, *node, df, tf.files(), log)
	if err != nil {
		return fail(stderr, "executor", err)
	}
	defer closeDriver()
	reg := newRegistry()
	serveMetrics(ctx, sf.metricsAddr, reg, log)
	lease := &executor.Lease{} // one per process: a restart after a fenced producer keeps the fence
	err = supervise.Run(ctx, supervise.Part{Name: "executor/" + *node, Log: log}, func(ctx context.Context) error {
		e, err := executor.New(executor.Config{Node: *node, Kafka: sf.kafka("drove-executor-" + *node), Partitions: sf.partitions,
			ListenAddr: df.listenAddr, AdvertiseAddr: df.advertise, Logger: log, Metrics: reg,
			Transfer: id, PlainTransfer: tf.plain, Heartbeat: *heartbeat, Fence: *fence, Lease: lease}, d)
		if err != nil {
			return err
		}
		return e.Run(ctx)
	})
	if err != nil {
		return fail(stderr, "executor", err)
	}
	return exitOK
}

// buildDriver makes the driver the flags ask for; QEMU's migration
// streams go over TLS with the node's identity in tlsFiles (zero: plain).
func buildDriver(ctx context.Context, node string, df driverFlags, tlsFiles nodeid.Files, log *slog.Logger) (executor.Driver, func(), error) {
	none := func() {}
	sendBps := int64(df.sendMbps * 1e6 / 8)
	switch df.driver {
	case "sim":
		cfg := allinone.DemoSim()
		if df.simBps > 0 {
			cfg.Bandwidth = df.simBps
		}
		d, err := sim.New(cfg)
		return d, none, err
	case "zfs":
		if df.zfsParent == "" {
			return nil, none, fmt.Errorf("--driver zfs needs --zfs-parent")
		}
		cfg := zfs.Config{Node: node, Parent: df.zfsParent, SendBytesPerSecond: sendBps, Logger: log}
		closeRuntime := none
		switch df.runtime {
		case "none":
		case "process":
			pd, err := processDriver(node, df, log)
			if err != nil {
				return nil, none, err
			}
			cfg.Runtime = process.ZFSRuntime{Driver: pd}
		case "qemu":
			vm, err := qemu.New(qemu.Config{Node: node, Dir: filepath.Join(df.stateDir, "qemu"), Logger: log, TLS: tlsFiles,
				Disk: func(string) (string, error) { return "", fmt.Errorf("the zfs runtime gives each VM its disk") }})
			if err != nil {
				return nil, none, err
			}
			cfg.Runtime = qemu.ZFSRuntime{Driver: vm}
			closeRuntime = func() { _ = vm.Close() }
		default:
			return nil, none, fmt.Errorf("unknown --runtime %q: none, qemu or process", df.runtime)
		}
		d, err := zfs.New(ctx, cfg)
		if err != nil {
			closeRuntime()
			return nil, none, err
		}
		return d, closeRuntime, nil
	case "qemu":
		vm, err := qemu.New(qemu.Config{Node: node, Dir: filepath.Join(df.stateDir, "qemu"), Logger: log, TLS: tlsFiles,
			Disk: func(instance string) (string, error) {
				return filepath.Join(df.stateDir, "disks", instance+".raw"), nil
			}})
		if err != nil {
			return nil, none, err
		}
		return vm, func() { _ = vm.Close() }, nil
	case "process":
		d, err := processDriver(node, df, log)
		return d, none, err
	}
	return nil, none, fmt.Errorf("unknown --driver %q: sim, zfs, qemu or process", df.driver)
}

// processDriver runs each instance as --command, {instance} replaced by
// its name: the process driver, or the zfs driver's process runtime.
func processDriver(node string, df driverFlags, log *slog.Logger) (*process.Driver, error) {
	if !strings.Contains(df.command, "{instance}") {
		return nil, fmt.Errorf(`--driver %s needs --command with {instance} in it, e.g. --command "/usr/local/bin/app --name {instance}"`, df.driver)
	}
	return process.New(process.Config{Node: node, Dir: filepath.Join(df.stateDir, "process"), Logger: log,
		Command: func(instance string) ([]string, error) {
			return strings.Fields(strings.ReplaceAll(df.command, "{instance}", instance)), nil
		}})
}
