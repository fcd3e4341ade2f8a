// Command zfs measures the ZFS data path on this machine: the throughput
// of a move through Drove (zfs send → executor/transfer over TCP → zfs
// receive, by the zfs driver's source and target sides) divided by a bare
// `zfs send | zfs receive` of the same dataset, and the downtime of the
// switch phase of a migrate with a write load running during the sync;
// then a per-instance migration of a zfs-local instance through the whole
// system, driven over HTTP (system.go), whose downtime and first-sync
// throughput (÷ a bare send of the same data) go to -out as JSON.
// The driver's full send is measured over plain TCP and over TLS 1.3 with
// node certificates (as executors move), in rounds interleaved with bare
// runs, medians against medians.
//
//	go run ./test/bench/zfs [-size-mib 1024] [-write-mibps 5] [-rounds 3] [-system=false | -direct=false]
//
// It needs root and zfs-fuse (make test-deps) and creates and destroys its
// own file-backed pools.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/transfer"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/bench/cli"
	"github.com/drovehq/drove/test/zfsenv"
)

func main() {
	sizeMiB := flag.Int("size-mib", 1024, "dataset size in MiB")
	writeMiBps := flag.Float64("write-mibps", 5, "write load during the sync phase, MiB/s")
	direct := flag.Bool("direct", true, "measure the driver's own sends against a bare send first (-direct=false: the system's move alone)")
	system := flag.Bool("system", true, "also migrate an instance through the whole system, over HTTP")
	out := flag.String("out", "test/bench/results/zfs-migration.json", "where the system migration's figures go, as JSON")
	downtimeOut := flag.String("downtime-out", "test/bench/results/downtime.json", "where the system moves' downtimes go (workload's, reported, predicted), as JSON, beside the live bench's")
	rounds := flag.Int("rounds", 3, "rounds of the driver's own sends (a bare run, plain TCP and TLS each way), before the system's moves; their medians count")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process during the system's moves to this file")
	moves := flag.Int("moves", 4, "system moves, there and back: each predicted with what the ones before it measured (the first has no history); the throughput ratio holds their first syncs' median against the bare runs'")
	flag.Parse()
	var err error
	if *direct {
		err = run(*sizeMiB, *writeMiBps, *rounds)
	}
	if err == nil && *system {
		if err = runSystem(*sizeMiB, *writeMiBps, *out, *downtimeOut, *moves, *cpuProfile); err != nil {
			err = fmt.Errorf("system: %w", err)
		}
	}
	// Last, with the pools gone: the daemon this bench started goes too.
	if err = errors.Join(err, zfsenv.StopDaemon()); err != nil {
		fmt.Fprintln(os.Stderr, "bench zfs:", err)
		os.Exit(1)
	}
}

func run(sizeMiB int, writeMiBps float64, rounds int) (err error) {
	ctx := context.Background()
	poolSize := sizeMiB*4 + 512
	a, err := zfsenv.CreatePool("bench_a", poolSize)
	if err != nil {
		return err
	}
	defer zfsenv.Release(a, &err)
	b, err := zfsenv.CreatePool("bench_b", poolSize)
	if err != nil {
		return err
	}
	defer zfsenv.Release(b, &err)
	ds := a + "/vm"
	if err := sh("zfs create " + ds); err != nil {
		return err
	}
	fmt.Printf("writing %d MiB into %s ...\n", sizeMiB, ds)
	if err := fill(filepath.Join("/"+ds, "base"), int64(sizeMiB)<<20); err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The nodes' identities: moves over TLS are measured as executors
	// make them.
	pki, err := os.MkdirTemp("", "drove-bench-pki-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(pki)
	ids, err := nodeid.Bundle(pki, "na", "nb")
	if err != nil {
		return err
	}
	if err := throughput(ctx, a, b, ds, rounds, ids, quiet); err != nil {
		return err
	}
	return runningMigrate(ctx, a, b, ds, writeMiBps, ids, quiet)
}

// throughput moves the same dataset with the zfs driver's two sides over
// TCP, with no write load (the instance is stopped), in rounds: a bare
// run and a copy relay (bareRuns), then the driver's full send a→b and
// b→a over plain TCP, then the same over TLS. Bare runs here vary by a
// third from one to the next (docs/benchmarks.md), so each figure is the
// median over the rounds, interleaved as farm-bench's A/B ratios are,
// never one run against another taken minutes apart.
func throughput(ctx context.Context, a, b, ds string, rounds int, ids map[string]*nodeid.Identity, quiet *slog.Logger) error {
	na, err := zfs.New(ctx, zfs.Config{Node: "na", Parent: a, Runtime: zfs.NewMemRuntime(), Logger: quiet})
	if err != nil {
		return err
	}
	nb, err := zfs.New(ctx, zfs.Config{Node: "nb", Parent: b, Runtime: zfs.NewMemRuntime(), Logger: quiet})
	if err != nil {
		return err
	}
	fmt.Printf("zfs mode: %s\n", na.Features().Mode())
	var bares, relays, plain, secure []span
	for range rounds {
		bb, rr, err := bareRuns(ds, b, 1)
		if err != nil {
			return err
		}
		p, err := fullSends(ctx, na, nb, nil)
		if err != nil {
			return err
		}
		t, err := fullSends(ctx, na, nb, ids)
		if err != nil {
			return err
		}
		fmt.Printf("Drove full sends: plain TCP %s MiB/s, TLS 1.3 (node certificates) %s MiB/s\n", mibps(rates(p)), mibps(rates(t)))
		bares, relays, plain, secure = append(bares, bb...), append(relays, rr...), append(plain, p...), append(secure, t...)
	}
	bare, tls, pl := cli.Median(rates(bares)), cli.Median(rates(secure)), cli.Median(rates(plain))
	fmt.Printf("medians of %d rounds: bare %.1f MiB/s, through%s %.1f, Drove plain %.1f, Drove TLS %.1f\n",
		rounds, bare/(1<<20), copyRelay, cli.Median(rates(relays))/(1<<20), pl/(1<<20), tls/(1<<20))
	fmt.Printf("throughput ratio Drove/bare: %.3f (target >= 0.9)\n", pl/bare)
	fmt.Printf("throughput ratio TLS/plain: %.3f (target >= 0.8); TLS/bare: %.3f\n", tls/pl, tls/bare)
	return nil
}

// runningMigrate measures the switch's downtime: a migrate a→b of the
// running instance while it writes writeMiBps to a log during the sync
// phase.
func runningMigrate(ctx context.Context, a, b, ds string, writeMiBps float64, ids map[string]*nodeid.Identity, quiet *slog.Logger) error {
	stopWriter := startWriter(filepath.Join("/"+ds, "log"), int64(writeMiBps*(1<<20)))
	rtA := zfs.NewMemRuntime("vm")
	rtA.OnStop = func(zfs.Instance) { stopWriter() }
	src, err := zfs.New(ctx, zfs.Config{Node: "na", Parent: a, Runtime: rtA, Logger: quiet})
	if err != nil {
		return err
	}
	dst, err := zfs.New(ctx, zfs.Config{Node: "nb", Parent: b, Runtime: zfs.NewMemRuntime(), Logger: quiet})
	if err != nil {
		return err
	}
	rep, res, total, err := move(ctx, src, dst, "na", "nb", events.RunRunning, ids)
	if err != nil {
		return err
	}
	fmt.Printf("migrate of the running instance writing %.1f MiB/s:\n", writeMiBps)
	for _, s := range rep.Syncs {
		fmt.Printf("  sync %d: incremental=%v final=%v %d bytes in %s\n", s.Snapshot, s.Incremental, s.Final, s.Bytes, s.Duration.Round(time.Millisecond))
	}
	fmt.Printf("whole move: %s, %d bytes, %d syncs\n", total.Round(time.Millisecond), res.Bytes, res.Syncs)
	fmt.Printf("switch downtime (stop → started on target, final delta %d KiB, checksum of both sides included): %s\n",
		rep.FinalDelta>>10, rep.Downtime.Round(time.Millisecond))
	fmt.Printf("  of which checksum of the final snapshot (both sides, in parallel): %s, %d MiB read, %d MiB unchanged since the checksum ahead\n",
		rep.ChecksumTime.Round(time.Millisecond), rep.ChecksumRead>>20, rep.ChecksumReused>>20)
	fmt.Printf("checksum ahead of the switch, while the instance ran: %s\n", rep.AheadTime.Round(time.Millisecond))
	return nil
}

// fullSends moves the stopped instance a→b, then b→a, over TLS with ids
// (nil: plain TCP), and returns each move's full send.
func fullSends(ctx context.Context, na, nb *zfs.Driver, ids map[string]*nodeid.Identity) ([]span, error) {
	var sends []span
	for _, dir := range []struct {
		src, dst *zfs.Driver
		from, to string
	}{{na, nb, "na", "nb"}, {nb, na, "nb", "na"}} {
		rep, _, _, err := move(ctx, dir.src, dir.dst, dir.from, dir.to, events.RunStopped, ids)
		if err != nil {
			return nil, err
		}
		s := rep.Syncs[0]
		sends = append(sends, spanOf(s.Bytes, s.Duration))
	}
	return sends, nil
}

// move migrates the zfs-local instance "vm" from src's node to dst's,
// each driver playing its side as two executors would: over TLS with
// their identities from ids, as executors do, or plain TCP when ids is nil.
func move(ctx context.Context, src, dst *zfs.Driver, from, to string, state events.RunState, ids map[string]*nodeid.Identity) (zfs.MoveReport, executor.Result, time.Duration, error) {
	sctx, rctx := ctx, ctx
	if ids != nil {
		sctx = transfer.WithLink(ctx, transfer.Link{Identity: ids[from], Peer: to})
		rctx = transfer.WithLink(ctx, transfer.Link{Identity: ids[to], Peer: from})
	}
	op := executor.Op{Request: "bench", Job: len(src.Reports()), Kind: events.OpInstanceMigrate, Instance: "vm",
		Storage: events.StorageZFSLocal, RunState: state, From: from, To: to, Primary: from, Attempt: 1}
	// A source that fails ends the receiver's wait, as the executor's
	// job would: else the receiver waits for it for ever.
	rctx, cancel := context.WithCancel(rctx)
	defer cancel()
	addr := make(chan string, 1)
	recvDone := make(chan error, 1)
	go func() {
		recvDone <- dst.Receive(rctx, op, func(a string) { addr <- a }, func(executor.Progress) {})
	}()
	var got string
	select {
	case got = <-addr:
	case err := <-recvDone:
		return zfs.MoveReport{}, executor.Result{}, 0, fmt.Errorf("the receiver on %s: %w", to, err)
	}
	op.AwaitReceiver = func(context.Context) (string, error) { return got, nil }
	began := time.Now()
	res, err := src.Run(sctx, op, func(executor.Progress) {})
	took := time.Since(began)
	if err != nil {
		cancel()
		<-recvDone
		return zfs.MoveReport{}, res, took, fmt.Errorf("the source on %s: %w", from, err)
	}
	err = <-recvDone
	if err != nil {
		return zfs.MoveReport{}, res, took, err
	}
	reps := src.Reports()
	return reps[len(reps)-1], res, took, nil
}

func sh(cmd string) error {
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", cmd, err, out)
	}
	return nil
}

func fill(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if _, err := io.CopyN(bw, rand.NewChaCha8([32]byte{1}), size); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// startWriter appends rate bytes per second to path until the returned
// function is called (it waits for the writer to stop).
func startWriter(path string, rate int64) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		defer f.Close()
		buf := make([]byte, 64<<10)
		src := rand.NewChaCha8([32]byte{2})
		t := time.NewTicker(time.Duration(float64(time.Second) * float64(len(buf)) / float64(rate)))
		defer t.Stop()
		for {
			select {
			case <-stop:
				_ = f.Sync()
				return
			case <-t.C:
				_, _ = src.Read(buf)
				_, _ = f.Write(buf)
			}
		}
	}()
	var once bool
	return func() {
		if !once {
			once = true
			close(stop)
		}
		<-done
	}
}
