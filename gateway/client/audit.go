package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// AuditEntry is one line of GET /v1/audit: who asked what and why, and
// how it was answered ("requested" for an ask; "denied" for a refusal,
// Count of them when the gateway folded a flood into one record).
type AuditEntry struct {
	Seq     int64     `json:"seq"`
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Actor   string    `json:"actor"`
	Account string    `json:"account,omitempty"`
	Action  string    `json:"action"`
	Why     string    `json:"why"`
	Outcome string    `json:"outcome"`
	Detail  string    `json:"detail,omitempty"`
	Count   int       `json:"count"`
	Request string    `json:"request,omitempty"`
	// Raw is the entry as the gateway sent it, for NDJSON export.
	Raw json.RawMessage `json:"-"`
}

// AuditFilter narrows the trail: Outcome one of requested, allowed,
// denied; Actor who asked or was refused. Empty fields keep everything.
type AuditFilter struct {
	Outcome, Actor string
}

// Audit pages through the audit trail in log order, calling fn for each
// entry, until the last page or fn's error; pageSize 0 means 500.
func (c *Client) Audit(ctx context.Context, f AuditFilter, pageSize int, fn func(AuditEntry) error) error {
	q := url.Values{}
	if f.Outcome != "" {
		q.Set("outcome", f.Outcome)
	}
	if f.Actor != "" {
		q.Set("actor", f.Actor)
	}
	return eachItem(ctx, c, "/v1/audit", q, pageSize, func(raw json.RawMessage) error {
		var e AuditEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		e.Raw = raw
		return fn(e)
	})
}
