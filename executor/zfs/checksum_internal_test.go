package zfs

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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
	ahead, err := checksumTree(ctx, root, nil, nil)
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

	switchSum, err := checksumTree(ctx, root, ahead.files, nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := checksumTree(ctx, root, nil, nil)
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
	again, err := checksumTree(ctx, root, switchSum.files, nil)
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

// With a delta, a changed file re-reads only the blocks the delta names,
// the ones its growth touches and, for an object created since, all of
// it; the sum is the one read in full.
func TestChecksumTreeReReadsOnlyTheDeltasBlocks(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	img := filepath.Join(root, "disk.img")
	data := make([]byte, 10*sumBlock+100)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(img, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ahead, err := checksumTree(ctx, root, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	time.Sleep(10 * time.Millisecond) // a ctime the kernel can tell apart
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// a write across blocks 3 and 4, and growth into block 11
	if _, err := f.WriteAt([]byte("written across a block boundary"), 4*sumBlock-10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("grown"), 11*sumBlock+1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	full, err := checksumTree(ctx, root, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDelta()
	d.touched[ino] = []span{{4*sumBlock - 10, 4*sumBlock + 21, false}, {11*sumBlock + 1, 11*sumBlock + 6, false}}
	got, err := checksumTree(ctx, root, ahead.files, d)
	if err != nil {
		t.Fatal(err)
	}
	// blocks 3 and 4 (the write), 10 (the old last, partial) and 11 (new)
	if want := int64(3*sumBlock + 6); got.Sum != full.Sum || got.Read != want {
		t.Errorf("with the delta: %s read %d; in full %s; want the same sum, %d read", got.Sum, got.Read, full.Sum, want)
	}
	// A range ZFS freed is read again where it was not zeros.
	d.touched[ino] = append(d.touched[ino], span{5 * sumBlock, 6 * sumBlock, true})
	if freed, err := checksumTree(ctx, root, ahead.files, d); err != nil || freed.Read != got.Read+sumBlock {
		t.Errorf("a freed block that held data: read %d %v, want %d", freed.Read, err, got.Read+sumBlock)
	}
	d.touched[ino] = d.touched[ino][:2]
	// The delta is trusted: a block it leaves out keeps its old sum.
	d.touched[ino] = d.touched[ino][1:]
	if miss, err := checksumTree(ctx, root, ahead.files, d); err != nil || miss.Sum == full.Sum {
		t.Errorf("a delta without the write: %s %v; the old block's sum should stay", miss.Sum, err)
	}
	// An object created since is read whole.
	d.created[ino] = true
	if whole, err := checksumTree(ctx, root, ahead.files, d); err != nil || whole.Sum != full.Sum || whole.Read != full.Read {
		t.Errorf("a new object: %s read %d %v; want it read whole (%d)", whole.Sum, whole.Read, err, full.Read)
	}
}

// A mismatch names the files and blocks that differ, and the files one
// side read again while the other took its earlier sums.
func TestSumDiffNamesTheBlocks(t *testing.T) {
	ctx := context.Background()
	a, b := t.TempDir(), t.TempDir()
	data := make([]byte, 3*sumBlock)
	for _, d := range []string{a, b} {
		if err := os.WriteFile(filepath.Join(d, "disk"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "log"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data[2*sumBlock+5] = 1
	if err := os.WriteFile(filepath.Join(b, "disk"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sa, err := checksumTree(ctx, a, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := checksumTree(ctx, b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb.read = sb.read[:1] // as if "log" was taken from earlier sums there
	got := sa.sumDiff(sb.readSums())
	for _, want := range []string{"disk (blocks 2)", "log (read again here"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not say %q", got, want)
		}
	}
}

// A checksum leaves none of what it read in the page cache: the
// process runtime drops a dataset's cached pages before each start, and
// that drop walks every page left there, inside a switch's downtime.
func TestChecksumLeavesNothingCached(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "disk.img")
	data := make([]byte, 8<<20)
	rand.Read(data)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	syncFile(t, path) // written-back pages are clean, so they can be dropped
	if _, err := checksumTree(context.Background(), root, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := cachedPages(t, path); n > 0 {
		t.Fatalf("%d pages of %s cached after its checksum, want none", n, path)
	}
}

func syncFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// cachedPages counts path's pages in the page cache (mincore).
func cachedPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)),
		uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
