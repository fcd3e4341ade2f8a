package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// Settings (operators only): GET and PUT /v1/settings, and the
// per-instance override PUT /v1/instances/{name}/user-migration (the
// instance's own downtime budget, PUT /v1/instances/{name}/max-downtime,
// is in budget.go: owners may set theirs). The
// settings in force are the latest SettingsChanged; before the first one,
// events.DefaultSettings().

// settingsCache is what this gateway last appended, so that a second PUT
// right after a first merges with it even before the views show it.
type settingsCache struct {
	mu    sync.Mutex
	s     *events.SettingsChanged
	after time.Time // the views' settings time when it was appended
}

// settings returns the settings in force: the views', unless this gateway
// appended newer ones the views do not show yet.
func (g *Gateway) settings(ctx context.Context) (events.SettingsChanged, error) {
	s, at, err := g.viewSettings(ctx)
	if err != nil {
		return s, err
	}
	g.setCache.mu.Lock()
	defer g.setCache.mu.Unlock()
	if g.setCache.s != nil {
		if at.After(g.setCache.after) {
			g.setCache.s = nil // the views caught up (or someone else wrote since)
		} else {
			return *g.setCache.s, nil
		}
	}
	return s, nil
}

// viewSettings reads the settings table: the defaults before the first
// SettingsChanged.
func (g *Gateway) viewSettings(ctx context.Context) (events.SettingsChanged, time.Time, error) {
	var s events.SettingsChanged
	var at time.Time
	err := g.db.pool.QueryRow(ctx, g.db.q.get("settings_get")).Scan(&s.AllowUserMigrations,
		&s.MaxRunningMigrationsPerNode, &s.SendMbpsLimit, &s.ResyncMaxBytes, &s.ResyncMaxSyncs,
		&s.ResyncShrinkWindow, &s.ProgressTimeoutSeconds, &s.FinalizeGraceSeconds, &s.MaxDowntimeMS, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return events.DefaultSettings(), time.Time{}, nil
	}
	if err != nil {
		return s, at, fmt.Errorf("gateway: settings_get: %w", err)
	}
	return s, at, nil
}

// merge applies b to s and returns the first invalid field as a 400.
func mergeSettings(b wire.SettingsBody, s *events.SettingsChanged) error {
	atLeast := func(field string, v *int, least int, dst *int) error {
		if v == nil {
			return nil
		}
		if *v < least {
			return badRequest(field, fmt.Sprintf("%s: %d is below %d", field, *v, least))
		}
		if *v > events.MaxViewInt {
			return badRequest(field, fmt.Sprintf("%s: %d is above %d", field, *v, events.MaxViewInt))
		}
		*dst = *v
		return nil
	}
	if b.AllowUserMigrations != nil {
		s.AllowUserMigrations = *b.AllowUserMigrations
	}
	if err := atLeast("max_running_migrations_per_node", b.MaxRunningMigrationsPerNode, 1, &s.MaxRunningMigrationsPerNode); err != nil {
		return err
	}
	if v := b.SendMbpsLimit; v != nil {
		if *v < 0 {
			return badRequest("send_mbps_limit", fmt.Sprintf("send_mbps_limit: %g is negative (0 means no cap)", *v))
		}
		s.SendMbpsLimit = *v
	}
	if v := b.ResyncMaxBytes; v != nil {
		if *v < 0 {
			return badRequest("resync_max_bytes", fmt.Sprintf("resync_max_bytes: %d is negative", *v))
		}
		s.ResyncMaxBytes = *v
	}
	if v := b.MaxDowntimeMS; v != nil {
		if err := checkBudget(*v, "0 means no budget"); err != nil {
			return err
		}
		s.MaxDowntimeMS = *v
	}
	if err := atLeast("resync_max_syncs", b.ResyncMaxSyncs, 1, &s.ResyncMaxSyncs); err != nil {
		return err
	}
	if err := atLeast("resync_shrink_window", b.ResyncShrinkWindow, 1, &s.ResyncShrinkWindow); err != nil {
		return err
	}
	if err := atLeast("progress_timeout_seconds", b.ProgressTimeoutSeconds, 1, &s.ProgressTimeoutSeconds); err != nil {
		return err
	}
	return atLeast("finalize_grace_seconds", b.FinalizeGraceSeconds, 0, &s.FinalizeGraceSeconds)
}

func (g *Gateway) getSettings(c *gin.Context) error {
	s, err := g.settings(c)
	if err != nil {
		return err
	}
	g.answer(c, http.StatusOK, s)
	return nil
}

func (g *Gateway) putSettings(c *gin.Context) error {
	var b wire.SettingsBody
	if err := decodeBody(c, &b, false); err != nil {
		return err
	}
	who := callerOf(c)
	g.commandMu.Lock()
	defer g.commandMu.Unlock()
	s, err := g.settings(c)
	if err != nil {
		return err
	}
	if err := mergeSettings(b, &s); err != nil {
		return err
	}
	_, seen, err := g.viewSettings(c)
	if err != nil {
		return err
	}
	why := b.Reason
	if why == "" {
		why = "settings changed by " + who.Name
	}
	if err := g.append(c, "", who.Name, why, s); err != nil {
		return err
	}
	g.setCache.mu.Lock()
	g.setCache.s, g.setCache.after = &s, seen
	g.setCache.mu.Unlock()
	g.log.Info("settings changed", "account", who.Name)
	g.answer(c, http.StatusOK, s)
	return nil
}

func (g *Gateway) putUserMigration(c *gin.Context) error {
	// Decode into a raw map first: "allowed" must be present, and null is
	// a value here, not an absence.
	var raw map[string]json.RawMessage
	if err := decodeBody(c, &raw, false, "allowed"); err != nil {
		return err
	}
	v, ok := raw["allowed"]
	if !ok {
		return badRequest("allowed", "allowed: missing (want true, false or null)")
	}
	var b wire.UserMigration
	if err := json.Unmarshal(v, &b.Allowed); err != nil {
		return badRequest("allowed", "allowed: want true, false or null, got "+string(v))
	}
	for k, v := range raw {
		switch k {
		case "allowed":
		case "reason":
			if err := json.Unmarshal(v, &b.Reason); err != nil {
				return badRequest("reason", "reason: want a string")
			}
		default:
			return badRequest(k, k+": unknown field")
		}
	}
	who := callerOf(c)
	name := c.Param("name")
	return g.restate(c, who, name, b.Reason, func(d *events.InstanceDeclared) (string, error) {
		d.UserMigration = b.Allowed
		what := "follows the global setting"
		if b.Allowed != nil {
			what = "allowed: " + strconv.FormatBool(*b.Allowed)
		}
		return "user migrations of " + name + " " + what, nil
	})
}

// restate appends an InstanceDeclared restating instance name as the
// views and its last declaration have it, changed by change. The views
// sum the disks and keep no NICs or spindles, so those come from the last
// InstanceDeclared in event_log; placement, run state and the override
// come from the views (InstancePlaced moves the instance after its
// declaration).
func (g *Gateway) restate(c *gin.Context, who caller, name, reason string, change func(*events.InstanceDeclared) (string, error)) error {
	g.commandMu.Lock()
	defer g.commandMu.Unlock()
	in, err := g.instanceFor(c, who, name)
	if err != nil {
		return err
	}
	cur, err := g.db.currentMigration(c, name)
	if err != nil {
		return err
	}
	if err := g.checkPending(name, cur); err != nil {
		return err
	}
	if cur != nil && migrationActive(*cur) {
		e := conflict(codeMigrating, "name", fmt.Sprintf("instance %q is migrating (migration %s, %s in phase %s); it accepts no other operation until the migration ends",
			name, cur.ID, cur.State, cur.Phase))
		e.Instance, e.Migration = name, cur.ID
		return e
	}
	if err := g.checkNoRequest(c, name); err != nil {
		return err
	}
	var d events.InstanceDeclared
	var raw []byte
	err = g.db.pool.QueryRow(c, g.db.q.get("instance_declared_last"), name).Scan(&raw)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		d.Size.DisksMiB = []int64{in.DiskMiB} // the views know only the sum
	case err != nil:
		return fmt.Errorf("gateway: instance_declared_last: %w", err)
	default:
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("gateway: instance_declared_last: %w", err)
		}
	}
	d.Name, d.Owner = in.Name, in.Owner
	d.Size.MemoryMiB, d.Size.VCPUs = in.MemoryMiB, in.VCPUs
	d.Storage, d.RunState = events.StorageKind(in.Storage), events.RunState(in.RunState)
	d.PrimaryNode, d.SecondaryNode = in.Primary, in.Secondary
	d.Tags, d.UserMigration, d.MaxDowntimeMS = in.Tags, in.UserMigration, in.MaxDowntimeMS
	why, err := change(&d)
	if err != nil {
		return err
	}
	if reason != "" {
		why = reason
	}
	if err := g.append(c, "", who.Name, why, d); err != nil {
		return err
	}
	g.log.Info("instance restated", "instance", name, "account", who.Name, "why", why)
	g.answer(c, http.StatusAccepted, wire.InstanceChanged{Instance: name, Status: "accepted", Message: why,
		RunState: string(d.RunState), UserMigration: d.UserMigration, MaxDowntimeMS: d.MaxDowntimeMS})
	return nil
}

// postRunState is POST /v1/instances/{name}/stop and /start: an
// InstanceDeclared restating the instance with the new run state. Owners
// may stop and start their own instances; nobody may while it migrates.
func (g *Gateway) postRunState(state events.RunState) func(*gin.Context) error {
	return func(c *gin.Context) error {
		var b wire.Reason
		if err := decodeBody(c, &b, true); err != nil {
			return err
		}
		name := c.Param("name")
		return g.restate(c, callerOf(c), name, b.Reason, func(d *events.InstanceDeclared) (string, error) {
			if d.RunState == state {
				return "", conflict(codeConflict, "name", fmt.Sprintf("instance %q is already %s", name, state))
			}
			d.RunState = state
			verb := "stop"
			if state == events.RunRunning {
				verb = "start"
			}
			return verb + " " + name, nil
		})
	}
}
