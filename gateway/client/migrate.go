package client

import (
	"github.com/drovehq/drove/events"

	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Per-instance migrations (RFD 34) and the settings that govern them.

// MigrateOptions are the optional inputs of a migration action.
type MigrateOptions struct {
	Target      string     `json:"target,omitempty"`
	Affinity    []string   `json:"affinity,omitempty"`
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"`
	Reason      string     `json:"reason,omitempty"`
}

// MigrateAccepted is the answer to begin, sync, switch, automatic, abort,
// pause, rollback and finalize.
type MigrateAccepted struct {
	Migration string `json:"migration"`
	Instance  string `json:"instance"`
	Action    string `json:"action"`
	Status    string `json:"status"`
	Message   string `json:"message"`
}

// Migration is RFD 34's migration record (per-instance migrations have
// kind "instance"; moves of bulk requests kind "opcode").
type Migration struct {
	ID             string     `json:"id"`
	Kind           string     `json:"kind"`
	Instance       string     `json:"instance"`
	Account        string     `json:"account"`
	Role           string     `json:"role"`
	Owner          string     `json:"owner"`
	Source         string     `json:"source_server"`
	Target         string     `json:"target_server"`
	Automatic      bool       `json:"automatic"`
	State          string     `json:"state"`
	Phase          string     `json:"phase"`
	Syncs          int        `json:"num_sync_phases"`
	LastSyncSize   int64      `json:"last_sync_size"`
	ScheduledAt    *time.Time `json:"scheduled_timestamp"`
	Switched       bool       `json:"switched"`
	Finalized      bool       `json:"finalized"`
	PhaseRunning   bool       `json:"phase_running"`
	Message        string     `json:"message"`
	Error          string     `json:"error"`
	ErrorDetail    string     `json:"error_detail"`
	CreatedAt      *time.Time `json:"created_timestamp"`
	StartedAt      *time.Time `json:"started_timestamp"`
	FinishedAt     *time.Time `json:"finished_timestamp"`
	Current        int64      `json:"current_progress"`
	Total          int64      `json:"total_progress"`
	ETASeconds     float64    `json:"eta_seconds"`
	BytesPerSecond int64      `json:"transfer_bytes_second"`
	// DowntimeMS and WorkloadDowntimeMS are the latest switch's downtime,
	// Drove's figure and the workload's own; 0 before one.
	DowntimeMS         int64             `json:"downtime_ms"`
	WorkloadDowntimeMS int64             `json:"workload_downtime_ms"`
	History            []json.RawMessage `json:"progress_history"`
}

// Estimate is the answer to action=estimate.
type Estimate struct {
	TotalSeconds    float64 `json:"total_seconds"`
	DowntimeSeconds float64 `json:"downtime_seconds"`
	Bytes           int64   `json:"bytes"`
	How             string  `json:"how"`
}

func migratePath(instance, action string) string {
	return "/v1/instances/" + url.PathEscape(instance) + "/migrate?action=" + url.QueryEscape(action)
}

// Migrate runs an action on the instance's migration (all but schedule
// and estimate, which have their own methods).
func (c *Client) Migrate(ctx context.Context, instance, action string, o MigrateOptions) (*MigrateAccepted, error) {
	var a MigrateAccepted
	_, err := c.Do(ctx, http.MethodPost, migratePath(instance, action), o, &a)
	return &a, err
}

// Schedule begins and syncs a migration now and switches it at o.ScheduledAt
// (or changes the time of the instance's scheduled migration).
func (c *Client) Schedule(ctx context.Context, instance string, o MigrateOptions) (*Migration, error) {
	var m Migration
	_, err := c.Do(ctx, http.MethodPost, migratePath(instance, "schedule"), o, &m)
	return &m, err
}

// Estimate says how long a migration of the instance would take.
func (c *Client) Estimate(ctx context.Context, instance string, o MigrateOptions) (*Estimate, error) {
	var e Estimate
	_, err := c.Do(ctx, http.MethodPost, migratePath(instance, "estimate"), o, &e)
	return &e, err
}

// MigrationFilter selects migrations; empty fields select all.
type MigrationFilter struct {
	Kind, State, Instance, Owner, Node string
}

// Migrations lists every migration the filter selects, following pages.
func (c *Client) Migrations(ctx context.Context, f MigrationFilter) ([]Migration, error) {
	var out []Migration
	after := ""
	for {
		q := url.Values{"limit": {"1000"}}
		for k, v := range map[string]string{"kind": f.Kind, "state": f.State, "instance": f.Instance, "owner": f.Owner, "node": f.Node, "after": after} {
			if v != "" {
				q.Set(k, v)
			}
		}
		var page struct {
			Items []Migration `json:"items"`
			Next  string      `json:"next"`
		}
		if err := c.Get(ctx, "/v1/migrations?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}

// Migration reads one migration record with its progress history.
func (c *Client) Migration(ctx context.Context, id string) (*Migration, error) {
	var m Migration
	err := c.Get(ctx, "/v1/migrations/"+url.PathEscape(id), &m)
	return &m, err
}

// MigrationEvent is one line of a migration watch stream.
type MigrationEvent struct {
	Type      string     `json:"type"` // progress or end
	Migration string     `json:"migration"`
	Seq       int64      `json:"seq"`
	Time      time.Time  `json:"time"`
	Index     int        `json:"index"`
	Phase     string     `json:"phase"`
	State     string     `json:"state"`
	Current   int64      `json:"current_progress"`
	Total     int64      `json:"total_progress"`
	Percent   *float64   `json:"percent"`
	Message   string     `json:"message"`
	Error     string     `json:"error"`
	Started   *time.Time `json:"started_timestamp"`
	Duration  int64      `json:"duration_ms"`
	ETA       int64      `json:"eta_ms"`
	Rate      int64      `json:"transfer_bytes_second"`
}

// WatchMigration follows the instance's current migration (or migration
// id, when given) and calls fn for each event until fn returns false or
// the stream ends (after the end event of a final phase or a pause).
func (c *Client) WatchMigration(ctx context.Context, instance, id string, fn func(MigrationEvent) bool) error {
	path := "/v1/instances/" + url.PathEscape(instance) + "/migrate/watch"
	if id != "" {
		path += "?migration=" + url.QueryEscape(id)
	}
	return c.Watch(ctx, path, func(ev Event) bool {
		var m MigrationEvent
		if json.Unmarshal(ev.Raw, &m) != nil || (m.Type != "progress" && m.Type != "end") {
			return true
		}
		return fn(m)
	})
}

// Settings are the operators' migration settings, as the API shows them:
// the whole SettingsChanged event in force.
type Settings = events.SettingsChanged

// Settings reads the settings in force.
func (c *Client) Settings(ctx context.Context) (*Settings, error) {
	var s Settings
	err := c.Get(ctx, "/v1/settings", &s)
	return &s, err
}

// UpdateSettings changes the settings named in changes (JSON names) and
// returns the whole settings now in force.
func (c *Client) UpdateSettings(ctx context.Context, changes map[string]any) (*Settings, error) {
	var s Settings
	_, err := c.Do(ctx, http.MethodPut, "/v1/settings", changes, &s)
	return &s, err
}

// SetUserMigration overrides (true, false) or clears (nil) whether the
// instance's owner may migrate it.
func (c *Client) SetUserMigration(ctx context.Context, instance string, allowed *bool) error {
	_, err := c.Do(ctx, http.MethodPut, "/v1/instances/"+url.PathEscape(instance)+"/user-migration",
		map[string]*bool{"allowed": allowed}, nil)
	return err
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
