package chain_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
)

// log builds n records at offsets 2i (a commit marker between each, as a
// transactional producer leaves them).
func log(n int) []chain.Record {
	var out []chain.Record
	for i := range n {
		out = append(out, chain.Record{Offset: int64(2 * i), TimestampMill: int64(1000 + i),
			Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Headers: []chain.Header{{Key: []byte("h"), Value: []byte("v")}}})
	}
	return out
}

// checkpoints chains recs and cuts a checkpoint every per records.
func checkpoints(recs []chain.Record, per int, key ed25519.PrivateKey) []chain.Checkpoint {
	b := chain.NewBuilder("drove.requests", 1)
	var out []chain.Checkpoint
	for i, r := range recs {
		b.Add(r)
		if (i+1)%per == 0 || i == len(recs)-1 {
			c, _ := b.Cut()
			if key != nil {
				signAsTheNotary(&c, key)
			}
			out = append(out, chain.Checkpoint{CheckpointRecorded: c, Offset: int64(len(out))})
		}
	}
	return out
}

// signAsTheNotary signs c the way the notary does (projector/notary),
// which this package must not import: ed25519 over SignedBytes.
func signAsTheNotary(c *events.CheckpointRecorded, key ed25519.PrivateKey) {
	c.KeyID = chain.KeyID(key.Public().(ed25519.PublicKey))
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, chain.SignedBytes(*c)))
}

func TestVerifyNamesTheFirstBreak(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	orig := log(20)
	cps := checkpoints(orig, 7, key)
	// Resuming from the last checkpoint goes on with the same chain.
	res, err := chain.Resume(cps[len(cps)-1].CheckpointRecorded)
	if err != nil || res.Records != 20 || res.NextOffset != 39 {
		t.Fatalf("Resume = %+v, %v", res, err)
	}

	tests := []struct {
		name   string
		edit   func([]chain.Record) []chain.Record
		cps    []chain.Checkpoint
		offset int64 // -1: no break
		index  int64
		why    string
	}{
		{"untouched", func(r []chain.Record) []chain.Record { return r }, cps, -1, 0, ""},
		{"altered", func(r []chain.Record) []chain.Record {
			r[9].Value = []byte(`{"n":999}`)
			return r
		}, cps, 18, 9, "differs"},
		{"removed", func(r []chain.Record) []chain.Record {
			r = slices.Delete(r, 4, 5)
			for i := 4; i < len(r); i++ {
				r[i].Offset -= 2 // a copy without the record: later offsets close up
			}
			return r
		}, cps, 8, 4, "differs"},
		{"swapped", func(r []chain.Record) []chain.Record {
			r[12].Key, r[13].Key = r[13].Key, r[12].Key
			r[12].Value, r[13].Value = r[13].Value, r[12].Value
			r[12].TimestampMill, r[13].TimestampMill = r[13].TimestampMill, r[12].TimestampMill
			return r
		}, cps, 24, 12, "differs"},
		{"header changed", func(r []chain.Record) []chain.Record {
			r[0].Headers = nil
			return r
		}, cps, 0, 0, "differs"},
		{"truncated", func(r []chain.Record) []chain.Record { return r[:18] }, cps, 35, 18, "ends after 18"},
		{"other key", func(r []chain.Record) []chain.Record { return r }, checkpoints(orig, 7, other), 0, 0, "signed with key"},
		{"unsigned", func(r []chain.Record) []chain.Record { return r }, checkpoints(orig, 7, nil), 0, 0, "unsigned"},
		{"checkpoint missing", func(r []chain.Record) []chain.Record { return r }, slices.Delete(slices.Clone(cps), 1, 2), 2, 14, "missing or forged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.edit(slices.Clone(orig))
			for i := range recs {
				recs[i].Headers = slices.Clone(recs[i].Headers)
			}
			rep := chain.Verify("drove.requests", 1, recs, tc.cps, pub, nil)
			if tc.offset < 0 {
				if rep.Break != nil || rep.Covered != 20 || rep.Checkpoints != 3 {
					t.Fatalf("untouched log: %+v, break %v", rep, rep.Break)
				}
				return
			}
			b := rep.Break
			if b == nil || b.Offset != tc.offset || b.Index != tc.index || !strings.Contains(b.Reason, tc.why) {
				t.Fatalf("break %v, want at offset %d (record %d): %q", b, tc.offset, tc.index, tc.why)
			}
		})
	}
}

// TestRepeatedCheckpointIsNoBreak: a notary that appends a checkpoint
// again after a restart certifies nothing new and breaks nothing.
func TestRepeatedCheckpointIsNoBreak(t *testing.T) {
	recs := log(5)
	cps := checkpoints(recs, 2, nil)
	cps = append(cps[:2], append([]chain.Checkpoint{cps[1]}, cps[2:]...)...)
	if rep := chain.Verify("drove.requests", 1, recs, cps, nil, nil); rep.Break != nil || rep.Checkpoints != 3 {
		t.Fatalf("%+v %v", rep, rep.Break)
	}
}

// TestKeptHeadSeesACutTail: a log cut after one of its checkpoints, with
// the checkpoints after it, verifies on its own; the newest signed head
// kept outside the log names what is missing.
func TestKeptHeadSeesACutTail(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	orig := log(20)
	cps := checkpoints(orig, 7, key)
	head := chain.HeadOf(cps[len(cps)-1].CheckpointRecorded)
	foreign := chain.HeadOf(checkpoints(orig, 7, other)[2].CheckpointRecorded)
	altered := slices.Clone(orig)
	altered[3].Value = []byte(`{"n":333}`)
	tests := []struct {
		name  string
		recs  []chain.Record
		cps   []chain.Checkpoint
		head  chain.Head
		index int64 // -1: no break
		why   string
	}{
		{"untouched", orig, cps, head, -1, ""},
		{"checkpoints cut at the end", orig, cps[:2], head, 14, "drove.checkpoints ends at record 14"},
		{"checkpoints removed", orig, nil, head, 0, "drove.checkpoints ends at record 0"},
		{"log and checkpoints cut at the end", orig[:14], cps[:2], head, 14, "the log ends after 14 records; the signed head kept outside the log certifies 20"},
		{"log rewritten, checkpoints removed", altered, nil, head, 19, "differs from the signed head"},
		{"head of another key", orig, cps, foreign, 20, "signed with key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The point: each log here verifies without the head.
			if rep := chain.Verify("drove.requests", 1, tc.recs, tc.cps, pub, nil); rep.Break != nil {
				t.Fatalf("without the head: %v", rep.Break)
			}
			rep := chain.Verify("drove.requests", 1, tc.recs, tc.cps, pub, &tc.head)
			if tc.index < 0 {
				if rep.Break != nil {
					t.Fatalf("break %v", rep.Break)
				}
				return
			}
			if b := rep.Break; b == nil || b.Index != tc.index || !strings.Contains(b.Reason, tc.why) {
				t.Fatalf("break %v, want at record %d: %q", b, tc.index, tc.why)
			}
		})
	}
}
