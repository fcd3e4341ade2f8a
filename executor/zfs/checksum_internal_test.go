package zfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The switch's checksum reuses the sum of a file verified ahead of it only
// while the file's inode, size, mtime and ctime are unchanged; anything
// else is read again, and the tree's sum equals a sum read in full.
func TestChecksumTreeReusesOnlyUnchangedFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("disk.img", "aaaaaaaaaa")
	write("log", "one")
	write("still", "unchanged content")
	if err := os.Symlink("still", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	ahead, err := checksumTree(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ahead.Reused != 0 || ahead.Read != 10+3+17 {
		t.Fatalf("first sum: read %d, reused %d; want everything read", ahead.Read, ahead.Reused)
	}

	// Between the two snapshots: the log grows; the disk image is
	// rewritten in place with its size and mtime put back, as a careless
	// tool might; "still" is untouched.
	img := filepath.Join(root, "disk.img")
	st, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a ctime the kernel can tell apart
	write("disk.img", "bbbbbbbbbb")
	if err := os.Chtimes(img, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	write("log", "one two")

	switchSum, err := checksumTree(ctx, root, ahead.files)
	if err != nil {
		t.Fatal(err)
	}
	full, err := checksumTree(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if switchSum.Sum != full.Sum {
		t.Errorf("sum with reuse %s, read in full %s", switchSum.Sum, full.Sum)
	}
	if switchSum.Sum == ahead.Sum {
		t.Errorf("the sum did not change with the content")
	}
	if switchSum.Reused != 17 || switchSum.Read != 10+7 {
		t.Errorf("read %d, reused %d; want the image and the log read (17), only \"still\" reused (17)", switchSum.Read, switchSum.Reused)
	}

	// A file replaced by another of the same size and times (a new inode)
	// is read too.
	tmp := filepath.Join(root, "still.new")
	if err := os.WriteFile(tmp, []byte("UNCHANGED CONTENT"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Stat(filepath.Join(root, "still"))
	_ = os.Chtimes(tmp, st.ModTime(), st.ModTime())
	if err := os.Rename(tmp, filepath.Join(root, "still")); err != nil {
		t.Fatal(err)
	}
	again, err := checksumTree(ctx, root, switchSum.files)
	if err != nil {
		t.Fatal(err)
	}
	if again.Reused != 10+7 || again.Read != 17 {
		t.Errorf("after replacing \"still\": read %d, reused %d; want it read (17)", again.Read, again.Reused)
	}
	if again.Sum == switchSum.Sum {
		t.Errorf("a replaced file's new content did not change the sum")
	}
}
