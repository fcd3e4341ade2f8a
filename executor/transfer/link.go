package transfer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// Identity is a node's identity as streams use it (nodeid.Identity is
// one): the TLS configuration of each end, for a move whose other end is
// the node peer, and the per-move token.
type Identity interface {
	ServerConfig(peer string) *tls.Config
	ClientConfig(peer string) *tls.Config
	Token(key string) string
}

// Link is how the streams of one move are protected: TLS 1.3 with Identity
// against the node Peer, or plain TCP when Identity is nil.
//
// The executor puts a Link in the context it gives a driver (WithLink);
// Dial and Accept take it from their context. Drivers therefore need no
// code of their own for it, and every driver's streams — those of opcodes,
// receivers and per-instance migration phases alike — are protected the
// same way by the executor that runs them.
type Link struct {
	Identity Identity
	// Peer is the node at the other end of the move, which its
	// certificate must name.
	Peer string
	// Refused, when set, hears of every connection Accept refused in the
	// handshake (an impostor, a node of another cluster, a plain sender):
	// the receiving side drops them and goes on serving the move, and
	// the operator should still know.
	Refused func(error)
}

type linkKey struct{}

// WithLink returns ctx carrying l for the streams opened under it.
func WithLink(ctx context.Context, l Link) context.Context {
	return context.WithValue(ctx, linkKey{}, l)
}

// LinkOf is the Link ctx carries; the zero Link (plain) if none.
func LinkOf(ctx context.Context) Link {
	l, _ := ctx.Value(linkKey{}).(Link)
	return l
}

// Secure says whether streams over l are encrypted and authenticated.
func (l Link) Secure() bool { return l.Identity != nil }

// token is the per-move token for key, or "" on a plain link.
func (l Link) token(key string) string {
	if l.Identity == nil {
		return ""
	}
	return l.Identity.Token(key)
}

// client wraps a dialled connection in TLS and completes the handshake,
// so that a wrong peer is known before a byte of the move is sent.
func (l Link) client(ctx context.Context, c net.Conn) (net.Conn, error) {
	if l.Identity == nil {
		return c, nil
	}
	tc := tls.Client(c, l.Identity.ClientConfig(l.Peer))
	hctx, cancel := context.WithTimeout(ctx, headerTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, handshakeError(err)
	}
	return tc, nil
}

// server wraps an accepted connection in TLS and completes the handshake.
func (l Link) server(ctx context.Context, c net.Conn) (net.Conn, error) {
	if l.Identity == nil {
		return c, nil
	}
	tc := tls.Server(c, l.Identity.ServerConfig(l.Peer))
	hctx, cancel := context.WithTimeout(ctx, headerTimeout)
	defer cancel()
	_ = c.SetDeadline(time.Now().Add(headerTimeout))
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, handshakeError(err)
	}
	_ = c.SetDeadline(time.Time{})
	return tc, nil
}

// handshakeError marks a refused handshake as ErrPeer: the other end is
// not the node the move names (or speaks no TLS), which retrying the same
// address will not change. Transport failures stay what they are.
func handshakeError(err error) error {
	var (
		ce *tls.CertificateVerificationError
		ae tls.AlertError
		re tls.RecordHeaderError
	)
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ae), errors.As(err, &re):
		return fmt.Errorf("%w: %w", ErrPeer, err)
	case errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Slow or cancelled, not refused: the caller's context (a
		// cancelled move) or a retry decides.
		return fmt.Errorf("transfer: TLS handshake: %w", err)
	}
	// Failures of VerifyConnection come back as plain errors from the
	// verifying side, and a listener that speaks no TLS hangs up on the
	// ClientHello (EOF, or a reset). A TLS receiver that refuses us sends
	// an alert instead, handled above.
	if errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("transfer: TLS handshake: %w", err)
	}
	return fmt.Errorf("%w: %w", ErrPeer, err)
}
