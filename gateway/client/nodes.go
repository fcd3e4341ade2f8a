package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/drovehq/drove/gateway/wire"
)

// ErrNodeActionRefused is returned by AwaitNodeAction when the planner
// service refused the command; the error says why.
var ErrNodeActionRefused = errors.New("node action refused")

// NodeAct asks for action ("undrain", "offline" or "online") on node.
func (c *Client) NodeAct(ctx context.Context, node, action, reason string) (*wire.Accepted, error) {
	var a wire.Accepted
	_, err := c.Do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(node)+"/"+url.PathEscape(action), wire.Reason{Reason: reason}, &a)
	return &a, err
}

// AwaitNodeAction polls a node command until the planner service has
// answered it or ctx ends: the command done, or ErrNodeActionRefused. A
// done command returns once the node's view shows it too: the answer and
// the node's new state are on different topics, so the views may show the
// answer first, and a caller reading the node then would see it as it was.
func (c *Client) AwaitNodeAction(ctx context.Context, request string) (*wire.NodeAction, error) {
	var a wire.NodeAction
	err := poll(ctx, func() (bool, error) {
		status, err := c.Do(ctx, http.MethodGet, "/v1/node-actions/"+url.PathEscape(request), nil, &a)
		if err != nil && (status == http.StatusNotFound || status == http.StatusServiceUnavailable) {
			return false, nil // not yet in the views (404) or Postgres restarting (503): wait
		}
		return err != nil || a.State != "requested", err
	})
	switch {
	case err != nil:
		return nil, err
	case a.State == "refused":
		return &a, fmt.Errorf("%w: %s", ErrNodeActionRefused, a.Answer)
	}
	return &a, poll(ctx, func() (bool, error) {
		var n wire.Node
		status, err := c.Do(ctx, http.MethodGet, "/v1/nodes/"+url.PathEscape(a.Node), nil, &n)
		if status == http.StatusServiceUnavailable {
			return false, nil
		}
		shown := map[string]bool{"undrain": !n.Drained, "offline": n.Offline, "online": !n.Offline}[a.Action]
		return err != nil || shown, err
	})
}

// poll calls done with a growing pause, up to a second, until it returns
// true or an error, or ctx ends.
func poll(ctx context.Context, done func() (bool, error)) error {
	wait := 50 * time.Millisecond
	for {
		if ok, err := done(); ok || err != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
