package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway/wire"
)

// Gateway is the HTTP API. Build it with New; serve Handler yourself or
// call Run.
type Gateway struct {
	cfg      Config
	log      *slog.Logger
	db       *store
	producer *kafka.Producer
	metrics  *metrics
	gatherer prometheus.Gatherer
	tail     *tailer
	recent   *recent
	refusals *refusalBudget
	watchers atomic.Int64 // open watch streams, at most Config.MaxWatchers
	engine   *gin.Engine
	// pending and setCache remember this gateway's own appends until the
	// views show them (see migrate.go, settings.go).
	pending  pendingMigrations
	setCache settingsCache

	// commandMu makes a command's check for active requests and its append
	// one step within this gateway, so two quick identical calls cannot
	// both pass the check (see recent.go).
	commandMu sync.Mutex

	// closing is closed when Run starts shutting down, to end watch
	// streams: http.Server.Shutdown does not interrupt active handlers.
	closing   chan struct{}
	closeOnce sync.Once
}

// New returns a gateway reading the views through pool and appending
// through producer. It does not contact either; GET /healthz does.
func New(cfg Config, pool *pgxpool.Pool, producer *kafka.Producer) (*Gateway, error) {
	err := cfg.Validate()
	var ps []error
	if err != nil {
		ps = append(ps, err)
	}
	if pool == nil {
		ps = append(ps, fmt.Errorf("%w: no Postgres pool", ErrInvalidConfig))
	}
	if producer == nil {
		ps = append(ps, fmt.Errorf("%w: no Kafka producer", ErrInvalidConfig))
	}
	if err := errors.Join(ps...); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()

	var reg prometheus.Registerer = cfg.Metrics
	gatherer := cfg.Gatherer
	if reg == nil {
		own := prometheus.NewRegistry()
		reg = own
		if gatherer == nil {
			gatherer = own
		}
	}
	if gatherer == nil {
		if g, ok := reg.(prometheus.Gatherer); ok {
			gatherer = g
		} else {
			gatherer = prometheus.NewRegistry()
		}
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	q, err := loadQueries(cfg.quotedSchema())
	if err != nil {
		return nil, err
	}

	g := &Gateway{
		cfg:      cfg,
		log:      cfg.Logger,
		db:       &store{pool: pool, q: q},
		producer: producer,
		metrics:  m,
		gatherer: gatherer,
		recent:   newRecent(recentTTL),
		refusals: newRefusalBudget(cfg.RefusalAuditRate, cfg.RefusalAuditBurst),
		closing:  make(chan struct{}),
	}
	g.tail = newTailer(g.db, cfg.TailInterval, cfg.Logger, m.tailerPolls)
	g.engine = g.routes()
	return g, nil
}

// Handler serves the API.
func (g *Gateway) Handler() http.Handler { return g.engine }

// Run serves the API on cfg.Addr until ctx is done, then shuts down: it
// stops accepting connections, ends the watch streams, and waits up to
// ShutdownTimeout for the other requests to finish.
func (g *Gateway) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", g.cfg.Addr)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w", g.cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           g.engine,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	g.log.Info("gateway listening", "addr", ln.Addr().String(), "schema", g.cfg.Schema)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go g.flushRefusalsEvery(ctx, time.Second)

	select {
	case err := <-served:
		return fmt.Errorf("gateway: serve: %w", err)
	case <-ctx.Done():
	}
	g.closeOnce.Do(func() { close(g.closing) })
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-served
	g.flushRefusals(sctx)
	if err != nil {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	g.log.Info("gateway stopped")
	return nil
}

// routes wires the API. Every handler returns an error; handle turns it
// into the JSON error answer, so no path can forget to stop.
func (g *Gateway) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// Handlers pass the gin.Context as their context: with the fallback it
	// is the request's, cancelled when the client goes away.
	r.ContextWithFallback = true
	r.Use(g.observe, gin.CustomRecoveryWithWriter(nil, g.recovered), g.plainText)
	r.NoRoute(g.handle(func(c *gin.Context) error {
		return notFound("", "no such endpoint: "+c.Request.Method+" "+c.Request.URL.Path)
	}))
	r.NoMethod(g.handle(func(c *gin.Context) error {
		return &wire.Error{Status: http.StatusMethodNotAllowed, Code: codeBadRequest,
			Message: "method " + c.Request.Method + " not allowed on " + c.Request.URL.Path}
	}))

	r.GET("/healthz", g.handle(g.healthz))
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(g.gatherer, promhttp.HandlerOpts{})))
	r.GET(openAPIPath, serveOpenAPI)
	registerConsole(r)

	// /v1 needs a bearer token once Config.Tokens is set (auth.go); the
	// bulk API, the nodes and the settings are for operators only.
	v1 := r.Group("/v1", g.authenticate)
	ops := v1.Group("", g.operatorsOnly)
	ops.POST("/evacuations", g.handle(g.postEvacuation))
	ops.POST("/group-changes", g.handle(g.postGroupChange))
	ops.GET("/jobs", g.handle(g.listJobs))
	ops.GET("/groups", g.handle(g.listGroups))
	ops.GET("/settings", g.handle(g.getSettings))
	ops.PUT("/settings", g.handle(g.putSettings))

	requests := ops.Group("/requests")
	requests.GET("", g.handle(g.listRequests))
	requests.GET("/:id", g.handle(g.getRequest))
	requests.GET("/:id/plan", g.handle(g.getPlan))
	requests.GET("/:id/jobs", g.handle(g.getRequestJobs))
	requests.GET("/:id/watch", g.handle(g.watchRequest))
	requests.POST("/:id/approve", g.handle(g.postApprove))
	requests.POST("/:id/cancel", g.handle(g.postCancel))

	nodes := ops.Group("/nodes")
	nodes.GET("", g.handle(g.listNodes))
	nodes.GET("/:name", g.handle(g.getNode))
	for _, action := range events.NodeActions() { // POST /v1/nodes/NAME/undrain, ...
		nodes.POST("/:name/"+string(action), g.handle(g.postNodeAction(action)))
	}
	ops.GET("/node-actions/:id", g.handle(g.getNodeAction))

	// Owners see their own instances and migrations here. A per-instance
	// migration's id is one segment; a bulk move's is request/job/index.
	migrations := v1.Group("/migrations")
	migrations.GET("", g.handle(g.listMigrations))
	migrations.GET("/:id", g.handle(g.getMigration))
	migrations.GET("/:id/:job/:idx", g.handle(g.getMigration))

	instances := v1.Group("/instances")
	instances.GET("", g.handle(g.listInstances))
	instances.GET("/:name", g.handle(g.getInstance))
	instances.GET("/:name/watch", g.handle(g.watchInstance))
	instances.POST("/:name/migrate", g.handle(g.postMigrate))
	instances.GET("/:name/migrate/watch", g.handle(g.watchMigration))
	instances.POST("/:name/stop", g.handle(g.postRunState(events.RunStopped)))
	instances.POST("/:name/start", g.handle(g.postRunState(events.RunRunning)))
	instances.PUT("/:name/user-migration", g.operatorsOnly, g.handle(g.putUserMigration))
	instances.PUT("/:name/max-downtime", g.handle(g.putMaxDowntime))

	// Audit (history.go): owners read their own instances' histories;
	// the audit trail (audit.go) is the operators', checked there.
	v1.GET("/audit", g.handle(g.getAudit))
	v1.GET("/history/:kind/:id", g.handle(g.getHistory))
	return r
}

// handle adapts a handler that returns an error.
func (g *Gateway) handle(h func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			g.fail(c, err)
		}
	}
}

// fail writes err as the JSON error answer. Errors that are not *wire.Errors
// are the gateway's or its dependencies' fault: they are logged in full and
// answered without internals.
func (g *Gateway) fail(c *gin.Context, err error) {
	var ae *wire.Error
	if !errors.As(err, &ae) && c.Request.Context().Err() == nil {
		if ae = unavailable(err); ae != nil {
			g.log.Warn("views' database unreachable", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		}
	}
	if ae != nil && ae.Status == http.StatusServiceUnavailable && ae.Code == codeUnavailable {
		c.Header("Retry-After", storeRetryAfter)
	}
	if ae == nil {
		status, code, msg := http.StatusInternalServerError, codeInternal, "internal error; the gateway log has the details"
		if c.Request.Context().Err() != nil {
			status, code, msg = 499, "client_gone", "the client went away"
		}
		g.log.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		ae = &wire.Error{Status: status, Code: code, Message: msg}
	}
	if c.Writer.Written() {
		return // a stream already started; it ends its own way
	}
	c.AbortWithStatusJSON(ae.Status, wire.ErrorAnswer{Error: ae})
}

func (g *Gateway) recovered(c *gin.Context, v any) {
	g.log.Error("handler panicked", "method", c.Request.Method, "path", c.Request.URL.Path, "panic", v)
	if !c.Writer.Written() {
		c.AbortWithStatusJSON(http.StatusInternalServerError, wire.ErrorAnswer{Error: &wire.Error{
			Code: codeInternal, Message: "internal error; the gateway log has the details"}})
	}
}

// observe logs each request with slog and counts it.
func (g *Gateway) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched" // keeps arbitrary paths out of the label set
	}
	status := c.Writer.Status()
	elapsed := time.Since(start)
	g.metrics.requests.WithLabelValues(route, c.Request.Method, strconv.Itoa(status)).Inc()
	g.metrics.duration.WithLabelValues(route, c.Request.Method).Observe(elapsed.Seconds())
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelWarn
	}
	if route == "/healthz" || route == "/metrics" {
		level = slog.LevelDebug
	}
	g.log.Log(c.Request.Context(), level, "http",
		"method", c.Request.Method, "path", c.Request.URL.Path, "route", route,
		"status", status, "duration", elapsed, "actor", c.GetHeader(actorHeader))
}

// healthz answers 200 when Postgres answers and the producer is usable.
// unhealthy logs a failed health check in full and says, for /healthz,
// only what failed: the error text of pgx or franz-go carries hosts,
// user names and connection strings, which an unauthenticated probe must
// not read.
func (g *Gateway) unhealthy(part string, err error) string {
	g.log.Warn("health check failed", "part", part, "err", err)
	if errors.Is(err, context.DeadlineExceeded) {
		return "unavailable: no answer within 5s (the gateway log has the details)"
	}
	return "unavailable (the gateway log has the details)"
}

func (g *Gateway) healthz(c *gin.Context) error {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 5*time.Second)
	defer cancel()
	checks := map[string]any{}
	ok := true
	if err := g.db.pool.Ping(ctx); err != nil {
		ok = false
		checks["postgres"] = g.unhealthy("postgres", err)
	} else {
		checks["postgres"] = "ok"
	}
	switch {
	case g.cfg.KafkaCheck == nil:
		checks["kafka"] = "ok (producer present; no KafkaCheck configured)"
	default:
		if err := g.cfg.KafkaCheck(ctx); err != nil {
			ok = false
			checks["kafka"] = g.unhealthy("kafka", err)
		} else {
			checks["kafka"] = "ok"
		}
	}
	if g.cfg.Parts != nil {
		parts := g.cfg.Parts()
		for _, state := range parts {
			if strings.HasPrefix(state, "down") || strings.HasPrefix(state, "restarting") {
				ok = false
			}
		}
		checks["parts"] = parts
	}
	if !ok {
		g.answer(c, http.StatusServiceUnavailable, wire.Health{Status: "unavailable", Checks: checks})
		return nil
	}
	g.answer(c, http.StatusOK, wire.Health{Status: "ok", Checks: checks})
	return nil
}

// answer writes v as the JSON answer with code (writeJSON), answering
// a fault as any other.
func (g *Gateway) answer(c *gin.Context, code int, v any) {
	if err := writeJSON(c, code, v); err != nil {
		g.fail(c, err)
	}
}

// writeJSON writes v as the JSON answer with code. gin's c.JSON sends
// the status before it encodes, so a value JSON cannot encode (a NaN, an
// infinity) went out as code with an empty body (schemathesis found an
// estimate answered so); here nothing is written and the error returned
// is the caller's to answer (a 500).
func writeJSON(c *gin.Context, code int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("gateway: encoding the answer: %w", err)
	}
	c.Data(code, "application/json; charset=utf-8", b)
	return nil
}
