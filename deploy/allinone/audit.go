package allinone

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/projector/notary"
)

// The auditors' parts of the system: point-in-time views for the gateway
// and the notary.

// PointInTime is the gateway's Config.PointInTime over projector.AsOf:
// the schema of the views at a time, folded on the first ask and kept.
// Every gateway (drove dev's and drove gateway's) answers ?at= this way.
func PointInTime(cfg projector.Config, pool *pgxpool.Pool) func(context.Context, time.Time) (string, error) {
	return func(ctx context.Context, at time.Time) (string, error) {
		v, err := projector.AsOf(ctx, cfg, pool, projector.Bound{At: at})
		if errors.Is(err, projector.ErrBound) {
			return "", fmt.Errorf("%w: %w", gateway.ErrBadBound, err)
		}
		return v.Name, err
	}
}

// StartNotary starts (or restarts) the notary, which checkpoints the log's
// hash chains.
func (s *System) StartNotary(_ context.Context) error {
	cfg := notary.Config{Kafka: s.cfg.kafka("drove-notary", ""),
		Key: s.cfg.NotaryKey, Interval: s.cfg.NotaryInterval, Heads: s.cfg.NotaryHeads, Logger: s.log.With("part", "notary")}
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.run("notary", func(ctx context.Context) error { return notary.Run(ctx, cfg) })
	return nil
}
