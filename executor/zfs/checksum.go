package zfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A move's content checksum proves the target holds what the source held
// at the switch point. Reading a whole dataset on both nodes while the
// instance is stopped would put that read into the downtime (about 18 s
// for 1 GB on zfs-fuse), so a move verifies twice: once ahead of the
// switch, on the last synced snapshot while the instance still runs, and
// at the switch on the final snapshot, where a regular file whose inode,
// size, mtime and ctime are unchanged since the verified snapshot keeps
// the sum read then. Any file written in between has a new mtime and
// ctime (ctime cannot be set from user space), so every changed file is
// read again on both nodes; an unchanged file was already compared. The
// same rule is rsync's quick check, here with both sides verified first.
//
// A file's sum is the sha256 of the sha256s of its 128 KiB blocks, so a
// changed file need not be read whole: when the source knows, from the
// send streams since the verified snapshot (delta.go), which byte ranges
// ZFS sent of it, both nodes re-read only the blocks those ranges cover
// and keep the other blocks' sums, the same on both sides. A file whose
// object ZFS created since, or any file when a stream was not understood,
// is read whole. What this trusts beyond the file rule: that ZFS's
// incremental send carries every block written since its base (what the
// replication itself relies on).

// sumBlock is the unit of a file's sum.
const sumBlock = 128 << 10

// fileSum is what a checksum learned of one regular file.
type fileSum struct {
	ino, size, mtime, ctime int64
	sum                     [sha256.Size]byte
	blocks                  [][sha256.Size]byte // of each sumBlock
}

// treeSum is a checksum of one snapshot's content.
type treeSum struct {
	Sum   string
	files map[string]fileSum
	// Read and Reused count the bytes of regular files read for this sum
	// and taken from the earlier verified snapshot.
	Read, Reused int64
	read         []string // the files read (in part or whole) for it
}

// checksumSnapshot sums snapshot n of the instance's dataset. When live,
// nothing writes the dataset (its instance does not run here) and n is
// its newest snapshot, the mounted dataset is summed as it is: its
// content is n's. Otherwise it clones the snapshot (so a running
// instance's writes do not reach it), sums the mounted clone, and
// destroys the clone. before, if not nil, runs on the directory about to
// be summed (a test's hook: export_test.go). Each clone is a mount and an unmount, which
// zfs-fuse is slow at and, with other work going on, can deadlock in;
// a move needs only one. prev (nil: none) holds the file sums of an
// earlier verified snapshot of the same move.
func checksumSnapshot(ctx context.Context, parent, instance string, n int, prev map[string]fileSum, d *delta, live bool, before func(root string)) (treeSum, error) {
	ds := parent + "/" + instance
	sum := func(root string) (treeSum, error) {
		if before != nil {
			before(root)
		}
		return checksumTree(ctx, root, prev, d)
	}
	if live {
		if mp, ok := atSnapshot(ctx, ds, n); ok {
			return sum(mp)
		}
	}
	clone := fmt.Sprintf("%s/drove-sum--%s--%d", parent, instance, n)
	_ = destroy(ctx, clone) // a leftover of a crashed attempt
	// Destroyed whatever the clone's end: one made under a done ctx would
	// hold the snapshot, which no destroy of it could then drop.
	defer func() { _ = destroy(context.WithoutCancel(ctx), clone) }()
	if _, err := runToEnd(ctx, "clone", ds+"@"+snapName(n), clone); err != nil {
		return treeSum{}, err
	}
	mp, err := prop(ctx, clone, "mountpoint")
	if err != nil {
		return treeSum{}, err
	}
	return sum(mp)
}

// atSnapshot returns ds's mountpoint if ds is mounted and n is its newest
// snapshot.
func atSnapshot(ctx context.Context, ds string, n int) (string, bool) {
	ns, err := snapNumbers(ctx, ds)
	if err != nil || len(ns) == 0 || ns[len(ns)-1] != n {
		return "", false
	}
	if m, err := prop(ctx, ds, "mounted"); err != nil || m != "yes" {
		return "", false
	}
	mp, err := prop(ctx, ds, "mountpoint")
	if err != nil || !strings.HasPrefix(mp, "/") {
		return "", false
	}
	return mp, true
}

// checksumTree walks root in lexical order and hashes each entry's path,
// type and mode, a symlink's target, and a regular file's size and the
// sha256 of its content. Source and target compute it the same way;
// equal sums mean equal content, whatever the on-disk layout. A changed
// file of prev re-reads only the blocks d says were sent of it.
func checksumTree(ctx context.Context, root string, prev map[string]fileSum, dl *delta) (treeSum, error) {
	h := sha256.New()
	ts := treeSum{files: map[string]fileSum{}}
	buf := make([]byte, sumBlock)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, _ := filepath.Rel(root, path)
		if rel == ".zfs" || strings.HasPrefix(rel, ".zfs/") {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", rel, info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00", t)
		case info.Mode().IsRegular():
			fsum, ok := unchanged(prev, rel, info)
			if ok {
				ts.Reused += fsum.size
			} else {
				base, spans := partial(prev, rel, info, dl)
				var read int64
				if fsum, read, err = sumFile(path, info, buf, base, spans); err != nil {
					return err
				}
				ts.Read += read
				ts.Reused += fsum.size - read
				ts.read = append(ts.read, rel)
			}
			ts.files[rel] = fsum
			fmt.Fprintf(h, "%x\x00%d\x00", fsum.sum, fsum.size)
		}
		return nil
	})
	if err != nil {
		return treeSum{}, fmt.Errorf("zfs: checksum of %s: %w", root, err)
	}
	ts.Sum = "sha256-blocktree:" + hex.EncodeToString(h.Sum(nil))
	return ts, nil
}

// stamp is the identity of a file's version: inode, size, mtime, ctime.
func stamp(info fs.FileInfo) (fileSum, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileSum{}, false
	}
	return fileSum{ino: int64(st.Ino), size: info.Size(),
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}

// unchanged returns prev's sum of rel when the file's stamp is the same.
func unchanged(prev map[string]fileSum, rel string, info fs.FileInfo) (fileSum, bool) {
	p, ok := prev[rel]
	if !ok {
		return fileSum{}, false
	}
	s, ok := stamp(info)
	if !ok || s.ino != p.ino || s.size != p.size || s.mtime != p.mtime || s.ctime != p.ctime {
		return fileSum{}, false
	}
	return p, true
}

// partial returns prev's sum of rel as the base of a partial re-read,
// and the ranges d says were sent of it; nil when it is read whole.
func partial(prev map[string]fileSum, rel string, info fs.FileInfo, d *delta) (*fileSum, []span) {
	p, ok := prev[rel]
	s, sok := stamp(info)
	if !ok || !sok || p.ino != s.ino || d.fresh(uint64(s.ino)) {
		return nil, nil
	}
	return &p, d.touched[uint64(s.ino)]
}

// sumFile sums a file: whole when base is nil, else from base's block
// sums with the blocks that spans cover, that the size change touches or
// that are new read again. It returns how many bytes it read.
func sumFile(path string, info fs.FileInfo, buf []byte, base *fileSum, spans []span) (fileSum, int64, error) {
	fsum, _ := stamp(info)
	f, err := os.Open(path)
	if err != nil {
		return fileSum{}, 0, err
	}
	defer f.Close()
	if err := dropCache(f); err != nil {
		return fileSum{}, 0, fmt.Errorf("dropping the cached pages of %s: %w", path, err)
	}
	// Drop what the sum read too: a streaming read's pages serve nobody
	// (the next sum drops them first), and left cached they make the
	// runtime's drop before a start (executor/process) walk them all, in
	// the switch's downtime: 170-190 ms for a 1 GiB file read ahead.
	defer func() { _ = dropCache(f) }()
	if base == nil {
		fsum.size = 0
		for {
			n, err := io.ReadFull(f, buf)
			if n > 0 {
				fsum.blocks = append(fsum.blocks, sha256.Sum256(buf[:n]))
				fsum.size += int64(n)
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return fileSum{}, 0, err
			}
		}
		if len(fsum.blocks) == 0 {
			fsum.blocks = append(fsum.blocks, sha256.Sum256(nil))
		}
		fsum.sum = blocksSum(fsum.blocks)
		return fsum, fsum.size, nil
	}
	nb := max((fsum.size+sumBlock-1)/sumBlock, 1)
	fsum.blocks = make([][sha256.Size]byte, nb)
	copy(fsum.blocks, base.blocks)
	redo := make([]bool, nb)
	for i := range redo {
		redo[i] = int64(i) >= int64(len(base.blocks))
	}
	if fsum.size != base.size { // the old and the new last block
		redo[min(max(base.size-1, 0)/sumBlock, nb-1)] = true
		redo[max(fsum.size-1, 0)/sumBlock] = true
	}
	for _, s := range spans {
		for i := int64(s.off / sumBlock); i < nb && uint64(i)*sumBlock < s.end; i++ {
			// A block freed (zero now) that was zeros when verified
			// is still what was read then.
			redo[i] = redo[i] || !s.free || int64(i) >= int64(len(base.blocks)) ||
				base.blocks[i] != zeroSum(min(sumBlock, base.size-int64(i)*sumBlock))
		}
	}
	var read int64
	for i, r := range redo {
		if !r {
			continue
		}
		n, err := f.ReadAt(buf, int64(i)*sumBlock)
		if err != nil && err != io.EOF {
			return fileSum{}, 0, err
		}
		fsum.blocks[i] = sha256.Sum256(buf[:n])
		read += int64(n)
	}
	fsum.sum = blocksSum(fsum.blocks)
	return fsum, read, nil
}

// zeroSum is the sha256 of n zero bytes.
func zeroSum(n int64) [sha256.Size]byte {
	if n == sumBlock {
		return zeroBlockSum
	}
	return sha256.Sum256(make([]byte, max(n, 0)))
}

var zeroBlockSum = sha256.Sum256(make([]byte, sumBlock))

// blocksSum is a file's sum: the sha256 of its blocks' sha256s.
func blocksSum(blocks [][sha256.Size]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range blocks {
		h.Write(b[:])
	}
	var s [sha256.Size]byte
	copy(s[:], h.Sum(nil))
	return s
}
