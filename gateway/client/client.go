// Package client is the Go client of Drove's HTTP API, used by the drove
// command's client subcommands (evacuate, group-change, plans, watch, ...)
// and by end-to-end tests. Progress rendering lives in progress.go.
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
	"time"

	"github.com/drovehq/drove/events"
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

// APIError is an error answer of the gateway.
type APIError struct {
	Status    int
	Code      string `json:"code"`
	Message   string `json:"message"`
	Field     string `json:"field"`
	Migration string `json:"migration"`
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%d %s", e.Status, e.Message)
	if e.Field != "" {
		s += fmt.Sprintf(" (field %s)", e.Field)
	}
	return s
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
		var e struct {
			Error APIError `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(data))
		}
		e.Error.Status = resp.StatusCode
		return resp.StatusCode, &e.Error
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decoding %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// Evacuation is the body of POST /v1/evacuations.
type Evacuation struct {
	Nodes            []string `json:"nodes"`
	Mode             string   `json:"mode"`
	DryRun           bool     `json:"dry_run,omitempty"`
	IgnoreSoftErrors bool     `json:"ignore_soft_errors,omitempty"`
	MaxMovesPerNode  int      `json:"max_moves_per_node,omitempty"`
	Reason           string   `json:"reason,omitempty"`
}

// GroupChange is the body of POST /v1/group-changes.
type GroupChange struct {
	Instances    []string `json:"instances"`
	TargetGroups []string `json:"target_groups,omitempty"`
	DryRun       bool     `json:"dry_run,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// Accepted is the answer to a request: its id and, for a dry run, the plan.
type Accepted struct {
	Request string          `json:"request"`
	Status  string          `json:"status"`
	Plan    json.RawMessage `json:"plan,omitempty"`
	Message string          `json:"message,omitempty"`
}

// Plan is a request's plan as the API shows it (GET
// /v1/requests/{id}/plan, and a dry run's Accepted.Plan): the
// PlanComputed event in force and, from the views, when it was computed.
type Plan struct {
	events.PlanComputed
	ComputedAt time.Time `json:"computed_at"`
}

// Plan reads a request's plan.
func (c *Client) Plan(ctx context.Context, request string) (*Plan, error) {
	var p Plan
	err := c.Get(ctx, "/v1/requests/"+url.PathEscape(request)+"/plan", &p)
	return &p, err
}

// Evacuate asks to empty nodes.
func (c *Client) Evacuate(ctx context.Context, e Evacuation) (*Accepted, error) {
	var a Accepted
	_, err := c.Do(ctx, http.MethodPost, "/v1/evacuations", e, &a)
	return &a, err
}

// ChangeGroup asks to move instances to other groups.
func (c *Client) ChangeGroup(ctx context.Context, g GroupChange) (*Accepted, error) {
	var a Accepted
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

// Get decodes GET path into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	_, err := c.Do(ctx, http.MethodGet, path, nil, out)
	return err
}

// Event is one line of a watch stream.
type Event struct {
	Seq      int64           `json:"seq"`
	Time     time.Time       `json:"time"`
	Type     string          `json:"type"`
	Request  string          `json:"request"`
	Instance string          `json:"instance"`
	Payload  json.RawMessage `json:"payload"`
	Raw      []byte          `json:"-"`
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
		var e struct {
			Error APIError `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(data))
		}
		e.Error.Status = resp.StatusCode
		return &e.Error
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
