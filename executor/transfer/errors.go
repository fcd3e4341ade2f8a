package transfer

import "errors"

var (
	// ErrCut is returned when a stream's connection ended before the
	// sender's end marker: the body is incomplete and must be discarded.
	ErrCut = errors.New("transfer: stream cut before its end")

	// ErrMismatch is returned to a sender whose header names another
	// move's key or a wrong token: it reached a listener not meant for it
	// (a stale announcement, a reused port).
	ErrMismatch = errors.New("transfer: stream does not belong to this move")

	// ErrProtocol is returned when a peer sends something that is not this
	// package's protocol.
	ErrProtocol = errors.New("transfer: protocol error")

	// ErrPeer is returned by Dial when the TLS handshake is refused: the
	// listener is not the node the move names (its certificate names
	// another node or comes from another CA), or it speaks no TLS. Dialling
	// the same address again will not change that.
	ErrPeer = errors.New("transfer: the peer is not the node the move names")

	// ErrSealed is returned when a secure stream's record fails to open:
	// altered, dropped, replayed or reordered on the way, or not sealed
	// with this stream's keys. Whatever was read before it is whole; the
	// stream is cut there (seal.go).
	ErrSealed = errors.New("transfer: a sealed record failed to open")

	// ErrClosed is returned by Accept after Close.
	ErrClosed = errors.New("transfer: listener closed")
)
