package notary

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
)

// The heads file: each checkpoint's signed head (chain.Head), one JSON
// line each, appended by the notary once the checkpoint is in the log.
// It is where a cut tail shows: a log and its checkpoints cut after any
// checkpoint are a valid shorter log, so the proof of how far they
// reached must be kept where the log's owner cannot rewrite it.
//
// A file rather than a table in Postgres: Postgres holds the views,
// which are rebuilt from the log and run by the same operators as the
// brokers, while a file only ever appended to can leave their hands as
// it is written (a log shipper, a remote syslog, an append-only or
// object-locked store) and be given to an auditor with the notary's
// public key, who then needs no access to any of the system's services.
// Each line is a few hundred bytes, written every --interval for each
// partition that moved.

// heads appends signed heads to a file.
type heads struct {
	f *os.File
}

func openHeads(path string) (*heads, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("notary: the heads file: %w", err)
	}
	return &heads{f: f}, nil
}

// add appends the heads of cps and syncs them to disk.
func (h *heads) add(cps []events.Envelope) error {
	var b bytes.Buffer
	for _, e := range cps {
		p, err := e.DecodePayload()
		if err != nil {
			return err
		}
		line, err := json.Marshal(chain.HeadOf(p.(events.CheckpointRecorded)))
		if err != nil {
			return err
		}
		b.Write(append(line, '\n'))
	}
	if _, err := h.f.Write(b.Bytes()); err != nil {
		return fmt.Errorf("notary: the heads file: %w", err)
	}
	return h.f.Sync()
}

func (h *heads) Close() error { return h.f.Close() }

// ReadHeads reads a heads file and returns each partition's newest head
// (the one certifying the most records). A last line cut short (the
// notary stopped while writing it) is left out; any other line that is
// not a head is an error.
func ReadHeads(path string) (map[Partition]chain.Head, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("notary: the heads file: %w", err)
	}
	out := map[Partition]chain.Head{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var h chain.Head
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Topic == "" {
			if !bytes.HasSuffix(b, []byte("\n")) && int64(len(sc.Bytes())) > 0 && bytes.HasSuffix(b, sc.Bytes()) {
				break // the torn last line
			}
			return nil, fmt.Errorf("notary: %s line %d is not a signed head (%v)", path, n, err)
		}
		p := Partition{Topic: h.Topic, Partition: h.Partition}
		if old, ok := out[p]; !ok || h.Records > old.Records {
			out[p] = h
		}
	}
	return out, sc.Err()
}
