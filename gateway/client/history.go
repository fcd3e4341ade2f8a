package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// HistoryEntry is one event of GET /v1/history/{kind}/{id}: when, what,
// who asked and why, what changed, and where it sits in the log.
type HistoryEntry struct {
	Seq          int64           `json:"seq"`
	ID           string          `json:"id"`
	Time         time.Time       `json:"time"`
	Type         string          `json:"type"`
	Topic        string          `json:"topic"`
	Partition    int32           `json:"partition"`
	Offset       int64           `json:"offset"`
	Producer     string          `json:"producer"`
	Actor        string          `json:"actor"`
	Why          string          `json:"why"`
	Requester    string          `json:"requester,omitempty"`
	RequesterWhy string          `json:"requester_why,omitempty"`
	Request      string          `json:"request,omitempty"`
	Migration    string          `json:"migration,omitempty"`
	Instance     string          `json:"instance,omitempty"`
	Summary      string          `json:"summary"`
	Before       *Placement      `json:"placement_before,omitempty"`
	After        *Placement      `json:"placement_after,omitempty"`
	From         string          `json:"state_before,omitempty"`
	To           string          `json:"state_after,omitempty"`
	Payload      json.RawMessage `json:"payload"`
	// Raw is the entry as the gateway sent it, for NDJSON export.
	Raw json.RawMessage `json:"-"`
}

// Placement is where an instance is: its group and nodes.
type Placement struct {
	Group     string `json:"group,omitempty"`
	Primary   string `json:"primary"`
	Secondary string `json:"secondary,omitempty"`
}

// History pages through the history of kind (instance, node, request or
// migration) id, calling fn for each entry in log order, until the last
// page or fn's error; pageSize 0 means 500.
func (c *Client) History(ctx context.Context, kind, id string, pageSize int, fn func(HistoryEntry) error) error {
	path := "/v1/history/" + url.PathEscape(kind) + "/" + url.PathEscape(id)
	return eachItem(ctx, c, path, url.Values{}, pageSize, func(raw json.RawMessage) error {
		var e HistoryEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		e.Raw = raw
		return fn(e)
	})
}

// eachItem pages through the list at path with query q (cursors by
// ?after=), calling fn for each item as the gateway sent it, until the
// last page or fn's error; pageSize 0 means 500.
func eachItem(ctx context.Context, c *Client, path string, q url.Values, pageSize int, fn func(json.RawMessage) error) error {
	if pageSize <= 0 {
		pageSize = 500
	}
	q.Set("limit", strconv.Itoa(pageSize))
	for {
		var page struct {
			Items []json.RawMessage `json:"items"`
			Next  string            `json:"next"`
		}
		if err := c.Get(ctx, path+"?"+q.Encode(), &page); err != nil {
			return err
		}
		for _, raw := range page.Items {
			if err := fn(raw); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Set("after", page.Next)
	}
}
