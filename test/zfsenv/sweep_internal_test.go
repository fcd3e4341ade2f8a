package zfsenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A destroyed pool leaves the mount points of its datasets inside its
// own; removeEmptyDirs takes the empty ones and keeps any that hold a file.
func TestRemoveEmptyDirsKeepsOnlyWhatHoldsAFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "drove_run_node-1")
	for _, d := range []string{"drove/a", "drove/b/c", "kept/deep"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(root, "kept", "deep", "disk")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	removeEmptyDirs(root)
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the file was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "drove")); !os.IsNotExist(err) {
		t.Fatalf("the empty tree stayed: %v", err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	removeEmptyDirs(root)
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("the emptied tree stayed: %v", err)
	}
}

// A pool's file goes once its pool is not imported and its creator is
// gone; a file whose creator runs, whose pool is imported, or that has
// no owner file (its creator unknown) stays.
func TestSweepImagesTakesOnlyOrphans(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead, alive := done.Process.Pid, os.Getpid()
	images := map[string]int{"drove_a_gone": dead, "drove_b_running": alive, "drove_c_imported": dead, "drove_d_new": 0}
	for name, pid := range images {
		if err := os.WriteFile(ImageFile(name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if pid != 0 {
			if err := os.WriteFile(ownerFile(name), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sweepImages(map[string]bool{"drove_c_imported": true})
	for name := range images {
		_, err := os.Stat(ImageFile(name))
		if gone := os.IsNotExist(err); gone != (name == "drove_a_gone") {
			t.Errorf("%s: removed %v, err %v", name, gone, err)
		}
	}
	if _, err := os.Stat(ownerFile("drove_a_gone")); !os.IsNotExist(err) {
		t.Errorf("the orphan's owner file stayed: %v", err)
	}
}

// The owner file appears whole, by a rename, never empty: a sweep that
// read it empty took the pool for an orphan and removed its image.
func TestWriteOwnerLeavesTheWholePidOnly(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeOwner("drove_e_mine"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ownerFile("drove_e_mine"))
	if err != nil || string(b) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("owner file %q, %v; want this process's pid", b, err)
	}
	if orphaned("drove_e_mine") {
		t.Fatal("a pool this process owns reads as an orphan")
	}
	left, _ := filepath.Glob(filepath.Join(stateDir(), "*"))
	if len(left) != 1 {
		t.Fatalf("files left beside the owner file: %v", left)
	}
}

// A bench's image is written whole, every block allocated on the host;
// a test's is sparse.
func TestMakeImageWrittenOrSparse(t *testing.T) {
	dir := t.TempDir()
	const size = 3<<20 + 512
	for _, written := range []bool{true, false} {
		img := filepath.Join(dir, strconv.FormatBool(written)+".img")
		if err := makeImage(img, size, written); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(img)
		if err != nil {
			t.Fatal(err)
		}
		allocated := fi.Sys().(*syscall.Stat_t).Blocks * 512
		if fi.Size() != size || (allocated >= size) != written {
			t.Errorf("written %v: %d bytes, %d allocated", written, fi.Size(), allocated)
		}
	}
}
