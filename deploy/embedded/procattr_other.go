//go:build !linux

package embedded

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
