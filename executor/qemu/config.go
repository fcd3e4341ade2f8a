package qemu

import (
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/executor/nodeid"
)

// Config is what a Driver needs. Zero fields take the defaults listed
// with them; Validate reports every problem at once. The source and the
// target node of a move must agree on AllowPostCopy (QEMU needs the
// postcopy-ram capability on both sides).
type Config struct {
	// Node is the node this driver runs VMs on. Required.
	Node string
	// Dir holds the QMP sockets, pid files, logs and move markers of this
	// node's VMs. Required; keep it short (unix socket paths are limited
	// to 107 bytes).
	Dir string
	// Disk returns the path of instance's raw disk image on this node (on
	// its dataset, for ZFS storage). Nil or "" means the VM has no disk.
	Disk func(instance string) (string, error)
	// Binary is the QEMU to run. Default qemu-system-x86_64.
	Binary string
	// Accel is QEMU's accelerator. Default tcg (no KVM needed).
	Accel string
	// Machine is the machine type. Default pc.
	Machine string
	// DiskBus is the bus the disk hangs on: virtio (the default) or ide
	// (the pc machine's legacy IDE controller, which the test guest's
	// disk writes speak: guest.go).
	DiskBus string
	// DefaultMemoryMiB is the RAM of a VM whose size says none. Default 64.
	DefaultMemoryMiB int64
	// ExtraArgs are appended to every QEMU command line.
	ExtraArgs []string
	// TLS is this node's identity (executor/nodeid, `drove ca issue`):
	// with it the migration stream between VMs is QEMU's own TLS, both
	// ends checked against the CA and the target's certificate against
	// its node name (tls.go). Zero: plain TCP.
	TLS nodeid.Files
	// ListenHost is the address the target's incoming VM listens on and
	// announces. Default 127.0.0.1.
	ListenHost string

	// MaxBandwidth caps the migration in bytes per second when the opcode
	// sets no cap (Op.SendBytesPerSecond); 0 means no cap.
	MaxBandwidth int64
	// DowntimeLimit is the longest pause QEMU may plan for the switch
	// (migrate-set-parameters downtime-limit). Default 300ms.
	DowntimeLimit time.Duration
	// AllowPostCopy lets a migration that has not converged within the
	// completion timeout switch to post-copy instead of failing.
	AllowPostCopy bool
	// CompletionTimeoutPerGiB is KubeVirt's completion timeout: a
	// pre-copy may take this long per GiB of guest RAM before it is
	// switched to post-copy (or, without post-copy, aborted). Default
	// 150s.
	CompletionTimeoutPerGiB time.Duration
	// ProgressTimeout aborts a pre-copy whose remaining bytes have not
	// reached a new low for this long (KubeVirt). Default 150s.
	ProgressTimeout time.Duration
	// PollInterval is how often query-migrate is asked while a migration
	// runs; events wake the loop sooner. Default 100ms.
	PollInterval time.Duration
	// CancelGrace is how long a cancelled Receive whose stream runs waits
	// for the source to end the migration or switch it to post-copy,
	// before destroying the incoming VM. Default 10s.
	CancelGrace time.Duration
	// QMPTimeout bounds a QMP command and QEMU's start. Default 10s.
	QMPTimeout time.Duration
	// StopTimeout is how long a stopping VM may take before it is killed.
	// Default 5s.
	StopTimeout time.Duration

	// Logger gets the driver's logs. Default slog.Default().
	Logger *slog.Logger
	// Metrics registers drove_qemu_* metrics; nil means a private registry.
	Metrics prometheus.Registerer
}

// Validate reports every problem with cfg at once, wrapped in
// ErrInvalidConfig.
func (c Config) Validate() error {
	var ps []string
	if c.Node == "" {
		ps = append(ps, "node is required")
	}
	if c.Dir == "" {
		ps = append(ps, "dir is required")
	} else if len(c.Dir) > 80 {
		ps = append(ps, fmt.Sprintf("dir %q is too long for QMP socket paths (at most 80 bytes)", c.Dir))
	}
	bin := c.Binary
	if bin == "" {
		bin = "qemu-system-x86_64"
	}
	if _, err := exec.LookPath(bin); err != nil {
		ps = append(ps, fmt.Sprintf("binary %q not found (Debian: apt-get install qemu-system-x86)", bin))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"downtime limit", c.DowntimeLimit}, {"completion timeout per GiB", c.CompletionTimeoutPerGiB},
		{"progress timeout", c.ProgressTimeout}, {"poll interval", c.PollInterval},
		{"qmp timeout", c.QMPTimeout}, {"stop timeout", c.StopTimeout}, {"cancel grace", c.CancelGrace},
	} {
		if d.v < 0 {
			ps = append(ps, d.name+" must not be negative")
		}
	}
	if c.MaxBandwidth < 0 {
		ps = append(ps, "max bandwidth must not be negative")
	}
	if c.DefaultMemoryMiB < 0 {
		ps = append(ps, "default memory must not be negative")
	}
	if c.TLS != (nodeid.Files{}) && (c.TLS.Cert == "" || c.TLS.Key == "" || c.TLS.CA == "") {
		ps = append(ps, "TLS needs the node's certificate, key and CA")
	}
	if c.DiskBus != "" && c.DiskBus != "virtio" && c.DiskBus != "ide" {
		ps = append(ps, fmt.Sprintf("disk bus %q: virtio or ide", c.DiskBus))
	}
	if len(ps) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Binary == "" {
		c.Binary = "qemu-system-x86_64"
	}
	if c.Accel == "" {
		c.Accel = "tcg"
	}
	if c.Machine == "" {
		c.Machine = "pc"
	}
	if c.DiskBus == "" {
		c.DiskBus = "virtio"
	}
	if c.DefaultMemoryMiB == 0 {
		c.DefaultMemoryMiB = 64
	}
	if c.ListenHost == "" {
		c.ListenHost = "127.0.0.1"
	}
	def(&c.DowntimeLimit, 300*time.Millisecond)
	def(&c.CompletionTimeoutPerGiB, 150*time.Second)
	def(&c.ProgressTimeout, 150*time.Second)
	def(&c.PollInterval, 100*time.Millisecond)
	def(&c.QMPTimeout, 10*time.Second)
	def(&c.CancelGrace, 10*time.Second)
	def(&c.StopTimeout, 5*time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
