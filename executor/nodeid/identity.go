package nodeid

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Identity is one node's identity: its certificate and key, the CA it
// trusts peers by, and the cluster's transfer secret (may be empty).
// It is safe for concurrent use.
type Identity struct {
	node   string
	cert   tls.Certificate
	roots  *x509.CertPool
	secret []byte
	crl    *revocations
}

// Files says where an identity's parts are. Secret may be empty; CRL
// empty means ca.crl beside CA (see CRLPath).
type Files struct {
	Cert, Key, CA, Secret, CRL string
}

// CRLPath is where the identity looks for the CA's revocation list: CRL,
// else ca.crl in CA's directory, where an operator copies it beside
// ca.crt. The file may not exist (nothing revoked) and may appear later.
func (f Files) CRLPath() string {
	if f.CRL != "" {
		return f.CRL
	}
	return filepath.Join(filepath.Dir(f.CA), CRL)
}

// Load reads an identity. The key and the secret must not be readable by
// group or others; the certificate must name a node.
func Load(f Files) (*Identity, error) {
	keyPEM, err := readPrivate(f.Key)
	if err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// tls's error names neither file nor key material; add the files.
		return nil, fmt.Errorf("nodeid: %s with %s: %w", f.Cert, f.Key, err)
	}
	node, err := NodeOf(cert.Leaf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Cert, err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	crl := &revocations{path: f.CRLPath()}
	for blk, rest := pem.Decode(caPEM); blk != nil; blk, rest = pem.Decode(rest) {
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil && blk.Type == "CERTIFICATE" {
			roots.AddCert(c)
			crl.cas = append(crl.cas, c)
		}
	}
	if len(crl.cas) == 0 {
		return nil, fmt.Errorf("nodeid: %s: no PEM certificate", f.CA)
	}
	id := &Identity{node: node, cert: cert, roots: roots, crl: crl}
	if f.Secret != "" {
		b, err := readPrivate(f.Secret)
		if err != nil {
			return nil, err
		}
		blk, _ := pem.Decode(b)
		if blk == nil || len(blk.Bytes) < 16 {
			return nil, fmt.Errorf("nodeid: %s: not a transfer secret", f.Secret)
		}
		id.secret = blk.Bytes
	}
	return id, nil
}

// Node is the node this identity names.
func (id *Identity) Node() string { return id.node }

// NodeOf is the node a certificate names (its drove://node/ URI SAN).
func NodeOf(c *x509.Certificate) (string, error) {
	if c == nil {
		return "", ErrNoNode
	}
	for _, u := range c.URIs {
		if u.Scheme == "drove" && u.Host == "node" && len(u.Path) > 1 && validNode(u.Path[1:]) {
			return u.Path[1:], nil
		}
	}
	return "", ErrNoNode
}

// ServerConfig is the TLS configuration of the receiving end of a move
// whose other end is node peer: client certificates required, from the
// CA, naming peer.
func (id *Identity) ServerConfig(peer string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		// Bulk data: full-size records from the first byte.
		DynamicRecordSizingDisabled: true,
		ClientAuth:                  tls.RequireAnyClientCert, // verified below, against our CA only
		VerifyConnection:            id.verify(peer, x509.ExtKeyUsageClientAuth),
	}
}

// ClientConfig is the TLS configuration of the sending end of a move
// whose other end is node peer.
func (id *Identity) ClientConfig(peer string) *tls.Config {
	return &tls.Config{
		MinVersion:                  tls.VersionTLS13,
		Certificates:                []tls.Certificate{id.cert},
		DynamicRecordSizingDisabled: true,
		// The standard check is by host name; the peer is named by a URI
		// SAN instead, so the chain and the name are checked in verify.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection:   id.verify(peer, x509.ExtKeyUsageServerAuth),
	}
}

func (id *Identity) verify(peer string, usage x509.ExtKeyUsage) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("nodeid: the peer presented no certificate")
		}
		leaf := cs.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: id.roots, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return fmt.Errorf("nodeid: the peer's certificate is not from this cluster's CA: %w", err)
		}
		if err := id.crl.revoked(leaf); err != nil {
			return err
		}
		got, err := NodeOf(leaf)
		if err != nil {
			return err
		}
		if got != peer {
			return fmt.Errorf("%w: %q, want %q", ErrWrongNode, got, peer)
		}
		return nil
	}
}

// Token is the per-move token for the move named key: an HMAC of the key
// under the cluster's transfer secret, so only nodes holding the secret
// can present it, and it never needs to travel in an event. Empty when
// the identity has no secret.
func (id *Identity) Token(key string) string {
	if len(id.secret) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, id.secret)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

// readPrivate reads a file that must be readable by its owner only.
func readPrivate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is %v (chmod 600 it)", ErrKeyExposed, path, st.Mode().Perm())
	}
	b := make([]byte, st.Size())
	_, err = f.ReadAt(b, 0)
	if err != nil && st.Size() > 0 {
		return nil, err
	}
	return b, nil
}
