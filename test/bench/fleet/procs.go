package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a drove subprocess: its stderr (the service's log) goes to a
// file and is watched for the line that says it is ready.
type proc struct {
	name  string
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan struct{}
	err   error // Wait's, once done is closed
	// metrics is the URL of its /metrics, when it serves one.
	metrics string
	// readyLine is the log line that said it was ready, once ready is
	// closed.
	readyLine string
}

// startProc runs bin with args and env added to this process's, logging
// to logPath, and closes ready at the first log line holding readyLine.
func startProc(name, bin string, args, env []string, logPath, readyLine string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
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
	p := &proc{name: name, cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	var once sync.Once
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if strings.Contains(line, readyLine) {
				once.Do(func() { p.readyLine = line; close(p.ready) })
			}
		}
		_, _ = io.Copy(f, stderr)
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it all first
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// waitReady waits for the ready line, the process's end or the timeout.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited before it was ready: %v", p.name, p.err)
	case <-t.C:
		return fmt.Errorf("%s not ready within %s", p.name, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// peakRSSMB is the process's VmHWM, its peak resident set, in MiB.
func (p *proc) peakRSSMB() (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "status"))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// stop asks the process to end (SIGTERM) and kills it if it has not
// within 30 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// droveBinary returns bin, or builds ./cmd/drove into dir.
func droveBinary(ctx context.Context, bin, dir string) (string, error) {
	if bin != "" {
		return filepath.Abs(bin)
	}
	out := filepath.Join(dir, "drove")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/drove")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build drove (run from the repository root, or pass -drove-bin): %v: %s", err, b)
	}
	return out, nil
}
