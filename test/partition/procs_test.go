package partition

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

// proc is one process the test starts and stops; its output goes to
// dir/name.log.
type proc struct {
	name string
	argv []string // the command, with `ip netns exec NS` in front for a node
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) logPath() string { return filepath.Join(p.dir, p.name+".log") }

func (p *proc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "---- started %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	t.Cleanup(func() { p.stop() })
}

// stop sends SIGTERM, then SIGKILL after a while, and waits.
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// log is the whole log.
func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath())
	return string(b)
}

// tail is the end of the log, for failure messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.logPath())
	if len(b) > 2500 {
		b = b[len(b)-2500:]
	}
	return string(bytes.TrimSpace(b))
}
