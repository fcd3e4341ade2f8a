package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux this runs on.
const clockTicks = 100

// cpuTimes is the CPU seconds of the processes a fold runs on: this one
// (the projector, and kfake when it is the broker), Postgres and the
// Apache Kafka broker's JVM. On a shared machine they say whether the
// fold waited for the CPU or for one of them.
type cpuTimes struct{ self, postgres, broker float64 }

func (a cpuTimes) sub(b cpuTimes) cpuTimes {
	return cpuTimes{a.self - b.self, a.postgres - b.postgres, a.broker - b.broker}
}

// readCPU reads the CPU seconds so far of this process, of the postmaster
// of pgDataDir and its live children (the backends: one that exited took
// its CPU with it, so this is read while the fold's connections are
// open), and of the processes whose command line names brokerDir.
func readCPU(pgDataDir, brokerDir string) cpuTimes {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	c := cpuTimes{self: tv(ru.Utime) + tv(ru.Stime)}
	postmaster := -1
	if b, err := os.ReadFile(filepath.Join(pgDataDir, "postmaster.pid")); err == nil {
		postmaster, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		ppid, secs, ok := procStat(p)
		if !ok {
			continue
		}
		if pid == postmaster || ppid == postmaster {
			c.postgres += secs
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join(p, "cmdline")); err == nil && brokerDir != "" &&
			bytes.Contains(cmdline, []byte(brokerDir)) {
			c.broker += secs
		}
	}
	return c
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// procStat reads a process's parent and its user+system CPU seconds.
func procStat(dir string) (ppid int, secs float64, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, 0, false
	}
	// The command, in parentheses, may hold spaces; the fields follow it:
	// f[0] is the state (field 3), ppid field 4, utime 14, stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	ut, err2 := strconv.ParseFloat(f[11], 64)
	st, err3 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return ppid, (ut + st) / clockTicks, true
}
