// Package proc runs the OS processes of the tests that treat Drove as
// separate programs (test/chaos, test/partition): each is started with its
// output appended to a log of its own, stopped with a signal, and read
// back for failure messages. System is what those tests share beside
// them: the Postgres and brokers they started, waiting with a deadline,
// drove verify and replay at the end, and the logs a failure keeps.
package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one process a test starts, stops and may start again.
type Proc struct {
	Name string
	Argv []string // the command and its arguments
	Dir  string   // its log goes to Dir/Name.log

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *Proc) logPath() string { return filepath.Join(p.Dir, filepath.Base(p.Name)+".log") }

// Start runs the process; its output is appended to its log.
func (p *Proc) Start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "---- started %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
}

// Stop sends sig and waits for the process to exit, killing it after
// wait.
func (p *Proc) Stop(sig syscall.Signal, wait time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Exited reports whether the process ended by itself, and how.
func (p *Proc) Exited() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return true, p.cmd.ProcessState.String()
	default:
		return false, ""
	}
}

// Log is the whole log.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.logPath())
	return string(b)
}

// Tail is the end of the log, for failure messages.
func (p *Proc) Tail() string {
	b, _ := os.ReadFile(p.logPath())
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(bytes.TrimSpace(b))
}
