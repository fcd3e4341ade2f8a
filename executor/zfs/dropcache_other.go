//go:build !linux

package zfs

import "os"

// dropCache does nothing where the ZFS is not reached through FUSE.
func dropCache(*os.File) error { return nil }
