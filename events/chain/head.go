package chain

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/drovehq/drove/events"
)

// Head is a signed checkpoint without its marks, kept outside the log
// (the notary's heads file): a chain alone cannot show that its end was
// cut off, since a log cut after any checkpoint is a valid shorter log.
// A head kept where the log's owner cannot rewrite it says how far the
// log and its checkpoints reached. Its signature is the checkpoint's
// own, checked over the same bytes with the marks' SHA-256 in their
// place.
type Head struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	First       int64  `json:"first"`
	Records     int64  `json:"records"`
	FromOffset  int64  `json:"from_offset"`
	NextOffset  int64  `json:"next_offset"`
	Prev        string `json:"prev"`
	Head        string `json:"head"`
	MarksSHA256 string `json:"marks_sha256"`
	KeyID       string `json:"key_id,omitempty"`
	Signature   string `json:"signature,omitempty"`
}

// HeadOf is checkpoint c's head.
func HeadOf(c events.CheckpointRecorded) Head {
	marks := sha256.Sum256([]byte(c.Marks))
	return Head{Topic: c.Topic, Partition: c.Partition, First: c.First, Records: c.Records,
		FromOffset: c.FromOffset, NextOffset: c.NextOffset, Prev: c.Prev, Head: c.Head,
		MarksSHA256: hex.EncodeToString(marks[:]), KeyID: c.KeyID, Signature: c.Signature}
}

// CheckHeadSignature refuses a head not signed by pub, as CheckSignature
// refuses a checkpoint.
func CheckHeadSignature(h Head, pub ed25519.PublicKey) error {
	marks, err := hex.DecodeString(h.MarksSHA256)
	if err != nil || len(marks) != sha256.Size {
		return fmt.Errorf("%w: marks_sha256 %q is not a hex SHA-256", ErrSignature, h.MarksSHA256)
	}
	c := events.CheckpointRecorded{Topic: h.Topic, Partition: h.Partition, First: h.First, Records: h.Records,
		FromOffset: h.FromOffset, NextOffset: h.NextOffset, Prev: h.Prev, Head: h.Head, KeyID: h.KeyID}
	return checkSigned(h.KeyID, h.Signature, signedBytes(c, marks), pub)
}

// checkHead is the first break between a partition and its newest head
// kept outside the log: the head refused (with pub), the log ending
// before the records it certifies, the chain over them differing from
// it, or the log's checkpoints (covered: how many records the accepted
// ones certify) ending before it.
func checkHead(h Head, recs []Record, covered int64, pub ed25519.PublicKey) *Break {
	brk := func(offset, index int64, why string, args ...any) *Break {
		return &Break{Topic: h.Topic, Partition: h.Partition, Offset: offset, Index: index,
			Reason: fmt.Sprintf(why, args...)}
	}
	end := int64(0)
	if len(recs) > 0 {
		end = recs[len(recs)-1].Offset + 1
	}
	if pub != nil {
		if err := CheckHeadSignature(h, pub); err != nil {
			return brk(end, h.Records, "the signed head kept outside the log is refused: %v", err)
		}
	}
	if int64(len(recs)) < h.Records {
		return brk(end, int64(len(recs)), "the log ends after %d records; the signed head kept outside the log certifies %d (records removed at the end)",
			len(recs), h.Records)
	}
	head := Genesis(h.Topic, h.Partition)
	for _, r := range recs[:h.Records] {
		head = Link(head, Of(r))
	}
	if head.String() != h.Head {
		at := int64(0)
		if h.Records > 0 {
			at = recs[h.Records-1].Offset
		}
		return brk(at, h.Records-1, "the chain over the first %d records differs from the signed head kept outside the log", h.Records)
	}
	if covered < h.Records {
		return brk(recs[covered].Offset, covered, "%s ends at record %d of this partition; the signed head kept outside the log certifies %d (checkpoints removed at the end)",
			events.TopicCheckpoints, covered, h.Records)
	}
	return nil
}
