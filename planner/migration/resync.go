package migration

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

// The settings in force are the last SettingsChanged on drove.settings
// (events.DefaultSettings before any); State.Apply folds them. They
// are read at each decision, so a change applies to running migrations at
// their next step: the re-sync rule at the next sync's end, the slot limit
// at the next start, the progress timeout at the next tick. The send rate
// cap of a phase already running is the executor's to follow (it reads
// drove.settings too).

// verdict is the re-sync rule's answer.
type verdict struct {
	// Switch says switch now.
	Switch bool
	// Stalled says why more syncs will not help, "" when they may: the
	// syncs allowed are spent or the size stopped shrinking (the downtime
	// budget fails a migration that still does not fit then).
	Stalled string
	// Why is for the record's message.
	Why string
}

// switchNow is RFD 34's re-sync rule over the sizes of the syncs so far
// (the first is the full send): switch when the last sync sent less than
// ResyncMaxBytes, after ResyncMaxSyncs syncs, or when the size stopped
// shrinking over the last ResyncShrinkWindow syncs (the last is no
// smaller than the one that many passes before it).
func switchNow(sizes []int64, s events.SettingsChanged) verdict {
	n := len(sizes)
	if n == 0 {
		return verdict{Why: "no sync yet"}
	}
	last, w := sizes[n-1], s.ResyncShrinkWindow
	v := verdict{Switch: true}
	switch {
	case n >= s.ResyncMaxSyncs:
		v.Stalled = fmt.Sprintf("%d syncs done, the most the settings allow", n)
	case w > 0 && n > w && last >= sizes[n-1-w]:
		v.Stalled = fmt.Sprintf("the sync size stopped shrinking over the last %d syncs (%d, then %d bytes)",
			w, sizes[n-1-w], last)
	}
	switch {
	case last < s.ResyncMaxBytes:
		v.Why = fmt.Sprintf("the last sync sent %d bytes, under %d", last, s.ResyncMaxBytes)
	case v.Stalled != "":
		v.Why = v.Stalled
	default:
		v = verdict{Why: fmt.Sprintf("the last sync sent %d bytes; syncing again", last)}
	}
	return v
}

// Rehearse runs the re-sync rule over the syncs a model predicts, for
// the estimate: the first sends data bytes, each next what the instance
// dirtied (dirty bytes/s) while the one before it sent at link bytes/s.
// It gives the syncs' sizes and the final delta, what the last sync's
// time dirtied. The rule judges a sync by what it sent, so a full send
// is always followed by a re-sync unless it was under ResyncMaxBytes
// itself; the estimate once judged the next sync's size instead, and
// predicted the first sync's dirt (10 MB for 1 GiB) as the final delta.
func Rehearse(data, link, dirty float64, s events.SettingsChanged) (sizes []float64, finalDelta float64) {
	sizes = []float64{data}
	whole := []int64{int64(data)}
	for len(sizes) < maxRehearsed && !switchNow(whole, s).Switch {
		next := dirty * sizes[len(sizes)-1] / link
		sizes, whole = append(sizes, next), append(whole, int64(next))
	}
	return sizes, dirty * sizes[len(sizes)-1] / link
}

// maxRehearsed bounds Rehearse where the settings would not (no sync
// limit, no shrink window, a dirty rate above the link's).
const maxRehearsed = 1000
