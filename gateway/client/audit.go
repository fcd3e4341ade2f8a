package client

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/drovehq/drove/gateway/wire"
)

// AuditFilter narrows the trail: Outcome one of requested, allowed,
// denied; Actor who asked or was refused. Empty fields keep everything.
type AuditFilter struct {
	Outcome, Actor string
}

// Audit pages through the audit trail in log order, calling fn for each
// entry and its bytes as the gateway sent them (for NDJSON export),
// until the last page or fn's error; pageSize 0 means 500.
func (c *Client) Audit(ctx context.Context, f AuditFilter, pageSize int, fn func(wire.AuditEntry, json.RawMessage) error) error {
	q := url.Values{}
	if f.Outcome != "" {
		q.Set("outcome", f.Outcome)
	}
	if f.Actor != "" {
		q.Set("actor", f.Actor)
	}
	return eachItem(ctx, c, "/v1/audit", q, pageSize, fn)
}
