package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
)

// Pause during a sync stops the send within 5 s; the migration then
// syncs and switches.
func TestZfsMigrationPauseStopsTheSend(t *testing.T) {
	z, log := startZfsMigrations(t)
	const name = "local-1"
	src := z.instance(name).Primary
	z.settings(map[string]any{"send_mbps_limit": 1})
	id := z.act(name, "begin", client.MigrateOptions{})
	z.awaitState(id, zfsMigrationWait, "paused")
	z.act(name, "sync", client.MigrateOptions{})
	z.awaitRecord(id, zfsMigrationWait, "a sync under way", func(m wire.InstanceMigration) bool {
		return m.State == "running" && m.Phase == "sync" && m.CurrentBytes > 0
	})
	paused := time.Now()
	z.act(name, "pause", client.MigrateOptions{})
	var stopped timedReport
	z.waitFor("the sync's send to stop", 30*time.Second, func() bool {
		rs := log.of(id)
		if len(rs) == 0 {
			return false
		}
		stopped = rs[0]
		return true
	})
	if took := stopped.at.Sub(paused); took > 5*time.Second {
		t.Errorf("the send stopped %s after the pause, want within 5 s", took)
	}
	if stopped.rep.Err == nil {
		t.Errorf("the paused sync ended without error, having sent %d bytes: it ran to its end", sent(stopped.rep))
	}
	// The record says paused at once; the sync counts as stopped only
	// when the pause phase has ended, and a sync asked for before that is
	// refused ("phase pause is still running").
	m := z.awaitRecord(id, zfsMigrationWait, "the sync stopped by the pause", func(m wire.InstanceMigration) bool {
		return m.State == "paused" && strings.Contains(m.Message, "sync 1 stopped")
	})
	t.Logf("paused %s after the request, %d bytes sent: %s", stopped.at.Sub(paused).Round(time.Millisecond), sent(stopped.rep), m.Message)
	z.settings(map[string]any{"send_mbps_limit": 0})
	z.act(name, "sync", client.MigrateOptions{})
	z.awaitRecord(id, zfsMigrationWait, "a complete sync", func(m wire.InstanceMigration) bool {
		return m.State == "paused" && m.Syncs >= 1
	})
	z.act(name, "switch", client.MigrateOptions{})
	m = z.awaitState(id, zfsMigrationWait, "successful", "failed")
	if m.State != "successful" {
		t.Fatalf("switch after the pause: %+v", m)
	}
	z.awaitPrimary(name, m.Target, time.Minute)
	z.switchedIntact(name, src, m.Target)
	z.baseIntact(m.Target, name)
}
