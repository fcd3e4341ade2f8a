// Package subproc runs the drove processes a benchmark starts (planners,
// executors): each one's log goes to a file and is watched for marker
// lines, whose first sighting, time and text a bench waits on. It also
// finds or builds the drove binary they run from.
package subproc

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
	"syscall"
	"time"
)

// Proc is one drove process.
type Proc struct {
	Name    string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // Wait's, once done is closed
	markers map[string]*marker
}

type marker struct {
	seen chan struct{} // closed when first seen
	mark Mark          // set before seen is closed
}

// Mark is a marker's first sighting: the whole log line and when it was
// read.
type Mark struct {
	At   time.Time
	Line string
}

// Start runs bin with args and env added to this process's, its output
// to logPath, watching its log (stderr) for lines holding any of markers.
func Start(name, bin string, args, env []string, logPath string, markers ...string) (*Proc, error) {
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
	p := &Proc{Name: name, cmd: cmd, done: make(chan struct{}), markers: map[string]*marker{}}
	for _, m := range markers {
		p.markers[m] = &marker{seen: make(chan struct{})}
	}
	go p.scan(stderr, f)
	return p, nil
}

// scan copies the log to f, stamping markers, until the process ends.
func (p *Proc) scan(stderr io.Reader, f *os.File) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		now, line := time.Now(), sc.Text()
		fmt.Fprintln(f, line)
		for text, m := range p.markers {
			if m.mark.At.IsZero() && strings.Contains(line, text) {
				m.mark = Mark{At: now, Line: line}
				close(m.seen)
			}
		}
	}
	_, _ = io.Copy(f, stderr)
	p.err = p.cmd.Wait() // after the pipe is read to its end
	f.Close()
	close(p.done)
}

// Wait waits until the marker text is seen, the process ends or timeout
// passes.
func (p *Proc) Wait(ctx context.Context, text string, timeout time.Duration) (Mark, error) {
	m := p.markers[text]
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-m.seen:
		return m.mark, nil
	case <-p.done:
		return Mark{}, fmt.Errorf("%s exited before saying %q: %v", p.Name, text, p.err)
	case <-t.C:
		return Mark{}, fmt.Errorf("%s did not say %q within %s", p.Name, text, timeout)
	case <-ctx.Done():
		return Mark{}, ctx.Err()
	}
}

// Seen says whether the marker text was seen yet.
func (p *Proc) Seen(text string) bool {
	select {
	case <-p.SeenC(text):
		return true
	default:
		return false
	}
}

// SeenC is closed once the marker text is seen.
func (p *Proc) SeenC(text string) <-chan struct{} { return p.markers[text].seen }

// Stop asks the process to end (SIGTERM) and kills it if it has not
// within 30 s.
func (p *Proc) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.Kill()
	}
}

// KillNow sends SIGKILL and returns without waiting: a bench times what
// happens after.
func (p *Proc) KillNow() { _ = p.cmd.Process.Signal(syscall.SIGKILL) }

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	p.KillNow()
	<-p.done
}

// PeakRSSMiB is the process's VmHWM, its peak resident set, in MiB.
func (p *Proc) PeakRSSMiB() (float64, error) {
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

// DroveBinary returns bin, or builds ./cmd/drove into dir.
func DroveBinary(ctx context.Context, bin, dir string) (string, error) {
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
