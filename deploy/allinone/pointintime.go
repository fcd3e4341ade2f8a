package allinone

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/projector"
)

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
