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
// so that a wrong peer is known before a byte of the move is sent; the
// stream then goes on in sealed records keyed by the session (seal.go).
func (l Link) client(ctx context.Context, c net.Conn) (net.Conn, error) {
	if l.Identity == nil {
		return c, nil
	}
	cfg := l.Identity.ClientConfig(l.Peer).Clone()
	cfg.NextProtos = []string{alpnSealed}
	tc := tls.Client(c, cfg)
	hctx, cancel := context.WithTimeout(ctx, headerTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, handshakeError(err)
	}
	if err := sealedAgreed(tc, "receiver"); err != nil {
		return nil, err
	}
	deadline, _ := hctx.Deadline()
	return sealClient(c, tc, deadline)
}

// alpnSealed names, in the TLS handshake (ALPN), the streams that go on
// in sealed records. An executor from before them offers or accepts no
// protocol, and the other end refuses it by name rather than misread its
// bytes.
const alpnSealed = "drove-transfer/2"

// sealedAgreed checks that the other end (the peer, by its role) agreed
// to sealed records. An older peer is ErrPeer: asking it again will not
// change its answer, and a receiver tells the operator of it (Refused).
func sealedAgreed(tc *tls.Conn, peer string) error {
	if p := tc.ConnectionState().NegotiatedProtocol; p != alpnSealed {
		return fmt.Errorf("%w: the %s speaks an older transfer protocol (ALPN %q, want %q): upgrade its executor",
			ErrPeer, peer, p, alpnSealed)
	}
	return nil
}

// flushConn writes out what c holds back: a secure stream's sealed
// records. Plain connections hold nothing.
func flushConn(c net.Conn) error {
	if sc, ok := c.(*sealedConn); ok {
		return sc.Flush()
	}
	return nil
}

// server wraps an accepted connection in TLS and completes the handshake,
// then goes on in sealed records. Its TLS sends no session ticket: a
// ticket would follow the handshake, behind which the records begin.
func (l Link) server(ctx context.Context, c net.Conn) (net.Conn, error) {
	if l.Identity == nil {
		return c, nil
	}
	cfg := l.Identity.ServerConfig(l.Peer).Clone()
	cfg.SessionTicketsDisabled = true
	cfg.NextProtos = []string{alpnSealed}
	tc := tls.Server(c, cfg)
	hctx, cancel := context.WithTimeout(ctx, headerTimeout)
	defer cancel()
	_ = c.SetDeadline(time.Now().Add(headerTimeout))
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, handshakeError(err)
	}
	if err := sealedAgreed(tc, "sender"); err != nil {
		return nil, err
	}
	sc, err := sealServer(c, tc)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return sc, nil
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
