package zfs

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
)

// Features is what the local ZFS can do, detected at start. Old ZFS
// (zfs-fuse, pool version 23) has only Replicate.
type Features struct {
	// Replicate: `zfs send -R` (descendants, snapshots and properties).
	Replicate bool
	// Resumable: `zfs receive -s` leaves a receive_resume_token that
	// `zfs send -t` continues from.
	Resumable bool
	// Bookmarks: `zfs bookmark`, so the N-1 snapshot can be a bookmark.
	Bookmarks bool
	// SendEstimate: `zfs send -nP` prints the size a send would have.
	SendEstimate bool
	// Written: the `written@snap` property (bytes written since a snapshot).
	Written bool
	// SendStopsCleanly: a send stopped early (its pipe closed, or its zfs
	// command killed) releases its snapshot. zfs-fuse's daemon does not:
	// the snapshot stayed busy past 240 s in 1 of 16 early stops, and
	// every later destroy of it failed (an abort then ended failed,
	// operator action needed). Without it, a stopped send is read to its
	// end and dropped instead, so it ends on its own. Assumed of every
	// ZFS of the legacy pool versions, the side that costs time, not data.
	SendStopsCleanly bool
}

// Mode says, for progress messages, how a move copes with what is missing.
func (f Features) Mode() string {
	var parts []string
	if f.Replicate {
		parts = append(parts, "send -R")
	} else {
		parts = append(parts, "plain send (no -R)")
	}
	if f.Resumable {
		parts = append(parts, "resumable (token)")
	} else {
		parts = append(parts, "no resume tokens: an interrupted send restarts from the last received snapshot")
	}
	if f.Bookmarks {
		parts = append(parts, "bookmarks available (snapshots kept: this driver keeps N-1 as a snapshot)")
	} else {
		parts = append(parts, "no bookmarks: N-1 kept as a snapshot")
	}
	if f.SendEstimate {
		parts = append(parts, "size from send -nP")
	} else if f.Written {
		parts = append(parts, "size from written@snap")
	} else {
		parts = append(parts, "size estimated from used/referenced")
	}
	if !f.SendStopsCleanly {
		parts = append(parts, "a stopped send is read to its end (cutting one leaves its snapshot busy)")
	}
	return strings.Join(parts, "; ")
}

var flagsRe = regexp.MustCompile(`\[-([A-Za-z]+)\]`)

// usageFlags is every single-letter flag in a command's usage text.
func usageFlags(ctx context.Context, sub string) string {
	out, _ := exec.CommandContext(ctx, "zfs", sub).CombinedOutput()
	var flags strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), sub) {
			continue
		}
		for _, m := range flagsRe.FindAllStringSubmatch(line, -1) {
			flags.WriteString(m[1])
		}
		// Flags taking an argument: "[-t token]", "[-[iI] snapshot]".
		if strings.Contains(line, "-t <") || strings.Contains(line, "[-t ") || strings.Contains(line, " -t ") {
			flags.WriteString("t")
		}
	}
	return flags.String()
}

// Detect asks the local zfs what it can do. dataset is any existing
// dataset (the parent) to probe properties on.
func Detect(ctx context.Context, dataset string) Features {
	send, recvFlags := usageFlags(ctx, "send"), usageFlags(ctx, "receive")
	_, tokErr := prop(ctx, dataset, "receive_resume_token")
	_, wErr := run(ctx, "get", "-H", "-o", "value", "written", dataset)
	bm, _ := exec.CommandContext(ctx, "zfs", "bookmark").CombinedOutput()
	pools, _ := exec.CommandContext(ctx, "zpool", "upgrade", "-v").CombinedOutput()
	return Features{
		Replicate:    strings.Contains(send, "R"),
		Resumable:    tokErr == nil && strings.Contains(recvFlags, "s") && strings.Contains(send, "t"),
		Bookmarks:    !strings.Contains(string(bm), "unrecognized command"),
		SendEstimate: strings.Contains(send, "n") && strings.Contains(send, "P"),
		Written:      wErr == nil,
		// Feature-flag ZFS (OpenZFS) says so; the legacy one names its
		// pool version instead ("running ZFS pool version 23").
		SendStopsCleanly: strings.Contains(string(pools), "feature flags"),
	}
}
