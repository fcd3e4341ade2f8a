package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// Per-instance migrations (RFD 34) and the settings that govern them.

// MigrateOptions are the optional inputs of a migration action, sent as
// a wire.MigrateBody.
type MigrateOptions struct {
	Target      string
	Affinity    []string
	ScheduledAt *time.Time
	Reason      string
	// MaxDowntimeMS is the downtime budget asked for (nil: the settings')
	MaxDowntimeMS *int64
}

func (o MigrateOptions) body() wire.MigrateBody {
	b := wire.MigrateBody{Target: o.Target, Affinity: o.Affinity, Reason: o.Reason, MaxDowntimeMS: o.MaxDowntimeMS}
	if o.ScheduledAt != nil {
		b.ScheduledAt = o.ScheduledAt.Format(time.RFC3339Nano)
	}
	return b
}

func migratePath(instance, action string) string {
	return "/v1/instances/" + url.PathEscape(instance) + "/migrate?action=" + url.QueryEscape(action)
}

// Migrate runs an action on the instance's migration (all but schedule
// and estimate, which have their own methods).
func (c *Client) Migrate(ctx context.Context, instance, action string, o MigrateOptions) (*wire.MigrateAnswer, error) {
	var a wire.MigrateAnswer
	_, err := c.Do(ctx, http.MethodPost, migratePath(instance, action), o.body(), &a)
	return &a, err
}

// Schedule begins and syncs a migration now and switches it at o.ScheduledAt
// (or changes the time of the instance's scheduled migration).
func (c *Client) Schedule(ctx context.Context, instance string, o MigrateOptions) (*wire.InstanceMigration, error) {
	var m wire.InstanceMigration
	_, err := c.Do(ctx, http.MethodPost, migratePath(instance, "schedule"), o.body(), &m)
	return &m, err
}

// Estimate says how long a migration of the instance would take.
func (c *Client) Estimate(ctx context.Context, instance string, o MigrateOptions) (*wire.Estimate, error) {
	var e wire.Estimate
	_, err := c.Do(ctx, http.MethodPost, migratePath(instance, "estimate"), o.body(), &e)
	return &e, err
}

// MigrationFilter selects migrations; empty fields select all.
type MigrationFilter struct {
	State, Instance, Owner, Node string
}

// Migrations lists every per-instance migration the filter selects,
// following pages.
func (c *Client) Migrations(ctx context.Context, f MigrationFilter) ([]wire.InstanceMigration, error) {
	return listMigrations[wire.InstanceMigration](ctx, c, "instance", f)
}

// Moves lists every move of a bulk request the filter selects, as
// /v1/migrations shows them (kind opcode), following pages.
func (c *Client) Moves(ctx context.Context, f MigrationFilter) ([]wire.Move, error) {
	return listMigrations[wire.Move](ctx, c, "opcode", f)
}

func listMigrations[T any](ctx context.Context, c *Client, kind string, f MigrationFilter) ([]T, error) {
	q := url.Values{"kind": {kind}}
	for k, v := range map[string]string{"state": f.State, "instance": f.Instance, "owner": f.Owner, "node": f.Node} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out []T
	err := eachItem(ctx, c, "/v1/migrations", q, 1000, func(m T, _ json.RawMessage) error {
		out = append(out, m)
		return nil
	})
	return out, err
}

// Migration reads one per-instance migration's record with its progress
// history.
func (c *Client) Migration(ctx context.Context, id string) (*wire.InstanceMigration, error) {
	var m wire.InstanceMigration
	err := c.Get(ctx, "/v1/migrations/"+url.PathEscape(id), &m)
	return &m, err
}

// WatchMigration follows the instance's current migration (or migration
// id, when given) and calls fn for each line until fn returns false or
// the stream ends (after the end line of a final phase or a pause).
func (c *Client) WatchMigration(ctx context.Context, instance, id string, fn func(wire.MigrationLine) bool) error {
	path := "/v1/instances/" + url.PathEscape(instance) + "/migrate/watch"
	if id != "" {
		path += "?migration=" + url.QueryEscape(id)
	}
	return c.Watch(ctx, path, func(ev Event) bool {
		var m wire.MigrationLine
		if json.Unmarshal(ev.Raw, &m) != nil || (m.Type != "progress" && m.Type != "end") {
			return true
		}
		return fn(m)
	})
}

// Settings reads the operators' migration settings in force: the whole
// SettingsChanged event.
func (c *Client) Settings(ctx context.Context) (*events.SettingsChanged, error) {
	var s events.SettingsChanged
	err := c.Get(ctx, "/v1/settings", &s)
	return &s, err
}

// UpdateSettings changes the settings named in changes (JSON names) and
// returns the whole settings now in force.
func (c *Client) UpdateSettings(ctx context.Context, changes map[string]any) (*events.SettingsChanged, error) {
	var s events.SettingsChanged
	_, err := c.Do(ctx, http.MethodPut, "/v1/settings", changes, &s)
	return &s, err
}

// SetUserMigration overrides (true, false) or clears (nil) whether the
// instance's owner may migrate it.
func (c *Client) SetUserMigration(ctx context.Context, instance string, allowed *bool) error {
	_, err := c.Do(ctx, http.MethodPut, "/v1/instances/"+url.PathEscape(instance)+"/user-migration",
		wire.UserMigration{Allowed: allowed}, nil)
	return err
}

// SetMaxDowntime sets the instance's own downtime budget in milliseconds,
// over the settings' (0: follow the settings').
func (c *Client) SetMaxDowntime(ctx context.Context, instance string, ms int64, reason string) (*wire.InstanceChanged, error) {
	var out wire.InstanceChanged
	_, err := c.Do(ctx, http.MethodPut, "/v1/instances/"+url.PathEscape(instance)+"/max-downtime",
		wire.InstanceBudget{MaxDowntimeMS: ms, Reason: reason}, &out)
	return &out, err
}

// Instance reads one instance as the views hold it.
func (c *Client) Instance(ctx context.Context, name string) (*wire.Instance, error) {
	var out wire.Instance
	err := c.Get(ctx, "/v1/instances/"+url.PathEscape(name), &out)
	return &out, err
}

// Stop and Start change an instance's run state.
func (c *Client) Stop(ctx context.Context, instance string) error {
	_, err := c.Do(ctx, http.MethodPost, "/v1/instances/"+url.PathEscape(instance)+"/stop", struct{}{}, nil)
	return err
}

func (c *Client) Start(ctx context.Context, instance string) error {
	_, err := c.Do(ctx, http.MethodPost, "/v1/instances/"+url.PathEscape(instance)+"/start", struct{}{}, nil)
	return err
}
