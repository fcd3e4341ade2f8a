package testenv

import "syscall"

// sysProcAttr runs a PostgreSQL program as cred (nil: as ourselves) and
// has the kernel send it SIGQUIT (immediate shutdown) when the test process
// dies without stopping it. Go sets the death signal after switching
// credentials, so the kernel does not clear it; it fires when the OS thread
// that started the child exits, which the Go runtime does only for a
// goroutine that exits while locked to its thread, which testenv never does.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}
