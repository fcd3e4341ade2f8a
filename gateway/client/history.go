package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/drovehq/drove/gateway/wire"
)

// History pages through the history of kind (instance, node, request or
// migration) id, calling fn for each entry in log order and its bytes as
// the gateway sent them (for NDJSON export), until the last page or fn's
// error; pageSize 0 means 500.
func (c *Client) History(ctx context.Context, kind, id string, pageSize int, fn func(wire.HistoryEntry, json.RawMessage) error) error {
	path := "/v1/history/" + url.PathEscape(kind) + "/" + url.PathEscape(id)
	return eachItem(ctx, c, path, url.Values{}, pageSize, fn)
}

// eachItem pages through the list at path with query q (cursors by
// ?after=), calling fn for each item, decoded and as the gateway sent
// it, until the last page or fn's error; pageSize 0 means 500.
func eachItem[T any](ctx context.Context, c *Client, path string, q url.Values, pageSize int, fn func(T, json.RawMessage) error) error {
	if pageSize <= 0 {
		pageSize = 500
	}
	q.Set("limit", strconv.Itoa(pageSize))
	for {
		var page wire.Page[json.RawMessage]
		if err := c.Get(ctx, path+"?"+q.Encode(), &page); err != nil {
			return err
		}
		for _, raw := range page.Items {
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			if err := fn(v, raw); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Set("after", page.Next)
	}
}
