// Package cpu reads the CPU seconds the benchmarks divide their work by:
// this process's, and other processes' from /proc (Postgres's server, a
// broker's JVM). On a shared machine they say whether a phase waited for
// the CPU or for one of its parts. Off Linux the readings are 0.
package cpu

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

// Self is this process's user and system CPU so far, in seconds.
func Self() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return seconds(ru.Utime) + seconds(ru.Stime)
}

func seconds(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// Postmaster is the pid of the Postgres server whose data directory is
// dataDir, -1 if none runs there.
func Postmaster(dataDir string) int {
	if dataDir == "" {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return -1
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return -1
	}
	return pid
}

// Postgres is the CPU so far, in seconds, of the server whose data
// directory is dataDir and of its live children (the backends). A backend
// that has exited takes its CPU with it, so this is read while the
// measured connections are still open.
func Postgres(dataDir string) float64 {
	postmaster := Postmaster(dataDir)
	if postmaster < 0 {
		return 0
	}
	var secs float64
	for _, p := range Procs() {
		if ppid, s, ok := Stat(p); ok && (p == strconv.Itoa(postmaster) || ppid == postmaster) {
			secs += s
		}
	}
	return secs
}

// Procs are the pids /proc lists now.
func Procs() []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// Stat reads process pid's parent and its user+system CPU seconds.
func Stat(pid string) (ppid int, secs float64, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
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

// Matching is the CPU so far, in seconds, of the processes whose command
// line holds s (a broker's JVM, by its data directory); 0 for s empty.
func Matching(s string) float64 {
	if s == "" {
		return 0
	}
	var secs float64
	for _, p := range Procs() {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p, "cmdline"))
		if bytes.Contains(cmdline, []byte(s)) {
			if _, c, ok := Stat(p); ok {
				secs += c
			}
		}
	}
	return secs
}

// Per100k is secs per 100,000 of n things (events, rows): the unit the
// benchmarks report CPU in.
func Per100k(secs float64, n int) float64 { return secs * 100_000 / float64(n) }

// Machine is the CPU seconds every CPU of the machine has spent so far,
// busy and in all (the first line of /proc/stat: busy is all but idle
// and iowait); 0, 0 off Linux.
func Machine() (busy, all float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	// user nice system idle iowait irq softirq steal, then guest and
	// guest_nice, which user and nice already count.
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0
		}
		all += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy / clockTicks, all / clockTicks
}
