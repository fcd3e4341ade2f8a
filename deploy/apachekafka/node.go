package apachekafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Node is one broker (and controller) of a Cluster: a process when it
// runs, its directory always.
type Node struct {
	ID             int
	Host           string // the address it listens on and gives clients
	Port           int    // the client listener's
	ControllerPort int
	Dir            string

	c *Cluster

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the running process has exited
}

// Addr is the node's client listener, host:port.
func (n *Node) Addr() string { return fmt.Sprintf("%s:%d", n.Host, n.Port) }

// Running says whether the node's process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// start formats the node's storage if it never was, then starts its
// process. It does not wait for the node to answer (Cluster.Start and
// Node.Start do).
func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.exited:
		default:
			return fmt.Errorf("apachekafka: node %d is already running", n.ID)
		}
	}
	if err := n.writeConfig(); err != nil {
		return err
	}
	if err := n.freshTmp(); err != nil {
		return err
	}
	if err := n.format(); err != nil {
		return err
	}
	logf, err := os.OpenFile(n.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append(n.jvm(),
		"-Dlog4j2.configurationFile="+filepath.Join(n.Dir, "log4j2.properties"),
		"-cp", classpath(n.c.libs), "kafka.Kafka", n.propsFile())
	cmd := n.command(n.c.java, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("apachekafka: start node %d: %w", n.ID, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	n.cmd, n.exited = cmd, exited
	return nil
}

// jvm is the JVM's options for this node, with the node's own
// java.io.tmpdir: libraries unpack native code there at every start
// (snappy-java does), and a killed broker leaves it behind. In /tmp that
// was a file a start, kept for good.
func (n *Node) jvm() []string {
	return append(append([]string{}, n.c.opts.JVM...), "-Djava.io.tmpdir="+n.tmpDir())
}

func (n *Node) tmpDir() string { return filepath.Join(n.Dir, "tmp") }

// freshTmp empties the node's tmpDir: what is there is from an earlier
// run, killed or not.
func (n *Node) freshTmp() error {
	if err := os.RemoveAll(n.tmpDir()); err != nil {
		return err
	}
	return os.MkdirAll(n.tmpDir(), 0o755)
}

// command is name with args, wrapped as the cluster's options say for
// this node (a network namespace), dying with this process on Linux.
func (n *Node) command(name string, args ...string) *exec.Cmd {
	argv := append([]string{name}, args...)
	if w := n.c.opts.wrap(n.ID); len(w) > 0 {
		argv = append(append([]string{}, w...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = n.Dir
	cmd.SysProcAttr = procAttr()
	return cmd
}

// format formats the node's storage for the cluster, once.
func (n *Node) format() error {
	if _, err := os.Stat(filepath.Join(n.Dir, "data", "meta.properties")); err == nil {
		return nil
	}
	// The tool runs on the brokers' JVM options: on Java's defaults (C2,
	// a parallel collector) its second took twice the CPU.
	args := append(n.jvm(), "-cp", classpath(n.c.libs), "kafka.tools.StorageTool",
		"format", "--cluster-id", n.c.id, "--config", n.propsFile(), "--ignore-formatted")
	cmd := n.command(n.c.java, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apachekafka: format node %d's storage: %w: %s", n.ID, err, bytes.TrimSpace(out))
	}
	return nil
}

// Stop stops the node cleanly: SIGTERM, which makes a broker hand its
// partitions' leadership over before it exits (a controlled shutdown),
// then SIGKILL if it has not exited within grace.
func (n *Node) Stop(grace time.Duration) error {
	return n.signal(syscall.SIGTERM, grace)
}

// Kill kills the node with SIGKILL, as a crash or a power cut would, and
// waits for it to be gone.
func (n *Node) Kill() error { return n.signal(syscall.SIGKILL, time.Minute) }

func (n *Node) signal(sig syscall.Signal, grace time.Duration) error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
	}
	_ = cmd.Process.Kill()
	<-exited
	if sig == syscall.SIGKILL {
		return nil
	}
	return fmt.Errorf("apachekafka: node %d did not stop within %s of %s; killed", n.ID, grace, sig)
}

// Start starts a stopped or killed node again on its directory and ports
// and waits until the cluster lists it.
func (n *Node) Start(ctx context.Context) error {
	if err := n.start(); err != nil {
		return err
	}
	return n.c.waitReady(ctx, []*Node{n})
}

// exitedErr says that the node's process ended, with its log's tail.
func (n *Node) exitedErr() error {
	return fmt.Errorf("apachekafka: node %d exited while starting; the end of %s:\n%s", n.ID, n.logFile(), tail(n.logFile(), 4000))
}

func (n *Node) propsFile() string { return filepath.Join(n.Dir, "server.properties") }
func (n *Node) logFile() string   { return filepath.Join(n.Dir, "broker.log") }

// tail is the last max bytes of file.
func tail(file string, max int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

var errNotReady = errors.New("apachekafka: not ready")
