package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/test/zfsenv"
)

// The file-backed pools of `drove dev --driver zfs`: created on the first
// start, exported on a clean stop (gone from the daemon, the file kept),
// imported again with their data on the next start; a pool of the same
// name from another file is refused.
func TestZfsEmbeddedPoolsCarryOn(t *testing.T) {
	zfsenv.Require(t)
	ctx := context.Background()
	if err := embedded.EnsureZFS(ctx); err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	dir := t.TempDir()
	p := embedded.Pool{Name: "drovetest-" + hex.EncodeToString(b[:]) + "-node-g1-1", File: filepath.Join(dir, "pool.img"),
		SizeMiB: 128, Mountpoint: filepath.Join(dir, "mnt")}
	t.Cleanup(func() {
		if err := embedded.DestroyPool(context.Background(), p); err != nil {
			t.Errorf("destroying %s: %v", p.Name, err)
		}
	})
	created, err := embedded.OpenPool(ctx, p)
	if err != nil || !created {
		t.Fatalf("first open: created %v, %v", created, err)
	}
	data := filepath.Join(p.Mountpoint, "data")
	if err := os.WriteFile(data, []byte("carried on"), 0o644); err != nil {
		t.Fatal(err)
	}
	if created, err := embedded.OpenPool(ctx, p); err != nil || created {
		t.Fatalf("open while imported: created %v, %v", created, err)
	}
	other := p
	other.File = filepath.Join(t.TempDir(), "other.img")
	if _, err := embedded.OpenPool(ctx, other); err == nil || !strings.Contains(err.Error(), "another Drove") {
		t.Fatalf("a pool of the same name from another file: %v", err)
	}
	if err := embedded.ExportPool(ctx, p.Name); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("zpool", "list", "-H", "-o", "name").Output(); strings.Contains(string(out), p.Name) {
		t.Fatalf("%s still imported after the export", p.Name)
	}
	if _, err := os.Stat(p.File); err != nil {
		t.Fatalf("the pool's file after the export: %v", err)
	}
	if created, err := embedded.OpenPool(ctx, p); err != nil || created {
		t.Fatalf("open after the export: created %v, %v", created, err)
	}
	if b, err := os.ReadFile(data); err != nil || string(b) != "carried on" {
		t.Fatalf("after the import: %q, %v", b, err)
	}
}
