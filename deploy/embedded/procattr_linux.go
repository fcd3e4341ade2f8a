package embedded

import "syscall"

// setParentDeathSignal makes the kernel stop the server when the process
// that started it dies, so a killed `drove dev` leaves no orphan behind.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGQUIT }
