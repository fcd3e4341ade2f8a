package chaos

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

// proc is one drove process the test starts, kills and starts again.
type proc struct {
	name string
	bin  string
	args []string
	dir  string // its log goes to dir/name.log

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) logPath() string { return filepath.Join(p.dir, filepath.Base(p.name)+".log") }

// start runs the process; its output is appended to its log.
func (p *proc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "---- started %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
}

// stop sends sig and waits for the process to exit.
func (p *proc) stop(sig syscall.Signal) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// exited reports whether the process ended by itself, and how.
func (p *proc) exited() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return true, p.cmd.ProcessState.String()
	default:
		return false, ""
	}
}

// tail is the end of the process's log, for failure messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.logPath())
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(bytes.TrimSpace(b))
}
