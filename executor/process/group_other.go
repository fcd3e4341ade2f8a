//go:build !linux

package process

import "syscall"

// groupAlive reports whether a process of group pgid still exists.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
