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
// ctime (ctime cannot be set from user space), so every changed byte is
// read again on both nodes; an unchanged file was already compared. The
// same rule is rsync's quick check, here with both sides verified first.

// fileSum is what a checksum learned of one regular file.
type fileSum struct {
	ino, size, mtime, ctime int64
	sum                     [sha256.Size]byte
}

// treeSum is a checksum of one snapshot's content.
type treeSum struct {
	Sum   string
	files map[string]fileSum
	// Read and Reused count the bytes of regular files read for this sum
	// and taken from the earlier verified snapshot.
	Read, Reused int64
}

// checksumSnapshot sums snapshot n of the instance's dataset. When live,
// nothing writes the dataset (its instance does not run here) and n is
// its newest snapshot, the mounted dataset is summed as it is: its
// content is n's. Otherwise it clones the snapshot (so a running
// instance's writes do not reach it), sums the mounted clone, and
// destroys the clone. Each clone is a mount and an unmount, which
// zfs-fuse is slow at and, with other work going on, can deadlock in;
// a move needs only one. prev (nil: none) holds the file sums of an
// earlier verified snapshot of the same move.
func checksumSnapshot(ctx context.Context, parent, instance string, n int, prev map[string]fileSum, live bool) (treeSum, error) {
	ds := parent + "/" + instance
	if live {
		if mp, ok := atSnapshot(ctx, ds, n); ok {
			return checksumTree(ctx, mp, prev)
		}
	}
	clone := fmt.Sprintf("%s/drove-sum--%s--%d", parent, instance, n)
	_ = destroy(ctx, clone) // a leftover of a crashed attempt
	if _, err := run(ctx, "clone", ds+"@"+snapName(n), clone); err != nil {
		return treeSum{}, err
	}
	defer func() { _ = destroy(context.WithoutCancel(ctx), clone) }()
	mp, err := prop(ctx, clone, "mountpoint")
	if err != nil {
		return treeSum{}, err
	}
	return checksumTree(ctx, mp, prev)
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
// equal sums mean equal content, whatever the on-disk layout.
func checksumTree(ctx context.Context, root string, prev map[string]fileSum) (treeSum, error) {
	h := sha256.New()
	ts := treeSum{files: map[string]fileSum{}}
	buf := make([]byte, 1<<20)
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
				if fsum, err = sumFile(path, info, buf); err != nil {
					return err
				}
				ts.Read += fsum.size
			}
			ts.files[rel] = fsum
			fmt.Fprintf(h, "%x\x00%d\x00", fsum.sum, fsum.size)
		}
		return nil
	})
	if err != nil {
		return treeSum{}, fmt.Errorf("zfs: checksum of %s: %w", root, err)
	}
	ts.Sum = "sha256-tree:" + hex.EncodeToString(h.Sum(nil))
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

func sumFile(path string, info fs.FileInfo, buf []byte) (fileSum, error) {
	fsum, _ := stamp(info)
	f, err := os.Open(path)
	if err != nil {
		return fileSum{}, err
	}
	defer f.Close()
	if err := dropCache(f); err != nil {
		return fileSum{}, fmt.Errorf("dropping the cached pages of %s: %w", path, err)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, buf)
	if err != nil {
		return fileSum{}, err
	}
	fsum.size = n
	copy(fsum.sum[:], h.Sum(nil))
	return fsum, nil
}
