package proc

import "syscall"

// procAttr makes the kernel kill a process whose test binary died (killed
// at its timeout), so no service of a run is left behind, still appending
// to brokers that are gone; the brokers and Postgres go the same way.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
