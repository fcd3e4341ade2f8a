package main

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/bench/cpu"
)

// foldResult is a fold of the whole log into a fresh schema without
// Replay's checksums: projector.AsOf bounded by the log's end offsets,
// which is Replay's fold (the same foldRange, into a fresh schema), so
// its CPU holds no checksum. AsOf's schema is kept, so it also builds
// the secondary indexes that Replay, dropping its schema, does not: its
// CPU is an upper bound of the replay fold's.
type foldResult struct {
	Events       int64   `json:"events"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_second"`
	cpuFigures
}

func foldToEnd(ctx context.Context, pcfg projector.Config, pool *pgxpool.Pool, pgCPU func() float64) (*foldResult, error) {
	ends, err := logEnds(ctx, pcfg.Kafka.Brokers)
	if err != nil {
		return nil, err
	}
	b := projector.Bound{Offsets: map[string]map[int32]int64{}}
	for k, end := range ends {
		if b.Offsets[k.Topic] == nil {
			b.Offsets[k.Topic] = map[int32]int64{}
		}
		b.Offsets[k.Topic][k.Partition] = end
	}
	rss := sampleRSS() // first: its collection is not the phase's CPU
	selfBefore, pgBefore := cpu.Self(), pgCPU()
	v, err := projector.AsOf(ctx, pcfg, pool, b)
	r := &foldResult{}
	r.RSSBeforeMiB, r.RSSPeakMiB = rss.done()
	r.HeapLiveGrowthMiB = rss.liveGrowthMiB()
	if err != nil {
		return nil, err
	}
	bench, pg := cpu.Self()-selfBefore, pgCPU()-pgBefore
	if err := projector.DropAsOf(ctx, pcfg, pool, v.Name); err != nil {
		return nil, err
	}
	r.Events, r.Seconds = v.Events, v.Took.Seconds()
	r.EventsPerSec = float64(v.Events) / r.Seconds
	r.BenchCPUPer100k, r.PostgresCPUPer100k = cpu.Per100k(bench, int(v.Events)), cpu.Per100k(pg, int(v.Events))
	return r, nil
}
