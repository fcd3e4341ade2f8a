package gateway

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// Authentication and permissions.
//
// Callers present "Authorization: Bearer <token>"; Config.Tokens maps each
// token to an account with a role. Operators may do everything. Owners
// (tenants) see and migrate only their own instances (instances.owner is
// their account), and migrate only where user migrations are allowed.
//
// With no tokens configured, authentication is off: every caller is an
// operator named by X-Drove-Actor (the bulk API of the backbone, its tests
// and `drove dev` without tokens keep working). Once tokens are configured
// every /v1 route needs one, and the bulk API (evacuations, group changes,
// requests, jobs, nodes, groups, settings) is for operators only.
//
// Every refusal (401, 403) is recorded as an events.AuditRecorded with
// outcome denied on drove.audit: who, what, why.

// Account is who a token speaks for.
type Account struct {
	Name string
	Role events.Role
}

// ParseTokens reads tokens written as "tok1=alice:operator,tok2=acct-42:owner"
// (commas or newlines between entries; "tenant" is accepted for owner;
// blank entries and lines starting with # are skipped). It reports every
// malformed entry at once.
func ParseTokens(spec string) (map[string]Account, error) {
	out := map[string]Account{}
	var ps []string
	fields := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == '\n' })
	for i, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" || strings.HasPrefix(f, "#") {
			continue
		}
		tok, acct, ok := strings.Cut(f, "=")
		name, role, ok2 := strings.Cut(acct, ":")
		tok, name, role = strings.TrimSpace(tok), strings.TrimSpace(name), strings.TrimSpace(role)
		switch {
		case !ok || !ok2 || tok == "" || name == "":
			ps = append(ps, fmt.Sprintf("entry %d: want TOKEN=ACCOUNT:ROLE", i+1))
			continue
		case role == "tenant":
			role = string(events.RoleOwner)
		case role != string(events.RoleOperator) && role != string(events.RoleOwner):
			ps = append(ps, fmt.Sprintf("entry %d: role %q is not operator or owner", i+1, role))
			continue
		}
		if _, dup := out[tok]; dup {
			ps = append(ps, fmt.Sprintf("entry %d: token given twice", i+1))
			continue
		}
		out[tok] = Account{Name: name, Role: events.Role(role)}
	}
	if len(ps) > 0 {
		return nil, fmt.Errorf("%w: tokens: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return out, nil
}

// caller is who is asking, as authenticate found out.
type caller struct {
	Account
	// authOff says no tokens are configured: everyone is an operator.
	authOff bool
}

func (c caller) operator() bool { return c.Role == events.RoleOperator }

const callerKey = "drove.caller"

// callerOf is the caller authenticate stored; an operator when the route
// is outside /v1 (it never runs there).
func callerOf(c *gin.Context) caller {
	if v, ok := c.Get(callerKey); ok {
		return v.(caller)
	}
	return caller{Account: Account{Name: actorOf(c), Role: events.RoleOperator}, authOff: true}
}

// authenticate finds the caller from the bearer token, or answers 401.
func (g *Gateway) authenticate(c *gin.Context) {
	if len(g.cfg.Tokens) == 0 {
		c.Set(callerKey, caller{Account: Account{Name: actorOf(c), Role: events.RoleOperator}, authOff: true})
		c.Next()
		return
	}
	h := strings.TrimSpace(c.GetHeader("Authorization"))
	scheme, tok, _ := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	var why string
	switch {
	case h == "":
		why = "no Authorization header; send Authorization: Bearer <token>"
	case !strings.EqualFold(scheme, "bearer") || tok == "":
		why = "the Authorization header is not a bearer token"
	default:
		if a, ok := g.lookupToken(tok); ok {
			c.Set(callerKey, caller{Account: a})
			c.Next()
			return
		}
		why = "unknown token"
	}
	g.fail(c, g.deny(c, caller{Account: Account{Name: "anonymous"}}, http.StatusUnauthorized, why))
	c.Abort()
}

// lookupToken compares in constant time, so response times do not leak
// how much of a token was right.
func (g *Gateway) lookupToken(tok string) (Account, bool) {
	var found Account
	ok := false
	for t, a := range g.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			found, ok = a, true
		}
	}
	return found, ok
}

// operatorsOnly guards the bulk API and the settings.
func (g *Gateway) operatorsOnly(c *gin.Context) {
	if who := callerOf(c); !who.operator() {
		g.fail(c, g.deny(c, who, http.StatusForbidden, "only operators may use "+c.FullPath()))
		c.Abort()
		return
	}
	c.Next()
}

const (
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
)

// deny records a refusal on drove.audit and returns the error to answer
// with. A failed audit append is logged, not answered: the refusal stands.
func (g *Gateway) deny(c *gin.Context, who caller, status int, why string) *wire.Error {
	code := codeForbidden
	if status == http.StatusUnauthorized {
		code = codeUnauthorized
	}
	what := c.Request.Method + " " + c.Request.URL.Path
	if q := c.Request.URL.RawQuery; q != "" {
		what += "?" + q
	}
	g.flushRefusals(c)
	if g.refusals.admit(who.subject(), why, what) {
		g.audit(c, who, what, events.AuditDenied, why)
	}
	g.metrics.denied.WithLabelValues(code).Inc()
	return &wire.Error{Status: status, Code: code, Message: why}
}

// audit appends an AuditRecorded; its subject is what was asked.
func (g *Gateway) audit(ctx context.Context, who caller, what string, outcome events.AuditOutcome, why string) {
	p := events.AuditRecorded{Action: what, Subject: who.subject(), Outcome: outcome, Detail: why}
	if err := g.append(ctx, "", who.Name, why, p); err != nil {
		g.log.Error("audit record not appended", "who", who.Name, "what", what, "err", err)
	}
}

// subject names the caller in audit records: "alice (operator)".
func (c caller) subject() string { return c.Name + " (" + roleName(c.Role) + ")" }

// flushRefusals appends the folded refusal counts the budget has room for.
func (g *Gateway) flushRefusals(ctx context.Context) {
	for _, r := range g.refusals.due() {
		p := events.AuditRecorded{Action: "refusals folded", Subject: r.subject, Outcome: events.AuditDenied, Detail: r.detail()}
		if err := g.append(ctx, "", g.cfg.Producer, r.why, p); err != nil {
			g.log.Error("folded refusals not appended", "subject", r.subject, "count", r.n, "err", err)
		}
	}
}

// flushRefusalsEvery offers the folded counts every interval until ctx ends.
func (g *Gateway) flushRefusalsEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.flushRefusals(ctx)
		}
	}
}

func roleName(r events.Role) string {
	if r == "" {
		return "unauthenticated"
	}
	return string(r)
}

// userMigrationAllowed says whether owners may migrate an instance: its
// own setting when it has one, else the global one.
func userMigrationAllowed(global bool, instance *bool) bool {
	if instance != nil {
		return *instance
	}
	return global
}

// mayMigrate checks that who may run action on in, given the settings in
// force and the instance's current migration (nil for none). Operators
// may always; owners only on their own instances, where user migrations
// are allowed, and never on a migration an operator started.
func (g *Gateway) mayMigrate(c *gin.Context, who caller, in wire.Instance, s events.SettingsChanged, cur *wire.InstanceMigration, action string) error {
	if who.operator() {
		return nil
	}
	if in.Owner != who.Name {
		return g.deny(c, who, http.StatusForbidden, fmt.Sprintf("instance %q is not yours (account %s)", in.Name, who.Name))
	}
	if !userMigrationAllowed(s.AllowUserMigrations, in.UserMigration) {
		where := "user migrations are disallowed by the operators' settings"
		if in.UserMigration != nil {
			where = "user migrations are disallowed for this instance"
		}
		return g.deny(c, who, http.StatusForbidden, fmt.Sprintf("you may not migrate %q: %s", in.Name, where))
	}
	if cur != nil && cur.Role == string(events.RoleOperator) && slices.Contains(controlActions, action) {
		return g.deny(c, who, http.StatusForbidden, fmt.Sprintf(
			"migration %s of %q was started by an operator; only an operator may %s it", cur.ID, in.Name, action))
	}
	return nil
}

// controlActions act on an existing migration.
var controlActions = []string{"sync", "switch", "abort", "pause", "rollback", "finalize"}
