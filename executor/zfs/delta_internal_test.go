package zfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/drovehq/drove/test/zfsenv"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// The stream reader follows a real incremental send of this machine's
// ZFS: a file's inode is its object, the ranges written since the base
// are in the delta, a file created since is fresh, an untouched one not.
func TestStreamReaderFollowsAnIncrementalSend(t *testing.T) {
	ctx := context.Background()
	pool := zfsenv.Pool(t, "delta", 256)
	ds := pool + "/d"
	if _, err := run(ctx, "create", ds); err != nil {
		t.Fatal(err)
	}
	mp, err := prop(ctx, ds, "mountpoint")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20+5000)
	rand.Read(data)
	for _, n := range []string{"disk", "still", "gone"} {
		if err := os.WriteFile(filepath.Join(mp, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := snapshot(ctx, ds+"@a"); err != nil {
		t.Fatal(err)
	}
	txg, err := prop(ctx, ds+"@a", "createtxg")
	if err != nil {
		t.Fatal(err)
	}
	since, err := strconv.ParseUint(txg, 10, 64)
	if err != nil {
		t.Fatalf("createtxg %q: %v", txg, err)
	}
	f, err := os.OpenFile(filepath.Join(mp, "disk"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{7}, 65536), 300000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Remove(filepath.Join(mp, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mp, "new"), data[:70000], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := snapshot(ctx, ds+"@b"); err != nil {
		t.Fatal(err)
	}
	d := newDelta()
	var stream bytes.Buffer
	if err := send(ctx, &stream, false, "-i", ds+"@a", ds+"@b"); err != nil {
		t.Fatal(err)
	}
	d.since = since
	sr := &streamReader{d: d, ds: ds}
	for b := stream.Bytes(); len(b) > 0; b = b[min(len(b), 4093):] { // odd pieces
		sr.Write(b[:min(len(b), 4093)])
	}
	disk, still, nw := inode(t, filepath.Join(mp, "disk")), inode(t, filepath.Join(mp, "still")), inode(t, filepath.Join(mp, "new"))
	t.Logf("stream %d bytes, since txg %d; delta %+v; inodes disk %d still %d new %d", stream.Len(), since, d, disk, still, nw)
	if !d.known {
		t.Fatal("the stream was not understood")
	}
	covered := false
	for _, s := range d.touched[disk] {
		covered = covered || (s.off <= 300000 && s.end >= 300000+65536)
	}
	if !covered || d.fresh(disk) {
		t.Errorf("disk (object %d): touched %v, fresh %v; want 300000+64KiB touched, not fresh", disk, d.touched[disk], d.fresh(disk))
	}
	// An object whose dnode is sent again gets a free from past its end:
	// nothing inside the file.
	for _, s := range d.touched[still] {
		if s.off < uint64(len(data)) {
			t.Errorf("still (object %d): touched %v inside its %d bytes", still, d.touched[still], len(data))
		}
	}
	if d.fresh(still) {
		t.Errorf("still (object %d) fresh", still)
	}
	if !d.fresh(nw) {
		t.Errorf("new (object %d) not fresh", nw)
	}
}
