package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoZFS means the zfs and zpool commands are missing or no ZFS daemon
// answers.
var ErrNoZFS = errors.New("no usable ZFS")

// zfsTimeout bounds every zfs and zpool command: zfs-fuse can stall, and
// a stalled command must fail with a message rather than hang.
const zfsTimeout = 2 * time.Minute

// EnsureZFS checks that zfs and zpool exist and answer, starting the
// zfs-fuse daemon (it daemonizes itself) when nothing answers. The error
// wraps ErrNoZFS and says how to fix it.
func EnsureZFS(ctx context.Context) error {
	for _, c := range []string{"zfs", "zpool"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("%w: %s not found; install zfs-fuse (`make test-deps` does) or ZFS on Linux", ErrNoZFS, c)
		}
	}
	if zpoolAnswers(ctx) == nil {
		return nil
	}
	bin, err := exec.LookPath("zfs-fuse")
	if err != nil {
		return fmt.Errorf("%w: zpool does not answer and zfs-fuse is not installed", ErrNoZFS)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("%w: zfs-fuse needs /dev/fuse: %v", ErrNoZFS, err)
	}
	// A second start while another one runs fails harmlessly.
	_ = exec.CommandContext(ctx, bin).Run()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := zpoolAnswers(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%w: zfs-fuse started but zpool does not answer: %v", ErrNoZFS, err)
		}
		time.Sleep(200 * time.Millisecond) // polling the daemon's start, with a deadline
	}
}

func zpoolAnswers(ctx context.Context) error {
	_, err := poolNames(ctx)
	return err
}

// poolNames lists the imported pools. zfs-fuse's zpool aborts now and then
// ("internal error: Invalid argument", SIGABRT) when another process
// creates, imports or destroys a pool while it lists them; a list changes
// nothing, so one that died that way is run again, up to listTries times.
func poolNames(ctx context.Context) ([]string, error) {
	for try := 1; ; try++ {
		out, err := zfsRun(ctx, "zpool", "list", "-H", "-o", "name")
		if err == nil {
			return strings.Fields(out), nil
		}
		if !aborted(err) || try == listTries {
			return nil, err
		}
	}
}

const listTries = 3

// aborted says whether a command failed by dying of SIGABRT.
func aborted(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGABRT
}

// zfsRun runs a zfs or zpool command with zfsTimeout and returns its
// standard output; the error carries its standard error.
func zfsRun(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, zfsTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	c := exec.CommandContext(ctx, name, args...)
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// Pool is a ZFS pool backed by one sparse file, for a machine without
// spare disks: the demo gives each simulated node one.
type Pool struct {
	Name       string // the pool's name, also its root dataset
	File       string // the backing file
	SizeMiB    int64  // the file's size when created
	Mountpoint string // where the root dataset is mounted
}

// OpenPool makes p usable: it is left as it is when imported from its
// file, imported when its file exists, created (file and pool) when not.
// created says which. A pool of the same name imported from another
// file is an error: it belongs to someone else.
func OpenPool(ctx context.Context, p Pool) (created bool, err error) {
	if p.Name == "" || p.File == "" || p.Mountpoint == "" {
		return false, fmt.Errorf("pool %+v: name, file and mountpoint are required", p)
	}
	file, err := filepath.Abs(p.File)
	if err != nil {
		return false, err
	}
	if vdev, imported, err := poolFile(ctx, p.Name); err != nil {
		return false, err
	} else if imported {
		if vdev != file {
			return false, fmt.Errorf("pool %s is imported from %s, not %s: another Drove uses it (zpool export %s, or use other node names)", p.Name, vdev, file, p.Name)
		}
		return false, nil
	}
	if _, err := os.Stat(file); err == nil {
		if _, err := zfsRun(ctx, "zpool", "import", "-d", filepath.Dir(file), p.Name); err != nil {
			return false, fmt.Errorf("importing pool %s from %s: %w", p.Name, file, err)
		}
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return false, err
	}
	f, err := os.Create(file)
	if err != nil {
		return false, err
	}
	err = f.Truncate(p.SizeMiB << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_, err = zfsRun(ctx, "zpool", "create", "-f", "-m", p.Mountpoint, p.Name, file)
	}
	if err != nil {
		os.Remove(file)
		return false, fmt.Errorf("creating pool %s: %w", p.Name, err)
	}
	return true, nil
}

// poolFile returns the file an imported pool lives on, and whether a
// pool of that name is imported at all.
func poolFile(ctx context.Context, name string) (string, bool, error) {
	names, err := poolNames(ctx)
	if err != nil {
		return "", false, err
	}
	if !contains(names, name) {
		return "", false, nil
	}
	st, err := zfsRun(ctx, "zpool", "status", name)
	if err != nil {
		return "", true, err
	}
	// The config lists the pool's name, then its vdevs: one absolute
	// path for a single-file pool.
	for _, line := range strings.Split(st, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "/") {
			return f[0], true, nil
		}
	}
	return "", true, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ExportPool unmounts the pool and detaches it from the daemon; its file
// stays, and OpenPool imports it again.
func ExportPool(ctx context.Context, name string) error {
	return retryBusy(ctx, func() error {
		_, err := zfsRun(ctx, "zpool", "export", "-f", name)
		return err
	})
}

// DestroyPool destroys the pool and removes its file.
func DestroyPool(ctx context.Context, p Pool) error {
	err := retryBusy(ctx, func() error {
		if _, imported, err := poolFile(ctx, p.Name); err != nil || !imported {
			return err
		}
		_, err := zfsRun(ctx, "zpool", "destroy", "-f", p.Name)
		return err
	})
	if err != nil {
		return err
	}
	if err := os.Remove(p.File); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// retryBusy retries f for a few seconds: zfs-fuse calls a pool busy for
// a moment after its last mount was used.
func retryBusy(ctx context.Context, f func() error) error {
	var err error
	for i := 0; i < 10; i++ {
		if err = f(); err == nil || !strings.Contains(err.Error(), "busy") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(300 * time.Millisecond): // the daemon lets go of the pool
		}
	}
	return err
}
