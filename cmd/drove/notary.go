package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/deploy/supervise"
	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/projector/notary"
)

func runNotary(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "keygen" {
		return runNotaryKeygen(args[1:], stdout, stderr)
	}
	fs := newFlagSet("notary", `
Usage: drove notary [flags]
       drove notary keygen FILE

Tamper evidence: reads every partition of every topic in order, chains each
record's stored bytes (SHA-256), and appends every --interval a checkpoint
of each partition that moved to drove.checkpoints, signed with --key (an
ed25519 key file, mode 0600) when given. 'drove verify-log' checks the log
against them. keygen writes a new key to FILE (0600) and FILE.pub.

With --heads FILE, each checkpoint's signed head is also appended to FILE
(one JSON line, once the checkpoint is in the log). A log cut at its end,
with its checkpoints, still verifies on its own; 'drove verify-log --heads'
sees it. Ship FILE off the brokers' hosts as it is written (a log shipper,
remote syslog, an append-only or object-locked store), where whoever can
rewrite the log cannot rewrite it.`, stderr)
	var sf serviceFlags
	sf.register(fs, false)
	keyFile := fs.String("key", "", "ed25519 private key to sign checkpoints with (PEM, mode 0600); empty: unsigned")
	interval := fs.Duration("interval", 10*time.Second, "how often each partition that moved gets a checkpoint")
	headsFile := fs.String("heads", "", "append each checkpoint's signed head to this file, to be kept off the brokers' hosts; empty: none")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	ctx, stop := signalContext()
	defer stop()
	log := sf.logger(stderr)
	var key ed25519.PrivateKey
	if *keyFile != "" {
		k, err := notary.LoadKey(*keyFile)
		if err != nil {
			return fail(stderr, "notary", err)
		}
		key = k
	}
	serveMetrics(ctx, sf.metricsAddr, newRegistry(), log)
	err := supervise.Run(ctx, supervise.Part{Name: "notary", Log: log}, func(ctx context.Context) error {
		return notary.Run(ctx, notary.Config{Kafka: sf.kafka("drove-notary"), Key: key, Interval: *interval, Heads: *headsFile, Logger: log})
	})
	if err != nil {
		return fail(stderr, "notary", err)
	}
	return exitOK
}

func runNotaryKeygen(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "Usage: drove notary keygen FILE")
		return exitUsage
	}
	pub, err := notary.GenerateKey(args[0])
	if err != nil {
		return fail(stderr, "notary keygen", err)
	}
	fmt.Fprintf(stdout, "Wrote %s (private, 0600) and %s.pub; key id %s\n", args[0], args[0], chain.KeyID(pub))
	return exitOK
}

func runVerifyLog(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify-log", `
Usage: drove verify-log [flags]

Proves the log was not altered up to its last checkpoint: reads every topic
from offset zero, recomputes each partition's hash chain over the records'
stored bytes, and checks it against the notary's checkpoints
(drove.checkpoints), each signed with --key when given (a public key file,
or the private one). Names the first break of each partition by topic,
partition and offset: a record altered, removed, inserted or reordered, a
log that ends before what was certified, or a checkpoint refused (signed
with another key, unsigned, or missing from the chain of checkpoints).

Exit status 0 when the log is as certified, 3 when it is not, 1 when the
log cannot be read, 2 on a usage error.`, stderr)
	var sf serviceFlags
	sf.register(fs, false)
	keyFile := fs.String("key", "", "the notary's public key (or private key file); empty: signatures not checked")
	headsFile := fs.String("heads", "", "the notary's heads file (drove notary --heads): also check that the log and its checkpoints reach each signed head")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up reading the log after this long")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "drove verify-log: unexpected argument %q\n", pos[0])
		}
		return flagExit(err)
	}
	var pub ed25519.PublicKey
	if *keyFile != "" {
		k, err := notary.LoadPublicKey(*keyFile)
		if err != nil {
			return fail(stderr, "verify-log", err)
		}
		pub = k
	}
	var heads map[notary.Partition]chain.Head
	if *headsFile != "" {
		h, err := notary.ReadHeads(*headsFile)
		if err != nil {
			return fail(stderr, "verify-log", err)
		}
		heads = h
	}
	ctx, stop := signalContext()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep, err := notary.VerifyLog(ctx, sf.kafka("drove-verify-log"), pub, heads)
	if err != nil {
		return fail(stderr, "verify-log", err)
	}
	return printVerdict(stdout, rep, rep.OK, *asJSON)
}

// devNotaryKey is drove dev's notary key, dir/notary.key, made on the first
// start: the demo's checkpoints are signed, and verify-log --key
// dir/notary.key.pub checks them.
func devNotaryKey(dir string) (ed25519.PrivateKey, error) {
	path := filepath.Join(dir, "notary.key")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := notary.GenerateKey(path); err != nil {
			return nil, err
		}
	}
	return notary.LoadKey(path)
}
