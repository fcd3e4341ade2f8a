package chain

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"

	"github.com/drovehq/drove/events"
)

// Checkpoint is a checkpoint as read from the log, with its own place.
type Checkpoint struct {
	events.CheckpointRecorded
	Partition int32 // of drove.checkpoints
	Offset    int64
}

// Break is the first place a partition differs from what its checkpoints
// certify.
type Break struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is the first record that differs, in the log verified; when
	// the log ends before what a checkpoint certifies, its end. For a
	// refused checkpoint, Offset is the checkpoint's own, in
	// drove.checkpoints (Checkpoint true).
	Offset     int64  `json:"offset"`
	Index      int64  `json:"index"` // the record's index in the partition's chain
	Checkpoint bool   `json:"checkpoint,omitempty"`
	Reason     string `json:"reason"`
}

func (b Break) String() string {
	where := fmt.Sprintf("%s/%d@%d (record %d)", b.Topic, b.Partition, b.Offset, b.Index)
	if b.Checkpoint {
		where = fmt.Sprintf("%s/%d@%d", events.TopicCheckpoints, b.Partition, b.Offset)
	}
	return where + ": " + b.Reason
}

// PartitionReport is what Verify found in one partition.
type PartitionReport struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Records     int64  `json:"records"`     // data records read
	Covered     int64  `json:"covered"`     // certified by a checkpoint
	Checkpoints int    `json:"checkpoints"` // distinct checkpoints
	Break       *Break `json:"break,omitempty"`
}

// Verify recomputes a partition's chain from its first record, in order,
// and checks it against the partition's checkpoints (in log order), each
// signed by pub when pub is not nil. It reports the first break: a record
// that differs from the one certified (altered, removed, inserted or
// reordered: the first record out of place), a log that ends before what
// was certified, or a checkpoint refused (another key, a broken chain of
// checkpoints). Records after the last checkpoint are read, not certified.
// With kept (the partition's newest head kept outside the log), a log or
// checkpoints that end before it are a break too (see checkHead).
func Verify(topic string, partition int32, recs []Record, cps []Checkpoint, pub ed25519.PublicKey, kept *Head) PartitionReport {
	rep := PartitionReport{Topic: topic, Partition: partition, Records: int64(len(recs))}
	cps, brk := checkCheckpoints(topic, partition, cps, pub)
	rep.Checkpoints = len(cps)
	if len(cps) > 0 {
		rep.Covered = min(cps[len(cps)-1].Records, rep.Records)
	}
	head := Genesis(topic, partition)
	j := 0
	var marks []byte
	for i, r := range recs {
		if j >= len(cps) {
			break
		}
		if marks == nil {
			marks, _ = base64.StdEncoding.DecodeString(cps[j].Marks) // checked by events' decode
		}
		d := Of(r)
		head = Link(head, d)
		at := (int64(i) - cps[j].First) * events.MarkSize
		if string(marks[at:at+events.MarkSize]) != string(d[:events.MarkSize]) {
			rep.Break = &Break{Topic: topic, Partition: partition, Offset: r.Offset, Index: int64(i),
				Reason: "the record differs from the one checkpointed (altered, removed, inserted or reordered here)"}
			return rep
		}
		if int64(i)+1 == cps[j].Records {
			if head.String() != cps[j].Head {
				rep.Break = &Break{Topic: topic, Partition: partition, Offset: r.Offset, Index: int64(i),
					Reason: fmt.Sprintf("the chain's head differs from checkpoint %s/%d@%d's", events.TopicCheckpoints, cps[j].Partition, cps[j].Offset)}
				return rep
			}
			j++
			marks = nil
		}
	}
	if j < len(cps) {
		end := int64(0)
		if len(recs) > 0 {
			end = recs[len(recs)-1].Offset + 1
		}
		rep.Break = &Break{Topic: topic, Partition: partition, Offset: end, Index: rep.Records,
			Reason: fmt.Sprintf("the log ends after %d records; checkpoints certify %d (records removed at the end)",
				rep.Records, cps[len(cps)-1].Records)}
		return rep
	}
	if brk != nil {
		rep.Break = brk
	} else if kept != nil {
		rep.Break = checkHead(*kept, recs, rep.Covered, pub)
	}
	return rep
}

// checkCheckpoints drops exact repeats (a notary that restarted before
// its append was confirmed writes one again), checks signatures, and that
// each checkpoint starts where the one before ended. It returns the
// checkpoints up to the first refused one, and why that one was refused.
func checkCheckpoints(topic string, partition int32, cps []Checkpoint, pub ed25519.PublicKey) ([]Checkpoint, *Break) {
	var out []Checkpoint
	next, prev := int64(0), Genesis(topic, partition).String()
	for _, c := range cps {
		if len(out) > 0 {
			last := out[len(out)-1]
			if c.First == last.First && c.Records == last.Records && c.Head == last.Head {
				continue
			}
		}
		refuse := func(why string) *Break {
			return &Break{Topic: topic, Partition: c.Partition, Offset: c.Offset, Index: c.First, Checkpoint: true,
				Reason: fmt.Sprintf("checkpoint of %s/%d refused: %s", topic, partition, why)}
		}
		if pub != nil {
			if err := CheckSignature(c.CheckpointRecorded, pub); err != nil {
				return out, refuse(err.Error())
			}
		}
		if c.First != next || c.Prev != prev {
			return out, refuse(fmt.Sprintf("it starts at record %d after head %.16s…, the checkpoints before end at %d after %.16s… (a checkpoint missing or forged)",
				c.First, c.Prev, next, prev))
		}
		out = append(out, c)
		next, prev = c.Records, c.Head
	}
	return out, nil
}
