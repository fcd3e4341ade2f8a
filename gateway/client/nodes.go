package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// NodeAction is a node command (undrain, offline, online) as the API shows
// it (GET /v1/node-actions/{id}): requested, then done or refused with the
// planner service's answer.
type NodeAction struct {
	Request     string     `json:"request"`
	Node        string     `json:"node"`
	Action      string     `json:"action"`
	Actor       string     `json:"actor"`
	Reason      string     `json:"reason"`
	RequestedAt time.Time  `json:"requested_at"`
	State       string     `json:"state"`
	Answer      string     `json:"answer,omitempty"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
}

// ErrNodeActionRefused is returned by AwaitNodeAction when the planner
// service refused the command; the error says why.
var ErrNodeActionRefused = errors.New("node action refused")

// NodeAct asks for action ("undrain", "offline" or "online") on node.
func (c *Client) NodeAct(ctx context.Context, node, action, reason string) (*Accepted, error) {
	var a Accepted
	body := struct {
		Reason string `json:"reason,omitempty"`
	}{reason}
	_, err := c.Do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(node)+"/"+url.PathEscape(action), body, &a)
	return &a, err
}

// AwaitNodeAction polls a node command until the planner service has
// answered it or ctx ends: the command done, or ErrNodeActionRefused.
func (c *Client) AwaitNodeAction(ctx context.Context, request string) (*NodeAction, error) {
	wait := 50 * time.Millisecond
	for {
		var a NodeAction
		status, err := c.Do(ctx, http.MethodGet, "/v1/node-actions/"+url.PathEscape(request), nil, &a)
		switch {
		case err == nil && a.State == "refused":
			return &a, fmt.Errorf("%w: %s", ErrNodeActionRefused, a.Answer)
		case err == nil && a.State == "done":
			return &a, nil
		case err != nil && status != http.StatusNotFound && status != http.StatusServiceUnavailable:
			return nil, err // not yet in the views (404) or Postgres restarting (503): wait
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
