package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/gateway/wire"
)

// Point in time (issue 15): GET /v1/instances?at=TIME and /v1/nodes?at=TIME
// answer from the views as they stood at TIME, a schema the projector
// folded up to that moment (projector.AsOf, through Config.PointInTime),
// built on the first ask and kept until dropped (drove replay --drop).
// The same queries run there, with that schema spliced in.

// pastQueries caches the queries of each point-in-time schema.
var pastQueries sync.Map // schema -> queries

// storeAt is the store a read uses: the live views, or with ?at= those
// of that moment.
func (g *Gateway) storeAt(c *gin.Context) (*store, error) {
	s, ok := c.GetQuery("at")
	if !ok {
		return g.db, nil
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, badRequest("at", "at: "+strconv.Quote(s)+" is not an RFC 3339 time (2006-01-02T15:04:05.999Z)")
	}
	if g.cfg.PointInTime == nil {
		return nil, &wire.Error{Status: http.StatusNotImplemented, Code: "not_implemented",
			Message: "this gateway answers no ?at= (no point-in-time views configured)", Field: "at"}
	}
	schema, err := g.cfg.PointInTime(c, at)
	if errors.Is(err, ErrBadBound) {
		return nil, badRequest("at", err.Error())
	}
	if err != nil {
		return nil, err
	}
	if q, ok := pastQueries.Load(schema); ok {
		return &store{pool: g.db.pool, q: q.(queries)}, nil
	}
	q, err := loadQueries(pgx.Identifier{schema}.Sanitize())
	if err != nil {
		return nil, err
	}
	pastQueries.Store(schema, q)
	return &store{pool: g.db.pool, q: q}, nil
}
