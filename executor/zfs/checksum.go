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
)

// checksumSnapshot is the sha256 of a snapshot's content: it clones the
// snapshot (so a running instance's writes do not reach it), walks the
// mounted clone in lexical order hashing each entry's path, type, mode and
// content (symlinks by target), and destroys the clone. Source and target
// compute it the same way on the snapshot of the switch point; equal sums
// mean equal content, whatever the on-disk layout.
func checksumSnapshot(ctx context.Context, parent, instance string, n int) (string, error) {
	ds := parent + "/" + instance
	clone := fmt.Sprintf("%s/drove-sum--%s--%d", parent, instance, n)
	_ = destroy(ctx, clone) // a leftover of a crashed attempt
	if _, err := run(ctx, "clone", ds+"@"+snapName(n), clone); err != nil {
		return "", err
	}
	defer func() { _ = destroy(context.WithoutCancel(ctx), clone) }()
	mp, err := prop(ctx, clone, "mountpoint")
	if err != nil {
		return "", err
	}
	return checksumTree(ctx, mp)
}

func checksumTree(ctx context.Context, root string) (string, error) {
	h := sha256.New()
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
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			n, err := io.CopyBuffer(h, f, buf)
			f.Close()
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d\x00", n)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("zfs: checksum of %s: %w", root, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
