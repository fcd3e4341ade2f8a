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

// Pool creates a file-backed pool of sizeMiB with a unique name
// ("drove_<random>_<tag>"), mounted under a temporary directory, and
// destroys it (and its file) when the test ends. It returns the pool's
// name, which is also its root dataset.
func Pool(t testing.TB, tag string, sizeMiB int) string {
	t.Helper()
	Require(t)
	watch(t)
	name, err := createPool(tag, sizeMiB, false)
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
// Its image is written whole before the pool is made on it. A sparse
// image has the host's file system allocate its blocks as the pool first
// writes them, so a timed copy into it measures the host's file system
// as well as ZFS, and more the fewer of its blocks earlier copies wrote:
// in three interleaved rounds of `zfs send | zfs receive` of 1 GiB, a
// pool on a sparse image took it at 98-170 MiB/s, one on a written image
// at 175-299. A test's pools stay sparse: they are many, and their small
// copies time nothing.
func CreatePool(tag string, sizeMiB int) (string, error) {
	return createPool(tag, sizeMiB, true)
}

func createPool(tag string, sizeMiB int, written bool) (string, error) {
	if err := ensureDaemon(); err != nil {
		return "", err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("drove_%s_%s", hex.EncodeToString(b[:]), tag)
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		return "", err
	}
	// The owner's pid beside the image lets a later sweep tell a pool a
	// killed run left behind from one another run still uses. It comes
	// first: an image being written is then never taken for an orphan,
	// and one whose writer was killed is swept.
	if err := writeOwner(name); err != nil {
		return "", err
	}
	img := ImageFile(name)
	if err := makeImage(img, int64(sizeMiB)<<20, written); err != nil {
		os.Remove(img)
		os.Remove(ownerFile(name))
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

// makeImage makes a pool's image of size bytes: sparse, or written whole
// with zeros and synced, so that every block of it is allocated on the
// host before the pool uses it.
func makeImage(img string, size int64, written bool) error {
	f, err := os.Create(img)
	if err != nil {
		return err
	}
	defer f.Close()
	if !written {
		return f.Truncate(size)
	}
	buf := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			return err
		}
	}
	return f.Sync()
}

// writeOwner writes this process's pid as pool name's owner, whole or
// not at all: written in place, the file was for a moment empty, and
// another test binary sweeping then read no owner, took the pool for an
// orphan and removed its image before `zpool create` could open it (seen
// in make test: "cannot open '...dt3.img': No such file or directory").
func writeOwner(name string) error {
	tmp := ownerFile(name) + ".new"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, ownerFile(name))
}

// stateDir keeps the pools' files, their owners' pids and the daemon's
// log.
func stateDir() string { return filepath.Join(os.TempDir(), "drove-zfsenv") }

// ImageFile is the file that stands for the disk of pool name, made by
// CreatePool.
func ImageFile(name string) string { return filepath.Join(stateDir(), name+".img") }

func ownerFile(name string) string { return filepath.Join(stateDir(), name+".pid") }

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
// binary, a benchmark) are left alone. It also removes the empty mount
// points such runs, and a daemon that died under them, left in /.
func sweepStale() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "zpool", "list", "-H", "-o", "name").Output()
	if err != nil {
		return
	}
	imported := map[string]bool{}
	for _, name := range strings.Fields(string(out)) {
		imported[name] = true
		if strings.HasPrefix(name, "drove_") && orphaned(name) {
			_ = DestroyPool(name)
		}
	}
	sweepImages(imported)
	dirs, _ := filepath.Glob("/drove_*")
	for _, dir := range dirs {
		if orphaned(filepath.Base(dir)) {
			removeEmptyDirs(dir)
		}
	}
}

// sweepImages removes the files of pools no longer imported whose
// creator is gone: a zfs-fuse that died under a run does not import its
// pools again, and each file is up to a few GiB. An image without an
// owner file is left alone: its creator is unknown (createPool writes the
// owner first).
func sweepImages(imported map[string]bool) {
	imgs, _ := filepath.Glob(ImageFile("drove_*"))
	for _, img := range imgs {
		name := strings.TrimSuffix(filepath.Base(img), ".img")
		if _, err := os.Stat(ownerFile(name)); err != nil || imported[name] || !orphaned(name) {
			continue
		}
		os.Remove(img)
		os.Remove(ownerFile(name))
	}
}

// removeEmptyDirs removes dir and the directories under it, deepest
// first, that hold nothing but empty directories: the mount points a
// destroyed pool's datasets leave in its own (/pool/drove under /pool),
// which kept /pool from being removed. A file anywhere, or a directory
// still mounted, keeps itself and what holds it: never anything a test
// wrote, and never a look inside a mount, which a stalled zfs-fuse would
// block.
func removeEmptyDirs(dir string) { removeEmptyDirsOf(dir, mountPoints()) }

func removeEmptyDirsOf(dir string, mounts map[string]bool) {
	if mounts[dir] {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeEmptyDirsOf(filepath.Join(dir, e.Name()), mounts)
		}
	}
	_ = os.Remove(dir) // only if empty now
}

// DestroyPool destroys a pool made by CreatePool and removes its file.
func DestroyPool(name string) error {
	out, err := retryBusy("zpool", "destroy", "-f", name)
	if err != nil && strings.Contains(string(out), "no such pool") {
		err = nil
	}
	os.Remove(ImageFile(name))
	os.Remove(ownerFile(name))
	removeEmptyDirs("/" + name)
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
