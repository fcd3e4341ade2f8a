package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// selfCPU is this process's user and system CPU so far, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// clockTicks is USER_HZ, which Linux fixes at 100 on every architecture Go
// runs on.
const clockTicks = 100

// postgresCPU is the CPU so far of the postmaster whose data directory is
// dir and of its live children (the backends), in seconds; 0 off Linux.
// A backend that has exited takes its CPU with it, which is why it is read
// while the fold's connections are still open.
func postgresCPU(dir string) float64 {
	if dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		ppid, cpu, ok := procStat(e.Name())
		if ok && (e.Name() == strconv.Itoa(pid) || ppid == pid) {
			ticks += cpu
		}
	}
	return float64(ticks) / clockTicks
}

// procStat reads a process's parent and its user+system ticks.
func procStat(pid string) (ppid int, ticks int64, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold spaces; fields follow it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, false
	}
	// f[0] is the state (field 3); ppid is field 4, utime 14, stime 15.
	ppid, err1 := strconv.Atoi(f[1])
	ut, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return ppid, ut + st, true
}
