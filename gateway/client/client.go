// Package client is the Go client of Drove's HTTP API, used by the drove
// command's client subcommands (evacuate, group-change, plans, watch, ...)
// and by end-to-end tests. It holds the HTTP calls only: the shapes it
// sends and decodes are gateway/wire's, and the terminal views of the
// client commands are cmd/drove/termview's.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/drovehq/drove/gateway/wire"
)

// Client talks to one gateway.
type Client struct {
	Base  string // e.g. http://localhost:8080
	Actor string // sent as X-Drove-Actor
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	HTTP  *http.Client
}

// header sets the headers every request carries.
func (c *Client) header(req *http.Request) {
	if c.Actor != "" {
		req.Header.Set("X-Drove-Actor", c.Actor)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
}

// New returns a client of the gateway at base.
func New(base, actor string) *Client {
	return &Client{Base: strings.TrimRight(base, "/"), Actor: actor, HTTP: &http.Client{}}
}

// Do sends a request with a JSON body (nil for none) and decodes a JSON
// answer into out (nil to discard). It returns the HTTP status.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.header(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("gateway at %s: %w", c.Base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, errorOf(resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decoding %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// Plan reads a request's plan.
func (c *Client) Plan(ctx context.Context, request string) (*wire.Plan, error) {
	var p wire.Plan
	err := c.Get(ctx, "/v1/requests/"+url.PathEscape(request)+"/plan", &p)
	return &p, err
}

// Evacuate asks to empty nodes.
func (c *Client) Evacuate(ctx context.Context, e wire.Evacuation) (*wire.Accepted, error) {
	var a wire.Accepted
	_, err := c.Do(ctx, http.MethodPost, "/v1/evacuations", e, &a)
	return &a, err
}

// ChangeGroup asks to move instances to other groups.
func (c *Client) ChangeGroup(ctx context.Context, g wire.GroupChange) (*wire.Accepted, error) {
	var a wire.Accepted
	_, err := c.Do(ctx, http.MethodPost, "/v1/group-changes", g, &a)
	return &a, err
}

// Approve lets a reviewed dry-run plan run.
func (c *Client) Approve(ctx context.Context, request string) error {
	_, err := c.Do(ctx, http.MethodPost, "/v1/requests/"+url.PathEscape(request)+"/approve", struct{}{}, nil)
	return err
}

// Cancel stops a request.
func (c *Client) Cancel(ctx context.Context, request string) error {
	_, err := c.Do(ctx, http.MethodPost, "/v1/requests/"+url.PathEscape(request)+"/cancel", struct{}{}, nil)
	return err
}

// errorOf is the error of an answer with status >= 400: the gateway's
// Error, or the body as its message when it is not one (a proxy's page).
func errorOf(status int, body []byte) *wire.Error {
	var a wire.ErrorAnswer
	if json.Unmarshal(body, &a) != nil || a.Error == nil {
		a.Error = &wire.Error{}
	}
	if a.Error.Message == "" {
		a.Error.Message = strings.TrimSpace(string(body))
	}
	a.Error.Status = status
	return a.Error
}

// Get decodes GET path into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	_, err := c.Do(ctx, http.MethodGet, path, nil, out)
	return err
}

// Event is one line of a watch stream, and its bytes as the gateway
// sent them (for NDJSON output).
type Event struct {
	wire.WatchLine
	Raw []byte `json:"-"`
}

// ErrStreamEnded means the gateway closed a watch stream before its end.
var ErrStreamEnded = errors.New("watch stream closed before the request finished")

// Watch follows a watch stream (path such as /v1/requests/ID/watch) and
// calls fn for each event until fn returns false, the stream ends or ctx
// is done. Keepalive lines are not passed on.
func (c *Client) Watch(ctx context.Context, path string, fn func(Event) bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return err
	}
	c.header(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("gateway at %s: %w", c.Base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		data, _ := io.ReadAll(resp.Body)
		return errorOf(resp.StatusCode, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("watch stream: %w", err)
		}
		if ev.Type == "keepalive" {
			continue
		}
		ev.Raw = append([]byte(nil), line...)
		if !fn(ev) {
			return nil
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return ctx.Err()
}
