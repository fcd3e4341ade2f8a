package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proc is a drove subprocess whose log (stderr) goes to a file and is
// watched for marker lines: the time each was first seen is kept.
type proc struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	markers map[string]*marker
}

type marker struct {
	seen chan struct{} // closed when first seen
	at   time.Time     // set before seen is closed
}

// startProc runs bin with args, logging to logPath, watching for markers.
func startProc(name, bin string, args []string, logPath string, markers ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	cmd.Stdout = f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), markers: map[string]*marker{}}
	for _, m := range markers {
		p.markers[m] = &marker{seen: make(chan struct{})}
	}
	go p.scan(stderr, f)
	return p, nil
}

// scan copies the log to f, stamping markers, until the process ends.
func (p *proc) scan(stderr io.Reader, f *os.File) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		now, line := time.Now(), sc.Text()
		fmt.Fprintln(f, line)
		for text, m := range p.markers {
			if m.at.IsZero() && strings.Contains(line, text) {
				m.at = now
				close(m.seen)
			}
		}
	}
	_, _ = io.Copy(f, stderr)
	_ = p.cmd.Wait() // after the pipe is read to its end
	f.Close()
	close(p.done)
}

// wait waits until the marker is seen, and returns when it was.
func (p *proc) wait(ctx context.Context, text string, timeout time.Duration) (time.Time, error) {
	m := p.markers[text]
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-m.seen:
		return m.at, nil
	case <-p.done:
		return time.Time{}, fmt.Errorf("%s exited before saying %q: %v", p.name, text, p.cmd.ProcessState)
	case <-t.C:
		return time.Time{}, fmt.Errorf("%s did not say %q within %s", p.name, text, timeout)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// seen says whether the marker was seen yet.
func (p *proc) seen(text string) bool {
	select {
	case <-p.markers[text].seen:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}
