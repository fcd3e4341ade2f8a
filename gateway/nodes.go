package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// A node's lifecycle through the API (operators only): undrain, offline
// and online. The gateway checks what the views can tell (the node
// exists, is not in the state asked for already, no active evacuation is
// emptying it) and answers 404 or 409 with nothing appended; otherwise it
// appends NodeActionRequested with the reason trail, and the planner
// service (planner/nodes), which holds the whole story, answers with
// NodeActionEnded: done, or refused when an evacuation began meanwhile.

// postNodeAction handles POST /v1/nodes/:name/{undrain,offline,online}.
func (g *Gateway) postNodeAction(action events.NodeAction) func(*gin.Context) error {
	return func(c *gin.Context) error {
		name := c.Param("name")
		var b wire.Reason
		if err := decodeBody(c, &b, true); err != nil {
			return err
		}
		g.commandMu.Lock()
		defer g.commandMu.Unlock()
		n, err := one[wire.Node](c, g.db, "nodes_list", "", "", "", name, 1)
		if errors.Is(err, ErrNotFound) {
			return notFound("name", "unknown node "+strconv.Quote(name))
		}
		if err != nil {
			return err
		}
		if err := g.nodeActionAllowed(c, n, action); err != nil {
			return err
		}
		actor := actorOf(c)
		why := b.Reason
		if strings.TrimSpace(why) == "" {
			why = fmt.Sprintf("%s %s requested by %s", action, name, actor)
		}
		id := events.NewID()
		if err := g.append(c, id, actor, why, events.NodeActionRequested{Request: id, Node: name, Action: action}); err != nil {
			return err
		}
		g.log.Info("node action accepted", "request", id, "node", name, "action", action, "actor", actor)
		g.answer(c, http.StatusAccepted, wire.Accepted{Request: id, Status: "accepted",
			Message: fmt.Sprintf("%s of node %s requested; the planner service answers it", action, name),
			Links:   wire.Links{"self": "/v1/node-actions/" + id, "node": "/v1/nodes/" + name}})
		return nil
	}
}

// nodeActionAllowed answers 409 when the node is already as asked, or,
// for an undrain, while an active evacuation (one the views show, or one
// this gateway has just appended) empties it.
func (g *Gateway) nodeActionAllowed(ctx context.Context, n wire.Node, action events.NodeAction) error {
	switch action {
	case events.NodeUndrain:
		if !n.Drained {
			return conflict(codeConflict, "name", fmt.Sprintf("node %s is not drained", n.Name))
		}
		ids, err := g.db.column(ctx, "node_emptying", n.Name)
		if err != nil {
			return err
		}
		// Evacuations this gateway appended that the views do not show
		// yet count too; once shown, the views say whether they are active.
		unseen, err := g.unseen(ctx)
		if err != nil {
			return err
		}
		for _, u := range unseen {
			if u.kind == kindEvacuation && slices.Contains(u.nodes, n.Name) {
				ids = append(ids, u.id)
			}
		}
		if len(ids) > 0 {
			e := conflict(codeActive, "name", fmt.Sprintf(
				"node %s is being emptied by active request %s; cancel it or wait for its end before undraining",
				n.Name, ids[0]))
			e.Request = ids[0]
			return e
		}
	case events.NodeOffline:
		if n.Offline {
			return conflict(codeConflict, "name", fmt.Sprintf("node %s is already offline", n.Name))
		}
	case events.NodeOnline:
		if !n.Offline {
			return conflict(codeConflict, "name", fmt.Sprintf("node %s is not offline", n.Name))
		}
	}
	return nil
}

// getNodeAction handles GET /v1/node-actions/:id.
func (g *Gateway) getNodeAction(c *gin.Context) error {
	id := c.Param("id")
	a, err := one[wire.NodeAction](c, g.db, "node_action_get", id)
	if errors.Is(err, ErrNotFound) {
		return notFound("id", "unknown node action "+strconv.Quote(id))
	}
	if err != nil {
		return err
	}
	g.answer(c, http.StatusOK, a)
	return nil
}
