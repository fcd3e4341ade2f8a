package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/deploy/embedded"
)

// zfsDev is `drove dev --driver zfs`: the demo cluster on real ZFS, one
// file-backed pool per node under <dir>/zfs, named drove-<node>.
type zfsDev struct {
	dir   string // <dir>/zfs
	pools []embedded.Pool
	demo  *allinone.ZFSDemo
}

// zfsDevPoolMiB is each node's pool file (sparse: it costs what is written).
const zfsDevPoolMiB = 512

// startZFSDev makes sure ZFS works, opens (imports or creates) every
// node's pool, and provisions the instances' datasets on a fresh start or
// restarts the workloads a clean stop stopped.
func startZFSDev(ctx context.Context, dir string, log *slog.Logger, stdout io.Writer) (*zfsDev, error) {
	if err := embedded.EnsureZFS(ctx); err != nil {
		return nil, err
	}
	z := &zfsDev{dir: filepath.Join(dir, "zfs")}
	z.demo = &allinone.ZFSDemo{Pools: map[string]string{}, StateDir: filepath.Join(z.dir, "state"),
		Logger: log.With("part", "workload")}
	cluster := allinone.ZFSDemoCluster()
	created := 0
	for _, n := range cluster.Nodes {
		p := embedded.Pool{Name: "drove-" + n.Name, File: filepath.Join(z.dir, "drove-"+n.Name+".img"),
			SizeMiB: zfsDevPoolMiB, Mountpoint: filepath.Join(z.dir, "mnt", n.Name)}
		fresh, err := embedded.OpenPool(ctx, p)
		if err != nil {
			z.export(context.WithoutCancel(ctx))
			return nil, err
		}
		if fresh {
			created++
		}
		z.pools = append(z.pools, p)
		z.demo.Pools[n.Name] = p.Name
	}
	switch created {
	case len(cluster.Nodes):
		fmt.Fprintf(stdout, "Creating the instances' datasets (%d instances, generated content)...\n", len(cluster.Instances))
		if err := z.demo.Provision(ctx, cluster); err != nil {
			z.export(context.WithoutCancel(ctx))
			return nil, err
		}
	case 0:
		if err := z.restartWorkloads(ctx); err != nil {
			z.export(context.WithoutCancel(ctx))
			return nil, err
		}
	default:
		z.export(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s has the pool files of some nodes only; delete the directory to start over", z.dir)
	}
	return z, nil
}

// runningFile lists the workloads a clean stop stopped, to start again.
func (z *zfsDev) runningFile() string { return filepath.Join(z.dir, "running.json") }

func (z *zfsDev) restartWorkloads(ctx context.Context) error {
	b, err := os.ReadFile(z.runningFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil // not a clean stop: the workloads still run (pid files)
	}
	if err != nil {
		return err
	}
	var running map[string][]string
	if err := json.Unmarshal(b, &running); err != nil {
		return fmt.Errorf("%s: %w", z.runningFile(), err)
	}
	// Read once: a stale list could start a workload on a replica.
	if err := os.Remove(z.runningFile()); err != nil {
		return err
	}
	return z.demo.StartWorkloads(ctx, running)
}

// stop stops the workloads, remembers where they ran, and exports the
// pools: nothing is left in the ZFS daemon, and the files in the
// directory let the next start carry on.
func (z *zfsDev) stop(ctx context.Context) error {
	running, err := z.demo.StopWorkloads(ctx)
	if err == nil {
		var b []byte
		if b, err = json.MarshalIndent(running, "", "  "); err == nil {
			err = os.WriteFile(z.runningFile(), b, 0o644)
		}
	}
	return errors.Join(err, z.export(ctx))
}

func (z *zfsDev) export(ctx context.Context) error {
	var errs []error
	for _, p := range z.pools {
		errs = append(errs, embedded.ExportPool(ctx, p.Name))
	}
	return errors.Join(errs...)
}

// describe says how to look at the data.
func (z *zfsDev) describe(w io.Writer) {
	fmt.Fprintf(w, "\nEach node is a ZFS pool backed by a file in %s:\n", z.dir)
	for _, p := range z.pools {
		node := strings.TrimPrefix(p.Name, "drove-")
		fmt.Fprintf(w, "  %-12s pool %-18s mounted at %s\n", node, p.Name, p.Mountpoint)
	}
	fmt.Fprintf(w, `Each instance is a dataset <pool>/drove/<instance>, its workload a process
rewriting the file "ring" in it. See them with:
  zfs list -r -t all %s        # one node's instances and migration snapshots
  zfs list -o name,used,mountpoint -r | grep /drove/  # every instance, on every node
and migrate one zfs-local instance on its own (RFD 34), its data synced while it writes:
  go run ./cmd/drove migrate local-1 --automatic --watch
`, z.pools[0].Name)
}

// stopAndSay stops the demo's workloads and exports its pools, and says
// where their files stay.
func (z *zfsDev) stopAndSay(stdout, stderr io.Writer) {
	if err := z.stop(context.Background()); err != nil {
		fmt.Fprintf(stderr, "drove dev: stopping the ZFS demo: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "Workloads stopped, pools exported; their files stay in %s.\n", z.dir)
}
