//go:build unix && !linux

package testenv

import "syscall"

// sysProcAttr runs a PostgreSQL program as cred (nil: as ourselves). Only
// Linux can tie the child's life to ours; elsewhere a killed test run leaves
// its postgres running until the machine restarts.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
