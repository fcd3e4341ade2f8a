package zfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCache drops f's clean pages from the kernel's page cache, so that
// the next read asks the file system. zfs-fuse does not invalidate the
// kernel's cache when a `zfs receive` or rollback changes a mounted
// dataset under it: a file read before the receive would read as it was.
func dropCache(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
