package executor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/drovehq/drove/executor/transfer"
)

// The protection of the streams between the two executors of a move.
//
// Every driver call that may open a stream (Run, Receive, Phase) gets a
// context carrying a transfer.Link: this node's identity and the node at
// the other end, which the peer's certificate must name. A driver opens
// its streams through package transfer and needs nothing else; a stream
// to or from any other node is refused in the handshake.

// link returns ctx carrying the Link of a move whose other end is peer.
func (e *Executor) link(ctx context.Context, peer string) context.Context {
	if e.cfg.Transfer == nil {
		return ctx
	}
	return transfer.WithLink(ctx, transfer.Link{Identity: e.cfg.Transfer, Peer: peer,
		Refused: func(err error) { e.log.Warn("refused a connection to a move's receiver", "want", peer, "err", err) }})
}

// otherEnd is the node at the other end of a migration phase run here.
func (e *Executor) otherEnd(m MigrationPhase) string {
	if m.Source == e.cfg.Node {
		return m.Target
	}
	return m.Source
}

// checkTransfer refuses an executor whose driver moves data between nodes
// with neither an identity nor an explicit PlainTransfer, and an identity
// that names another node.
func checkTransfer(cfg Config, d Driver, log *slog.Logger) error {
	// A driver with a target side (Receiver) is one whose moves cross the
	// network; the simulator's do not.
	_, recv := d.(Receiver)
	if cfg.Transfer != nil {
		if n, ok := cfg.Transfer.(interface{ Node() string }); ok && n.Node() != cfg.Node {
			return fmt.Errorf("%w: Transfer: the certificate names node %q, not this executor's %q", ErrInvalidConfig, n.Node(), cfg.Node)
		}
		log.Info("moves between nodes use TLS 1.3 with node certificates")
		return nil
	}
	if !recv {
		return nil // nothing of this driver crosses the network
	}
	if !cfg.PlainTransfer {
		return fmt.Errorf("%w: Transfer: the driver sends instances between nodes; give this node's identity (--tls-cert, --tls-key, --tls-ca) or allow plain TCP explicitly (--plain-transfer)", ErrInvalidConfig)
	}
	log.Warn("PLAIN TRANSFER: moves between nodes are NOT encrypted or authenticated (PlainTransfer is set); anyone on the network can read or forge instance data")
	return nil
}
