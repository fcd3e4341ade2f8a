package qemu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Spec is what a VM is started with.
type Spec struct {
	Instance  string
	MemoryMiB int64
	VCPUs     int
	// Disk is the path of the instance's raw disk image (on its dataset);
	// empty means a VM without a disk.
	Disk string
	// Incoming starts the VM waiting for a migration (-incoming defer):
	// its memory and device state come from the source.
	Incoming bool
}

// vm is one QEMU process and its QMP connection.
type vm struct {
	spec    Spec
	sock    string
	pidfile string
	qmp     *QMP
	proc    *os.Process
	exited  chan struct{} // closed once the process is gone
	// started is when this executor started the VM; zero for one it
	// found running (a restarted executor's).
	started time.Time
}

// fileName turns an instance name into a file name: instance names come
// from the log, so nothing in them may climb out of Dir.
func fileName(instance string) string {
	var b strings.Builder
	for _, r := range instance {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	return s
}

func (d *Driver) paths(instance string) (sock, pidfile, logfile string) {
	base := filepath.Join(d.cfg.Dir, fileName(instance))
	return base + ".qmp", base + ".pid", base + ".log"
}

// args is QEMU's command line for spec: TCG or KVM as configured, no
// default devices, no display, QMP on a unix socket, the disk on
// DiskBus. The disk uses QEMU's default cache (writeback): a write the
// guest completed is in the host file (on the dataset) and its flushes
// are fdatasyncs; pausing the VM flushes what QEMU still holds.
func (d *Driver) args(spec Spec, sock, pidfile string) []string {
	mem := spec.MemoryMiB
	if mem <= 0 {
		mem = d.cfg.DefaultMemoryMiB
	}
	cpus := spec.VCPUs
	if cpus <= 0 {
		cpus = 1
	}
	a := []string{
		"-name", "guest=" + fileName(spec.Instance),
		"-accel", d.cfg.Accel, "-machine", d.cfg.Machine,
		"-m", strconv.FormatInt(mem, 10), "-smp", strconv.Itoa(cpus),
		"-nodefaults", "-no-user-config", "-display", "none",
		// The RTC on the host's clock, as QEMU 7.2 has it by default, said
		// here because the writing guest's downtime depends on it: the
		// HPET stands still in a pause and this clock does not
		// (guestclock.go). A guest OS sees the wall clock go on too.
		"-rtc", "base=utc,clock=host",
		"-qmp", "unix:" + sock + ",server=on,wait=off",
		"-pidfile", pidfile,
	}
	if spec.Disk != "" {
		a = append(a, "-drive", "file="+spec.Disk+",format=raw,if="+d.cfg.DiskBus+",cache=writeback")
	}
	if spec.Incoming {
		a = append(a, "-incoming", "defer")
	}
	return append(a, d.cfg.ExtraArgs...)
}

// startVM runs QEMU for spec and connects to its QMP socket. The process
// is not tied to ctx: a VM outlives the call (and the executor) that
// started it.
func (d *Driver) startVM(ctx context.Context, spec Spec) (*vm, error) {
	sock, pidfile, logfile := d.paths(spec.Instance)
	os.Remove(sock)
	os.Remove(pidfile)
	lf, err := os.OpenFile(logfile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("qemu: log file: %w", err)
	}
	defer lf.Close()
	cmd := exec.Command(d.cfg.Binary, d.args(spec, sock, pidfile)...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Its own process group: a signal meant for the executor's terminal
	// must not take the VMs down with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemu: start %s: %w", d.cfg.Binary, err)
	}
	v := &vm{spec: spec, sock: sock, pidfile: pidfile, proc: cmd.Process, exited: make(chan struct{}), started: time.Now()}
	go func() {
		cmd.Wait()
		close(v.exited)
	}()
	dctx, cancel := context.WithTimeout(ctx, d.cfg.QMPTimeout)
	defer cancel()
	type dialed struct {
		q   *QMP
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		q, err := DialQMP(dctx, sock)
		ch <- dialed{q, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			v.kill()
			return nil, fmt.Errorf("%w (see %s)", r.err, logfile)
		}
		v.qmp = r.q
	case <-v.exited:
		cancel()
		if r := <-ch; r.q != nil {
			r.q.Close()
		}
		return nil, fmt.Errorf("%w: at start: %s", ErrExited, tail(logfile))
	}
	return v, nil
}

// attach reconnects to the VM of instance left running by an earlier
// executor process: its pidfile names a live process and its socket
// answers. It returns nil when there is no such VM.
func (d *Driver) attach(ctx context.Context, instance string) *vm {
	sock, pidfile, _ := d.paths(instance)
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	q, err := DialQMP(dctx, sock)
	if err != nil {
		return nil
	}
	proc, _ := os.FindProcess(pid)
	v := &vm{spec: Spec{Instance: instance}, sock: sock, pidfile: pidfile, qmp: q, proc: proc, exited: make(chan struct{})}
	// Not our child: it is gone when its QMP socket closes and the pid
	// stops answering.
	go func() {
		<-q.Done()
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		close(v.exited)
	}()
	return v
}

// alive reports whether the QEMU process still runs.
func (v *vm) alive() bool {
	select {
	case <-v.exited:
		return false
	default:
		return true
	}
}

// runState asks QEMU for its run state (running, paused, inmigrate,
// postmigrate, ...).
func (v *vm) runState(ctx context.Context) (string, error) {
	var st struct {
		Status string `json:"status"`
	}
	if err := v.qmp.Execute(ctx, "query-status", nil, &st); err != nil {
		return "", err
	}
	return st.Status, nil
}

// quit asks QEMU to exit and waits for it, killing it after grace.
func (v *vm) quit(grace time.Duration) {
	if v.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		v.qmp.Execute(ctx, "quit", nil, nil) // the connection may close before the answer
		cancel()
		select {
		case <-v.exited:
		case <-time.After(grace):
		}
	}
	v.kill()
}

// kill ends the process at once and waits until it is gone.
func (v *vm) kill() {
	if v.alive() {
		v.proc.Signal(syscall.SIGKILL)
		<-v.exited
	}
	if v.qmp != nil {
		v.qmp.Close()
	}
	os.Remove(v.sock)
	os.Remove(v.pidfile)
}

// tail is the end of a VM's log, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return strings.TrimSpace(string(b))
}
