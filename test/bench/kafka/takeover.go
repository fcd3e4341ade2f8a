package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/test/bench/subproc"
)

// The planner service's log lines the bench waits for.
const (
	lineLeading  = "leading: this planner decides now"
	lineStandsBy = "standing by for the planner election"
	lineNoLonger = "no longer leading"
)

// measureTakeover runs two `drove planner` processes on the Apache broker
// over the demo inventory, SIGKILLs the leader, appends a request at once
// and times the standby's decision on it from the SIGKILL.
func measureTakeover(ctx context.Context, in *infra, cfg config, s *summary, stdout io.Writer) error {
	kcfg := in.apache.Config()
	kcfg.Namespace = "takeover."
	if err := kafka.EnsureTopics(ctx, kcfg, 3, events.Topics()...); err != nil {
		return err
	}
	scfg := kcfg
	scfg.TransactionalID = "bench-seed"
	prod, err := kafka.NewProducer(scfg)
	if err != nil {
		return err
	}
	defer prod.Close()
	demo := allinone.DemoCluster()
	if err := service.Seed(ctx, prod, service.InventoryEvents(demo, events.Reason{Actor: "operator:bench", Why: "takeover bench"})); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	args := []string{"planner", "--brokers", strings.Join(kcfg.Brokers, ","), "--kafka-namespace", kcfg.Namespace,
		"--partitions", "3", "--log-level", "info", "--election-timeout", cfg.electionTimeout.String()}
	var ps []*subproc.Proc
	defer func() {
		for _, p := range ps {
			p.Kill()
		}
	}()
	for i := range 2 {
		p, err := subproc.Start(fmt.Sprintf("planner-%d", i), in.bin, args, nil, filepath.Join(in.tmp, fmt.Sprintf("planner-%d.log", i)), lineLeading, lineStandsBy, lineNoLonger)
		if err != nil {
			return err
		}
		ps = append(ps, p)
		if _, err := p.Wait(ctx, lineStandsBy, 2*time.Minute); err != nil {
			return err
		}
	}
	// A request the leader decides: both are then running, and the
	// standby has had that long to join the election's group.
	leader, standby, err := leaderOf(ctx, ps, func() error {
		_, err := decide(ctx, prod, kcfg, demo.Nodes[0].Name, func() {})
		return err
	})
	if err != nil {
		return err
	}
	var killed time.Time
	decided, err := decide(ctx, prod, kcfg, demo.Nodes[9].Name, func() {
		killed = time.Now()
		leader.KillNow()
	})
	if err != nil {
		return fmt.Errorf("after the leader's SIGKILL: %w", err)
	}
	s.TakeoverS = ptr(decided.Sub(killed).Seconds())
	if m, err := standby.Wait(ctx, lineLeading, time.Second); err == nil {
		s.TakeoverLeadingS = ptr(m.At.Sub(killed).Seconds())
	}
	fmt.Fprintf(stdout, "takeover: %s SIGKILLed; %s decided a request %.2fs later (election timeout %s)\n",
		leader.Name, standby.Name, *s.TakeoverS, cfg.electionTimeout)
	return nil
}

// leaderOf waits until one of the two planners says it leads, then for
// the request the leader decides, and returns the one leading then: one
// that said it leads and never that it no longer does.
func leaderOf(ctx context.Context, ps []*subproc.Proc, warmUp func() error) (leader, standby *subproc.Proc, err error) {
	t := time.NewTimer(2 * time.Minute)
	defer t.Stop()
	select {
	case <-ps[0].SeenC(lineLeading):
	case <-ps[1].SeenC(lineLeading):
	case <-t.C:
		return nil, nil, errors.New("neither planner leads within 2 minutes")
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if err := warmUp(); err != nil {
		return nil, nil, fmt.Errorf("warm-up request: %w", err)
	}
	var leading []int
	for i, p := range ps {
		if p.Seen(lineLeading) && !p.Seen(lineNoLonger) {
			leading = append(leading, i)
		}
	}
	if len(leading) != 1 {
		return nil, nil, fmt.Errorf("%d planners lead after the warm-up request, not one (see their logs)", len(leading))
	}
	return ps[leading[0]], ps[1-leading[0]], nil
}

// decide calls before, appends an evacuation of node, and returns the time
// the planner gave its first event for it (its decision).
func decide(ctx context.Context, prod *kafka.Producer, kcfg kafka.Config, node string, before func()) (time.Time, error) {
	w, err := newWatcher(ctx, kcfg, events.TopicPlans, events.TopicRequests, events.TopicInventory)
	if err != nil {
		return time.Time{}, err
	}
	defer w.close()
	id := fmt.Sprintf("takeover-%d", time.Now().UnixNano())
	ev := events.New(events.EvacuationRequested{Request: id, Nodes: []string{node}, Mode: events.EvacAll},
		events.WithProducer("bench"), events.WithReason(events.Reason{Actor: "operator:bench", Why: "takeover", RequestID: id}))
	before()
	if err := prod.Append(ctx, events.TopicRequests, ev); err != nil {
		return time.Time{}, err
	}
	r, err := w.waitFor(ctx, 2*time.Minute, func(r kafka.Record) bool {
		return r.Event.Producer != "bench" && r.Event.Reason.RequestID == id
	})
	return r.Event.Time, err
}
