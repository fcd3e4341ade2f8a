package zfs

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// When the content sums of the two sides differ, the target's answer
// also carries the block sums of the files it read this time, so that
// the source can say which files and blocks differ, and which side
// re-read a file the other took from its earlier sums.

const (
	diffFiles  = 64   // files carried at most
	diffBlocks = 8192 // blocks per file carried at most (1 GiB)
)

// readSums encodes the block sums (4 bytes each, in hex) of the files
// ts read, for the checksum's answer.
func (ts treeSum) readSums() string {
	out := map[string][]string{}
	for _, rel := range ts.read {
		if len(out) == diffFiles {
			break
		}
		var bs []string
		for _, b := range ts.files[rel].blocks[:min(len(ts.files[rel].blocks), diffBlocks)] {
			bs = append(bs, hex.EncodeToString(b[:4]))
		}
		out[rel] = bs
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// sumDiff says how the target's read sums (readSums) differ from ts.
func (ts treeSum) sumDiff(remote string) string {
	var theirs map[string][]string
	if err := json.Unmarshal([]byte(remote), &theirs); err != nil {
		return "the target sent no block sums"
	}
	var out []string
	seen := map[string]bool{}
	for _, rel := range ts.read {
		seen[rel] = true
		tb, ok := theirs[rel]
		if !ok {
			out = append(out, rel+" (read again here, its earlier sums taken there)")
			continue
		}
		var diff []string
		for i, b := range ts.files[rel].blocks[:min(len(ts.files[rel].blocks), diffBlocks)] {
			if i >= len(tb) || tb[i] != hex.EncodeToString(b[:4]) {
				diff = append(diff, fmt.Sprint(i))
			}
		}
		if len(tb) != len(ts.files[rel].blocks) {
			diff = append(diff, fmt.Sprintf("%d blocks here, %d there", len(ts.files[rel].blocks), len(tb)))
		}
		if len(diff) > 0 {
			out = append(out, fmt.Sprintf("%s (blocks %s)", rel, strings.Join(diff[:min(len(diff), 16)], ", ")))
		}
	}
	var only []string
	for rel := range theirs {
		if !seen[rel] {
			only = append(only, rel)
		}
	}
	slices.Sort(only)
	for _, rel := range only {
		out = append(out, rel+" (read again there, its earlier sums taken here)")
	}
	if len(out) == 0 {
		return "the files read again agree: a file taken from earlier sums differs"
	}
	return "differing: " + strings.Join(out, "; ")
}
