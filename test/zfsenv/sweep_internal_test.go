package zfsenv

import (
	"os"
	"path/filepath"
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
