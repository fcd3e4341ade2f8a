package nodeid

import "errors"

var (
	// ErrWrongNode is returned (through the TLS handshake) when the peer's
	// certificate is valid for the CA but names another node than the
	// move's: a stale address now used by another node, or a node
	// pretending to be another.
	ErrWrongNode = errors.New("nodeid: the peer's certificate names another node")

	// ErrRevoked is returned (through the TLS handshake) when the peer's
	// certificate is on the CA's revocation list (`drove ca revoke`).
	ErrRevoked = errors.New("nodeid: the peer's certificate is revoked")

	// ErrNoNode is returned when a certificate names no node.
	ErrNoNode = errors.New("nodeid: the certificate names no node")

	// ErrKeyExposed is returned by Load when the key file can be read by
	// group or others.
	ErrKeyExposed = errors.New("nodeid: key file readable by group or others")

	// ErrExists is returned by InitCA and Issue rather than overwrite a
	// key that is already there.
	ErrExists = errors.New("nodeid: file exists")
)
