package events

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// Tamper evidence (issue 15). The notary reads every partition of every
// other topic in order and appends, now and then, a checkpoint of each:
// the head of a hash chain over every event record's stored bytes up to
// an offset, optionally signed with the operator's ed25519 key.
// events/chain defines the hashes; `drove verify-log` recomputes them.

// TopicCheckpoints holds the notary's checkpoints. Keyed by the partition
// a checkpoint covers ("drove.requests/0"), so each partition's
// checkpoints are in order. The notary does not chain this topic: each
// checkpoint names the one before it (Prev) and is signed.
const TopicCheckpoints = "drove.checkpoints"

// TypeCheckpointRecorded is the notary's checkpoint.
const TypeCheckpointRecorded = "log.checkpoint_recorded"

// CheckpointRecorded certifies records [First, Records) of a partition:
// the data records (commit markers are not events and not chained), counted
// from the partition's first, at offsets [FromOffset, NextOffset).
type CheckpointRecorded struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// First is the index of the first record covered; Records the
	// number of records chained from the partition's start through the
	// last one covered.
	First   int64 `json:"first"`
	Records int64 `json:"records"`
	// FromOffset and NextOffset are where the covered records were
	// read: the first one's offset and the offset after the last.
	FromOffset int64 `json:"from_offset"`
	NextOffset int64 `json:"next_offset"`
	// Prev is the chain's head before record First (the previous
	// checkpoint's Head, or the partition's genesis); Head after the
	// last record covered. Hex SHA-256.
	Prev string `json:"prev"`
	Head string `json:"head"`
	// Marks are the first 8 bytes of each covered record's digest, in
	// order, base64: they let a verifier name the first record that
	// differs, where the head alone says only that one does.
	Marks string `json:"marks"`
	// KeyID names the signing key (hex of the first 8 bytes of SHA-256 of
	// the public key) and Signature is ed25519 over the checkpoint's
	// signed bytes (chain.SignedBytes), base64; both empty when unsigned.
	KeyID     string `json:"key_id,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// MarkSize is the bytes of a record's digest a checkpoint keeps.
const MarkSize = 8

func (CheckpointRecorded) Type() string { return TypeCheckpointRecorded }
func (CheckpointRecorded) Version() int { return 1 }
func (c CheckpointRecorded) key() string {
	return c.Topic + "/" + strconv.Itoa(int(c.Partition))
}

func (c CheckpointRecorded) check(p *problems) {
	if c.Topic == "" {
		p.addf("topic", "missing")
	}
	nonNegative(p, "partition", int64(c.Partition))
	nonNegative(p, "first", c.First)
	if c.Records <= c.First {
		p.addf("records", "%d, want more than first (%d)", c.Records, c.First)
	}
	nonNegative(p, "from_offset", c.FromOffset)
	if c.NextOffset <= c.FromOffset {
		p.addf("next_offset", "%d, want more than from_offset (%d)", c.NextOffset, c.FromOffset)
	}
	sha256Hex(p, "prev", c.Prev)
	sha256Hex(p, "head", c.Head)
	marks, err := base64.StdEncoding.DecodeString(c.Marks)
	if err != nil || int64(len(marks)) != (c.Records-c.First)*MarkSize {
		p.addf("marks", "want %d bytes of base64, %d per record", (c.Records-c.First)*MarkSize, MarkSize)
	}
	if (c.KeyID == "") != (c.Signature == "") {
		p.addf("signature", "key_id and signature go together")
	}
}

func sha256Hex(p *problems, field, h string) {
	if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
		p.addf(field, "not a hex SHA-256")
	}
}
