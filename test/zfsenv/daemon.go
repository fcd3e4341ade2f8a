package zfsenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// daemonArgs are zfs-fuse's flags here: the kernel caches no attributes
// or entries of its files. Debian's /etc/zfs/zfsrc caches them for an
// hour, and zfs-fuse does not invalidate them when a receive or a
// rollback changes a mounted dataset: a file a receive grew kept its old
// size for the kernel, and reads of it stopped there, which kernel ZFS
// never does. A switch starts the instance on the target right after the
// final delta, over the data as received.
var daemonArgs = []string{"--fuse-attr-timeout", "0", "--fuse-entry-timeout", "0"}

// DaemonLog is where the zfs-fuse that zfsenv starts writes. It has died
// here on its own, mid-run, with nothing in the kernel's log (no
// segfault: an assertion's abort), so its last words are the only trace
// of why; a test that sees it die quotes them.
var DaemonLog = filepath.Join(stateDir(), "zfs-fuse.log")

// ensureDaemon makes sure a zfs-fuse with daemonArgs answers, starting
// one if none does.
func ensureDaemon() error {
	for _, c := range []string{"zfs", "zpool"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("%s not found: %w", c, err)
		}
	}
	if pid := DaemonPid(); pid > 0 && zpoolWorks() == nil && caching(pid) && noPools() {
		// Started by hand, caching: started again the tests' way while
		// nothing uses it.
		_ = syscall.Kill(pid, syscall.SIGTERM)
		waitGone()
	}
	if zpoolWorks() == nil {
		return nil
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("/dev/fuse: %w", err)
	}
	if err := startDaemon(); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := zpoolWorks()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zfs-fuse started but zpool does not answer: %w (its log: %s)", err, DaemonLog)
		}
		time.Sleep(200 * time.Millisecond) // polling a condition with a deadline
	}
}

// startDaemon starts zfs-fuse in the foreground of a session of its own,
// so that it outlives the test binary and its output lands in DaemonLog.
// A second start while one runs exits at once (another test binary may
// have raced this one), which is harmless.
func startDaemon() error {
	bin, err := exec.LookPath("zfs-fuse")
	if err != nil {
		return fmt.Errorf("zfs-fuse not found: %w", err)
	}
	clearDead()
	if err := os.MkdirAll(filepath.Dir(DaemonLog), 0o755); err != nil {
		return err
	}
	if st, err := os.Stat(DaemonLog); err == nil && st.Size() > 1<<20 {
		_ = os.Rename(DaemonLog, DaemonLog+".old") // bounded: one run's worth and the last
	}
	log, err := os.OpenFile(DaemonLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "%s %s\n", startLine, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, append([]string{"--no-daemon"}, daemonArgs...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = "/" // as a daemon would: it outlives the tests' directories
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting zfs-fuse: %w", err)
	}
	startedMu.Lock()
	startedPid = cmd.Process.Pid
	startedMu.Unlock()
	go func() { _ = cmd.Wait() }() // reaped here while this binary lives
	return nil
}

// startedPid is the zfs-fuse this process last started, 0 if none: the
// one StopDaemon may stop.
var (
	startedMu  sync.Mutex
	startedPid int
)

// StopDaemon ends a benchmark as it found the machine: it stops the
// zfs-fuse this process started, once no pool is imported: left running,
// it is a process the benchmark left behind. A daemon this process did
// not start is left alone; pools still imported are an error, as
// Release's are.
func StopDaemon() error {
	startedMu.Lock()
	pid := startedPid
	startedMu.Unlock()
	if pid == 0 || DaemonPid() != pid {
		return nil
	}
	if !noPools() {
		return fmt.Errorf("zfs-fuse (pid %d) left running: it still has pools imported", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping zfs-fuse (pid %d): %w", pid, err)
	}
	waitGone()
	if DaemonPid() != 0 {
		return fmt.Errorf("zfs-fuse (pid %d) did not exit within 10 s of SIGTERM", pid)
	}
	return nil
}

// startLine opens each start's part of DaemonLog.
const startLine = "zfsenv: zfs-fuse started at"

// clearDead, when no zfs-fuse runs, detaches the mounts a dead one
// served (their users get an error instead of waiting for ever) and
// forgets its pools: their files are a run's own, and a new daemon
// importing them from its cache would mount them over the dead mounts.
func clearDead() {
	if DaemonPid() != 0 {
		return
	}
	if out, err := os.ReadFile("/proc/mounts"); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 2 && (strings.HasPrefix(f[1], "/drove_") || f[1] == kstatMount) && strings.HasPrefix(f[2], "fuse") {
				_ = exec.Command("umount", "-l", f[1]).Run()
			}
		}
	}
	for _, c := range []string{"/var/lib/zfs/zpool.cache", "/etc/zfs/zpool.cache"} {
		_ = os.Remove(c)
	}
}

// DaemonPid is the pid of the running zfs-fuse, 0 if none, -1 if it
// cannot tell within procTimeout. A zombie (dead, its parent not yet
// told) does not count.
func DaemonPid() int { return within(procTimeout, scanDaemon, -1) }

// procTimeout bounds each look into /proc. While zfs-fuse is deadlocked,
// a process stuck exiting in one of its mounts (a FUSE flush no one
// answers) makes its /proc/<pid>/stat block every reader, pgrep and ps
// included: seen here, the watchdog hung on it and the whole run with it
// until its timeout.
const procTimeout = 3 * time.Second

// within returns f's result, or late if f has not returned within d; f
// is then left behind (blocked in the kernel, it ends when the read does).
func within[T any](d time.Duration, f func() T, late T) T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		return late
	}
}

// scanDaemon is DaemonPid's look through /proc. It reads each process's
// comm, which takes no lock an exiting process holds, and the stat (for
// its state) of zfs-fuse alone.
func scanDaemon() int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil && isDaemon(pid) {
			return pid
		}
	}
	return 0
}

// isDaemon says whether pid is a live zfs-fuse (not a zombie), by its
// comm first, so that the stat of no other process is read.
func isDaemon(pid int) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	if comm, err := os.ReadFile(filepath.Join(dir, "comm")); err != nil || string(bytes.TrimSpace(comm)) != "zfs-fuse" {
		return false
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(stat)
	shut := strings.LastIndexByte(s, ')')
	return shut >= 0 && shut+2 < len(s) && s[shut+2] != 'Z' && s[shut+2] != 'X'
}

// logDaemon appends line to DaemonLog.
func logDaemon(line string) {
	f, err := os.OpenFile(DaemonLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// waits counts the kernel functions pid's threads wait in (wchan), most
// first: "41 futex_do_wait, 2 pipe_write".
func waits(pid int) string {
	return within(procTimeout, func() string { return threadWaits(pid) }, "(its threads did not say within "+procTimeout.String()+")")
}

func threadWaits(pid int) string {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	n := map[string]int{}
	for _, t := range tasks {
		w, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, t.Name()))
		if err != nil || len(w) == 0 || string(w) == "0" {
			w = []byte("running")
		}
		n[string(w)]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return strings.Join(parts, ", ")
}

// daemonLogTail is the end of DaemonLog's last start, for a failure's
// message.
func daemonLogTail() string {
	b, err := os.ReadFile(DaemonLog)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if i := bytes.LastIndex(b, []byte(startLine)); i >= 0 {
		b = b[i:]
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// caching says whether the zfs-fuse pid runs without daemonArgs.
func caching(pid int) bool {
	cmdline := within(procTimeout, func() []byte {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return b
	}, nil)
	return len(cmdline) > 0 && !bytes.Contains(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), []byte(strings.Join(daemonArgs, " ")))
}

// noPools says whether zfs-fuse has no pool imported.
func noPools() bool {
	out, err := exec.Command("zpool", "list", "-H", "-o", "name").Output()
	return err == nil && len(bytes.TrimSpace(out)) == 0
}

// waitGone waits up to 10 s for zfs-fuse to exit.
func waitGone() {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if DaemonPid() == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
}

func zpoolWorks() error {
	out, err := exec.Command("zpool", "list", "-H").CombinedOutput()
	if err != nil {
		return fmt.Errorf("zpool list: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}
