package apachekafka

import "syscall"

// procAttr makes the kernel kill a broker whose starter died (a test
// binary killed at its timeout, a `drove dev` killed), so none is left
// holding its ports; its own process group keeps a terminal's ^C, meant
// for the starter, from reaching it before the starter stops it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
