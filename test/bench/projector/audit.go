package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/projector/notary"
)

// The auditor's figures (issue 15) on the bench's log: the time to build
// a point-in-time view (projector.AsOf) of the whole log and of its first
// half, and the speed of the tamper-evidence verifier (the notary
// certifies the log first).

type auditResult struct {
	AsOfEvents      int64   `json:"asof_events"`
	AsOfSeconds     float64 `json:"asof_seconds"`
	AsOfHalfEvents  int64   `json:"asof_half_events"`
	AsOfHalfSeconds float64 `json:"asof_half_seconds"`
	// NotarySeconds is the notary's first pass over the whole log (from
	// its start to every record certified).
	NotarySeconds float64 `json:"notary_seconds"`
	// VerifyRecords were read and checked by VerifyLog in VerifySeconds
	// (reading from Kafka included); ChainEventsPerSec is chain.Verify's
	// own speed on records already read.
	VerifyRecords      int64   `json:"verify_records"`
	VerifySeconds      float64 `json:"verify_seconds"`
	VerifyEventsPerSec float64 `json:"verify_events_per_second"`
	ChainEventsPerSec  float64 `json:"chain_events_per_second"`
}

// workloadTime is the time of the workload's events-th event: its clock
// starts here and each event is one second after the one before
// (test/bench/eventlog).
func workloadTime(events int) time.Time {
	return time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(events) * time.Second)
}

func audit(ctx context.Context, pcfg projector.Config, pool *pgxpool.Pool, n int, stdout io.Writer) (*auditResult, error) {
	r := &auditResult{}
	for _, half := range []bool{false, true} {
		at := workloadTime(n)
		if half {
			at = workloadTime(n / 2)
		}
		v, err := projector.AsOf(ctx, pcfg, pool, projector.Bound{At: at})
		if err != nil {
			return nil, err
		}
		if half {
			r.AsOfHalfEvents, r.AsOfHalfSeconds = v.Events, v.Took.Seconds()
		} else {
			r.AsOfEvents, r.AsOfSeconds = v.Events, v.Took.Seconds()
		}
		fmt.Fprintf(stdout, "point in time at %s: %d events folded in %.2fs\n", at.Format(time.RFC3339), v.Events, v.Took.Seconds())
	}

	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	kcfg := kafka.Config{Brokers: pcfg.Kafka.Brokers}
	if r.NotarySeconds, err = certify(ctx, kcfg, key); err != nil {
		return nil, err
	}
	rep, err := notary.VerifyLog(ctx, kcfg, key.Public().(ed25519.PublicKey), nil)
	if err != nil {
		return nil, err
	}
	if !rep.OK || rep.Covered != rep.Records {
		return nil, fmt.Errorf("verify-log: ok %v, %d of %d records certified: %v", rep.OK, rep.Covered, rep.Records, rep.Breaks)
	}
	r.VerifyRecords, r.VerifySeconds = rep.Records, rep.Duration.Seconds()
	r.VerifyEventsPerSec = float64(rep.Records) / rep.Duration.Seconds()
	r.ChainEventsPerSec, err = chainSpeed(ctx, kcfg, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "notary certified the log in %.2fs; verify-log checked %d records in %.2fs = %.0f events/s (the chain alone: %.0f events/s)\n",
		r.NotarySeconds, r.VerifyRecords, r.VerifySeconds, r.VerifyEventsPerSec, r.ChainEventsPerSec)
	return r, nil
}

// certify runs the notary until every record of the log is certified and
// returns how long that took.
func certify(ctx context.Context, kcfg kafka.Config, key ed25519.PrivateKey) (float64, error) {
	recs, err := notary.ReadRaw(ctx, kcfg, notary.ChainedTopics()...)
	if err != nil {
		return 0, err
	}
	began := time.Now()
	nctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- notary.Run(nctx, notary.Config{Kafka: kcfg, Key: key, Interval: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() { stop(); <-done }()
	for {
		cps, err := notary.ReadCheckpoints(ctx, kcfg)
		if err != nil {
			return 0, err
		}
		all := true
		for p, rs := range recs {
			cs := cps[p]
			all = all && (len(rs) == 0 || len(cs) > 0 && cs[len(cs)-1].Records == int64(len(rs)))
		}
		if all {
			return time.Since(began).Seconds(), nil
		}
		select {
		case err := <-done:
			return 0, fmt.Errorf("notary stopped: %w", err)
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond): // polling the log under the bench's context
		}
	}
}

// chainSpeed is chain.Verify's speed alone, on the log already read.
func chainSpeed(ctx context.Context, kcfg kafka.Config, pub ed25519.PublicKey) (float64, error) {
	recs, err := notary.ReadRaw(ctx, kcfg, notary.ChainedTopics()...)
	if err != nil {
		return 0, err
	}
	cps, err := notary.ReadCheckpoints(ctx, kcfg)
	if err != nil {
		return 0, err
	}
	began, n := time.Now(), 0
	for p, rs := range recs {
		if rep := chain.Verify(p.Topic, p.Partition, rs, cps[p], pub, nil); rep.Break != nil {
			return 0, fmt.Errorf("chain: %s", rep.Break)
		}
		n += len(rs)
	}
	return float64(n) / time.Since(began).Seconds(), nil
}
