package notary

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/events/kafka"
)

// Report is what VerifyLog found.
type Report struct {
	// OK is true when no partition breaks: every record a checkpoint
	// certifies is in the log, unchanged and in its place, and every
	// checkpoint is accepted.
	OK bool `json:"ok"`
	// Breaks lists each broken partition's first break.
	Breaks     []chain.Break           `json:"breaks"`
	Partitions []chain.PartitionReport `json:"partitions"`
	// Records were read; Covered are certified by a checkpoint (the rest
	// came after the last one).
	Records int64 `json:"records"`
	Covered int64 `json:"covered"`
	Signed  bool  `json:"signed"` // signatures were checked against a key
	// Heads is the partitions checked against a signed head kept outside
	// the log (VerifyLog's heads), which is what sees a cut tail.
	Heads    int           `json:"heads"`
	Duration time.Duration `json:"duration"`
}

// VerifyLog reads every chained topic from offset zero and the
// checkpoints, and recomputes each partition's chain against them
// (chain.Verify); with pub, every checkpoint must be signed by it. With
// heads (ReadHeads: each partition's newest signed head kept outside the
// log), a log or checkpoints that end before a head are breaks too.
func VerifyLog(ctx context.Context, cfg kafka.Config, pub ed25519.PublicKey, heads map[Partition]chain.Head) (Report, error) {
	began := time.Now()
	rep := Report{OK: true, Breaks: []chain.Break{}, Signed: pub != nil, Heads: len(heads)}
	cps, err := ReadCheckpoints(ctx, cfg)
	if err != nil {
		return rep, err
	}
	recs, err := ReadRaw(ctx, cfg, ChainedTopics()...)
	if err != nil {
		return rep, err
	}
	parts := slices.Collect(maps.Keys(recs))
	for _, certified := range []map[Partition]bool{keys(cps), keys(heads)} {
		for p := range certified {
			if _, ok := recs[p]; !ok && !slices.Contains(parts, p) {
				parts = append(parts, p) // certified, and gone from the log
			}
		}
	}
	slices.SortFunc(parts, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, p := range parts {
		var kept *chain.Head
		if h, ok := heads[p]; ok {
			kept = &h
		}
		pr := chain.Verify(p.Topic, p.Partition, recs[p], cps[p], pub, kept)
		rep.Partitions = append(rep.Partitions, pr)
		rep.Records += pr.Records
		rep.Covered += pr.Covered
		if pr.Break != nil {
			rep.OK = false
			rep.Breaks = append(rep.Breaks, *pr.Break)
		}
	}
	rep.Duration = time.Since(began)
	return rep, nil
}

func keys[V any](m map[Partition]V) map[Partition]bool {
	out := map[Partition]bool{}
	for p := range m {
		out[p] = true
	}
	return out
}

// WriteText prints the report for people.
func (r Report) WriteText(w io.Writer) error {
	signed := "signatures not checked (no --key)"
	if r.Signed {
		signed = "every checkpoint signed by the key given"
	}
	_, err := fmt.Fprintf(w, "Read %d records in %d partitions in %s; %d certified by checkpoints, %d after the last one; %s.\n",
		r.Records, len(r.Partitions), r.Duration.Round(time.Millisecond), r.Covered, r.Records-r.Covered, signed)
	if r.Heads > 0 {
		fmt.Fprintf(w, "%d partitions checked against their newest signed head kept outside the log.\n", r.Heads)
	} else {
		fmt.Fprintln(w, "No heads file (--heads): a log cut at its end would not be seen.")
	}
	for _, b := range r.Breaks {
		fmt.Fprintf(w, "BREAK %s\n", b)
	}
	if r.OK {
		fmt.Fprintln(w, "The log is as the checkpoints certify it: no record altered, removed, inserted or reordered.")
	} else {
		fmt.Fprintln(w, "The log differs from what its checkpoints certify.")
	}
	return err
}
