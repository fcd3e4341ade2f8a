package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events"
)

// Config is the gateway's configuration. Zero fields take the defaults
// listed with them.
type Config struct {
	// Addr is where Run listens. Default "localhost:8080".
	Addr string
	// Schema is the Postgres schema of the projector's views. Default
	// "drove".
	Schema string
	// DryRunWait bounds how long a dry-run request waits for its plan to
	// appear in the views before answering 202 without it. Default 15s.
	DryRunWait time.Duration
	// Producer names this gateway in the events it appends (the envelope's
	// producer). Default "gateway".
	Producer string
	// Logger receives one line per HTTP request and every failure.
	// Default slog.Default().
	Logger *slog.Logger
	// Metrics registers the gateway's collectors; nil means a private
	// registry.
	Metrics prometheus.Registerer
	// Gatherer is what GET /metrics serves. Nil means Metrics if it is
	// also a Gatherer (a *prometheus.Registry is), else the private
	// registry.
	Gatherer prometheus.Gatherer
	// KafkaCheck, when set, is called by GET /healthz to learn whether the
	// producer's brokers answer (for instance a kadm ListBrokers with the
	// producer's kafka.Config). Without it the health check only knows a
	// producer was given: kafka.Producer has no ping of its own.
	KafkaCheck func(context.Context) error
	// Parts, when set, is called by GET /healthz to list the components
	// running beside the gateway (`drove dev`) and how each is: "running",
	// "running (restarted N times; ...)", "restarting (...)" or "down
	// (...)"; either of the last two makes /healthz 503. Its words are
	// served as they are, so they must carry no error text.
	Parts func() map[string]string

	// KeepAlive is how often an idle watch stream gets a keepalive line.
	// Default 15s.
	KeepAlive time.Duration
	// TailInterval is how often the shared tailer polls event_log while
	// anyone watches. Default 150ms.
	TailInterval time.Duration
	// MaxWatchers bounds the watch streams open at once; one more is
	// refused with 503 too_many_watchers. Default 1000.
	MaxWatchers int
	// WatchBuffer is how many rows a watcher may fall behind before it is
	// cut off. Default 1024.
	WatchBuffer int
	// ShutdownTimeout bounds Run's graceful shutdown; watch streams are
	// ended at once. Default 10s.
	ShutdownTimeout time.Duration

	// RefusalAuditRate and RefusalAuditBurst bound the audit records that
	// refusals (401, 403) append: Burst at once, Rate per second after;
	// refusals beyond are folded into counts (auditlimit.go). Defaults 5
	// and 20.
	RefusalAuditRate  float64
	RefusalAuditBurst int

	// Tokens maps bearer tokens to accounts (see auth.go; ParseTokens
	// reads them from text). Empty turns authentication off: every caller
	// is an operator, named by X-Drove-Actor.
	Tokens map[string]Account

	// PointInTime, when set, returns the schema holding the views as they
	// stood at a time, building it if missing (projector.AsOf); the
	// instance and node lists answer ?at= from it (asof.go). An error
	// wrapping ErrBadBound is the caller's (400); nil means ?at= is not
	// served (501).
	PointInTime func(ctx context.Context, at time.Time) (schema string, err error)
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "localhost:8080"
	}
	if c.Schema == "" {
		c.Schema = "drove"
	}
	if c.DryRunWait == 0 {
		c.DryRunWait = 15 * time.Second
	}
	if c.Producer == "" {
		c.Producer = "gateway"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.TailInterval == 0 {
		c.TailInterval = 150 * time.Millisecond
	}
	if c.MaxWatchers == 0 {
		c.MaxWatchers = 1000
	}
	if c.WatchBuffer == 0 {
		c.WatchBuffer = 1024
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.RefusalAuditRate == 0 {
		c.RefusalAuditRate = 5
	}
	if c.RefusalAuditBurst == 0 {
		c.RefusalAuditBurst = 20
	}
	return c
}

// Validate reports every problem in c at once, after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	var ps []string
	if c.RefusalAuditRate < 0 || c.RefusalAuditBurst < 0 {
		ps = append(ps, fmt.Sprintf("RefusalAuditRate, RefusalAuditBurst: negative (%g, %d)", c.RefusalAuditRate, c.RefusalAuditBurst))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"DryRunWait", c.DryRunWait},
		{"KeepAlive", c.KeepAlive},
		{"TailInterval", c.TailInterval},
		{"ShutdownTimeout", c.ShutdownTimeout},
	} {
		if d.v < 0 {
			ps = append(ps, fmt.Sprintf("%s: negative (%s)", d.name, d.v))
		}
	}
	if c.MaxWatchers < 0 {
		ps = append(ps, fmt.Sprintf("MaxWatchers: negative (%d)", c.MaxWatchers))
	}
	if c.WatchBuffer < 0 {
		ps = append(ps, fmt.Sprintf("WatchBuffer: negative (%d)", c.WatchBuffer))
	}
	for _, a := range c.Tokens {
		if a.Name == "" || (a.Role != events.RoleOperator && a.Role != events.RoleOwner) {
			ps = append(ps, fmt.Sprintf("Tokens: account %q has role %q (want operator or owner, and a name)", a.Name, a.Role))
		}
	}
	if strings.ContainsAny(c.Schema, "\x00") {
		ps = append(ps, "Schema: contains a NUL byte")
	}
	if len(ps) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return nil
}

// quotedSchema is the schema as an SQL identifier, safe to splice into a
// query whatever its spelling.
func (c Config) quotedSchema() string { return pgx.Identifier{c.Schema}.Sanitize() }
