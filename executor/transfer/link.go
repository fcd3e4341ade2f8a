package transfer

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
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
	bc := &batchConn{Conn: c}
	tc := tls.Client(bc, l.Identity.ClientConfig(l.Peer))
	hctx, cancel := context.WithTimeout(ctx, headerTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, handshakeError(err)
	}
	bc.batch()
	return tc, nil
}

// batchConn gathers what TLS writes into the socket and hands it over in
// one write(2) at each flush (flushConn), once batch is called: TLS
// writes every record of 16 KiB by itself, so a frame of 256 KiB cost 16
// writes into the socket, and as many wakeups of the receiver, where a
// plain stream makes one (issue 30: moves at full speed with encryption
// on). The handshake, before batch, goes through as it is written, since
// TLS waits for the answer to each flight. The mutex orders a flush
// against a write TLS makes while reading (a key update's answer).
type batchConn struct {
	net.Conn
	mu      sync.Mutex
	batched bool
	buf     []byte
}

// batchMax is the most a batchConn holds before it writes: a frame and
// its records' overhead.
const batchMax = chunkSize + 64<<10

func (c *batchConn) batch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batched, c.buf = true, make([]byte, 0, batchMax)
}

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.batched {
		return c.Conn.Write(p)
	}
	if len(c.buf)+len(p) > cap(c.buf) {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > cap(c.buf) {
			return c.Conn.Write(p)
		}
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *batchConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

func (c *batchConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// Close sends what is held first (TLS's close_notify alert among it),
// unless a write is under way: a write blocked on a receiver that reads
// nothing holds the lock, and closing the socket under it is what frees it
// (a cancelled stream), so Close must not wait for the lock.
func (c *batchConn) Close() error {
	if c.mu.TryLock() {
		_ = c.flushLocked()
		c.mu.Unlock()
	}
	return c.Conn.Close()
}

// readAheadConn reads the socket a frame's worth at a time for TLS, which
// asks for one record (16 KiB) a read: the receiving side of batchConn.
type readAheadConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *readAheadConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// flushConn writes out what c holds back: a TLS stream's batched records.
// Plain connections hold nothing.
func flushConn(c net.Conn) error {
	if tc, ok := c.(*tls.Conn); ok {
		if bc, ok := tc.NetConn().(*batchConn); ok {
			return bc.Flush()
		}
	}
	return nil
}

// server wraps an accepted connection in TLS and completes the handshake.
func (l Link) server(ctx context.Context, c net.Conn) (net.Conn, error) {
	if l.Identity == nil {
		return c, nil
	}
	tc := tls.Server(&readAheadConn{Conn: c, r: bufio.NewReaderSize(c, batchMax)}, l.Identity.ServerConfig(l.Peer))
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
