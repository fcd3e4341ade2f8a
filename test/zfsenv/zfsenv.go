package zfsenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var daemonOnce sync.Once
var daemonErr error

// Require makes sure zfs works: the commands exist and the daemon answers,
// starting zfs-fuse if it is not running. It fails t with what to do
// otherwise.
func Require(t testing.TB) {
	t.Helper()
	daemonOnce.Do(func() {
		if daemonErr = ensureDaemon(); daemonErr == nil {
			sweepStale()
		}
	})
	if daemonErr != nil {
		t.Fatalf("zfsenv: ZFS is not usable: %v\n(run `make test-deps`, which installs zfs-fuse; /dev/fuse must exist)", daemonErr)
	}
}

// daemonArgs are zfs-fuse's flags here (test/tools/deps.sh starts it
// the same way): the kernel caches no attributes or entries of its files.
// Debian's /etc/zfs/zfsrc caches them for an hour, and zfs-fuse does not
// invalidate them when a receive or a rollback changes a mounted
// dataset: a file a receive grew kept its old size for the kernel, and
// reads of it stopped there, which kernel ZFS never does. A switch starts
// the instance on the target right after the final delta, over the data
// as received.
var daemonArgs = []string{"--fuse-attr-timeout", "0", "--fuse-entry-timeout", "0"}

// cachingDaemon says whether a zfs-fuse runs without daemonArgs.
func cachingDaemon() bool {
	out, err := exec.Command("pgrep", "-a", "-x", "zfs-fuse").Output()
	return err == nil && len(bytes.TrimSpace(out)) > 0 && !bytes.Contains(out, []byte(strings.Join(daemonArgs, " ")))
}

func ensureDaemon() error {
	for _, c := range []string{"zfs", "zpool"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("%s not found: %w", c, err)
		}
	}
	if zpoolWorks() == nil && cachingDaemon() && noPools() {
		// Started by hand, caching: started again the tests' way while
		// nothing uses it.
		_ = exec.Command("pkill", "-x", "zfs-fuse").Run()
		waitGone()
	}
	if zpoolWorks() == nil {
		return nil
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("/dev/fuse: %w", err)
	}
	bin, err := exec.LookPath("zfs-fuse")
	if err != nil {
		return fmt.Errorf("zfs-fuse not found: %w", err)
	}
	// zfs-fuse daemonizes itself; a second start while one runs fails
	// harmlessly (another test binary may have raced us).
	_ = exec.Command(bin, daemonArgs...).Run()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := zpoolWorks()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zfs-fuse started but zpool does not answer: %w", err)
		}
		time.Sleep(200 * time.Millisecond) // polling a condition with a deadline
	}
}

// noPools says whether zfs-fuse has no pool imported.
func noPools() bool {
	out, err := exec.Command("zpool", "list", "-H", "-o", "name").Output()
	return err == nil && len(bytes.TrimSpace(out)) == 0
}

// waitGone waits up to 10 s for zfs-fuse to exit.
func waitGone() {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if exec.Command("pgrep", "-x", "zfs-fuse").Run() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
}

func zpoolWorks() error {
	out, err := exec.Command("zpool", "list", "-H").CombinedOutput()
	if err != nil {
		return fmt.Errorf("zpool list: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Pool creates a file-backed pool of sizeMiB with a unique name
// ("drove_<random>_<tag>"), mounted under a temporary directory, and
// destroys it (and its file) when the test ends. It returns the pool's
// name, which is also its root dataset.
func Pool(t testing.TB, tag string, sizeMiB int) string {
	t.Helper()
	Require(t)
	watch(t)
	name, err := CreatePool(tag, sizeMiB)
	if err != nil {
		t.Fatalf("zfsenv: %v", err)
	}
	t.Cleanup(func() {
		if err := DestroyPool(name); err != nil {
			t.Errorf("zfsenv: %v", err)
		}
	})
	return name
}

// CreatePool is Pool without a test, for benchmarks: call DestroyPool.
func CreatePool(tag string, sizeMiB int) (string, error) {
	if err := ensureDaemon(); err != nil {
		return "", err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("drove_%s_%s", hex.EncodeToString(b[:]), tag)
	dir := filepath.Join(os.TempDir(), "drove-zfsenv")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	img := filepath.Join(dir, name+".img")
	f, err := os.Create(img)
	if err != nil {
		return "", err
	}
	err = f.Truncate(int64(sizeMiB) << 20)
	f.Close()
	if err != nil {
		return "", err
	}
	// The owner's pid beside the image lets a later sweep tell a pool a
	// killed run left behind from one another run still uses.
	if err := os.WriteFile(ownerFile(name), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.Remove(img)
		return "", err
	}
	out, err := exec.Command("zpool", "create", "-f", "-m", "/"+name, name, img).CombinedOutput()
	if err != nil {
		os.Remove(img)
		os.Remove(ownerFile(name))
		return "", fmt.Errorf("zpool create %s: %v: %s", name, err, bytes.TrimSpace(out))
	}
	return name, nil
}

func ownerFile(name string) string {
	return filepath.Join(os.TempDir(), "drove-zfsenv", name+".pid")
}

// orphaned says whether the process that created pool name is gone.
func orphaned(name string) bool {
	b, err := os.ReadFile(ownerFile(name))
	if err != nil {
		return true
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return true
	}
	// Signal 0 checks that the process exists without touching it.
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// sweepStale destroys the pools earlier test runs left behind (a killed
// run never reaches its cleanup): zfs-fuse slows down, and can stall,
// with many pools imported. Pools whose creator still runs (another test
// binary, a benchmark) are left alone.
func sweepStale() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "zpool", "list", "-H", "-o", "name").Output()
	if err != nil {
		return
	}
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "drove_") && orphaned(name) {
			_ = DestroyPool(name)
		}
	}
}

// DestroyPool destroys a pool made by CreatePool and removes its file.
func DestroyPool(name string) error {
	out, err := retryBusy("zpool", "destroy", "-f", name)
	if err != nil && strings.Contains(string(out), "no such pool") {
		err = nil
	}
	os.Remove(filepath.Join(os.TempDir(), "drove-zfsenv", name+".img"))
	os.Remove(ownerFile(name))
	_ = os.Remove("/" + name)
	return err
}

// Release destroys a pool at the end of a benchmark and adds to *err if
// the pool stays: one left imported keeps zfs-fuse busy and skews what is
// measured next. Deferred with the benchmark's named error.
func Release(pool string, err *error) {
	if derr := DestroyPool(pool); derr != nil {
		*err = errors.Join(*err, fmt.Errorf("pool %s left behind: %w", pool, derr))
	}
}

// Destroy destroys a dataset, and fails t if it cannot.
func Destroy(t testing.TB, dataset string) {
	t.Helper()
	if err := DestroyDataset(dataset); err != nil {
		t.Fatal(err)
	}
}

// DestroyDataset destroys a dataset and what it holds, waiting out
// zfs-fuse's "busy" as retryBusy does.
func DestroyDataset(dataset string) error {
	_, err := retryBusy("zfs", "destroy", "-r", dataset)
	return err
}

// retryBusy runs a zfs or zpool command until it succeeds or fails for
// another reason than "busy", for up to 90 s: zfs-fuse may call a
// just-used pool or dataset busy for seconds after a receive cut short or
// a writer's last close (seen for longer than 3 s quiet, and for over 30 s
// beside a load of 20).
func retryBusy(name string, args ...string) ([]byte, error) {
	var out []byte
	var err error
	for deadline := time.Now().Add(90 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err = exec.CommandContext(ctx, name, args...).CombinedOutput()
		cancel()
		if err == nil {
			return out, nil
		}
		err = fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
		if !strings.Contains(string(out), "busy") || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(300 * time.Millisecond) // polling zfs-fuse with a deadline
	}
}

// Run runs a command and fails t with its output if it fails.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
