package nodeid

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Revocation is a standard X.509 CRL signed by the cluster's CA, not a
// list of our own: QEMU's TLS (gnutls) reads the same file (ca-crl.pem in
// its credentials directory), so one list serves every receiver, and it
// can be checked with openssl by anyone who has the CA certificate. It
// lists certificates by serial, so a node whose key was revoked can be
// issued a new certificate and take part again.

// Revoke adds node's certificate in certPath, which the CA in caDir must
// have issued, to the CA's revocation list (caDir/ca.crl, re-signed with
// a higher number), and returns its serial. A certificate that names
// another node is refused before anything is written; revoking one
// already listed changes nothing.
func Revoke(caDir, node, certPath string) (*big.Int, error) {
	caCert, caKey, err := loadCA(caDir)
	if err != nil {
		return nil, err
	}
	cert, err := readCert(certPath)
	if err != nil {
		return nil, err
	}
	if err := cert.CheckSignatureFrom(caCert); err != nil {
		return nil, fmt.Errorf("nodeid: %s was not issued by the CA in %s: %w", certPath, caDir, err)
	}
	if got, err := NodeOf(cert); err != nil || got != node {
		return nil, fmt.Errorf("nodeid: %s names node %q, not %q (%v)", certPath, got, node, err)
	}
	path := filepath.Join(caDir, CRL)
	tmpl := &x509.RevocationList{Number: big.NewInt(1)}
	if old, err := readCRL(path); err == nil {
		if err := old.CheckSignatureFrom(caCert); err != nil {
			return nil, fmt.Errorf("nodeid: %s is not signed by the CA: %w", path, err)
		}
		tmpl.Number = new(big.Int).Add(old.Number, big.NewInt(1))
		tmpl.RevokedCertificateEntries = old.RevokedCertificateEntries
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range tmpl.RevokedCertificateEntries {
		if e.SerialNumber.Cmp(cert.SerialNumber) == 0 {
			return cert.SerialNumber, nil
		}
	}
	now := time.Now()
	tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
		x509.RevocationListEntry{SerialNumber: cert.SerialNumber, RevocationTime: now})
	// The list does not expire on its own: a node must not start accepting
	// a revoked certificate because nobody re-signed the list in time.
	tmpl.ThisUpdate, tmpl.NextUpdate = now.Add(-time.Minute), now.Add(caLifetime)
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, caCert, caKey)
	if err != nil {
		return nil, err
	}
	// Replaced whole (write, then rename): a receiver reading it meanwhile
	// sees the old list or the new one, never half of one.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pemBlock("X509 CRL", der), 0o644); err != nil {
		return nil, err
	}
	return cert.SerialNumber, os.Rename(tmp, path)
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("nodeid: %s: no PEM certificate", path)
	}
	return x509.ParseCertificate(blk.Bytes)
}

func readCRL(path string) (*x509.RevocationList, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "X509 CRL" {
		return nil, fmt.Errorf("nodeid: %s: no PEM revocation list", path)
	}
	crl, err := x509.ParseRevocationList(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("nodeid: %s: %w", path, err)
	}
	return crl, nil
}

// revocations is an identity's view of its CRL file, read again when the
// file changes, so a revocation copied onto a node takes effect at the
// next handshake, without restarting the executor.
type revocations struct {
	path string
	cas  []*x509.Certificate

	mu      sync.Mutex
	stamp   string // the file's size and modification time when read
	serials map[string]bool
	err     error
}

// revoked says whether c is on the list. A list that cannot be read or
// is not signed by the CA refuses every peer: failing open would let a
// damaged list re-admit a revoked node.
func (r *revocations) revoked(c *x509.Certificate) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := os.Stat(r.path)
	if errors.Is(err, os.ErrNotExist) {
		r.stamp, r.serials, r.err = "", nil, nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("nodeid: the revocation list: %w", err)
	}
	if stamp := fmt.Sprint(st.Size(), st.ModTime().UnixNano()); stamp != r.stamp {
		r.stamp, r.serials, r.err = stamp, nil, nil
		r.serials, r.err = r.load()
	}
	if r.err != nil {
		return r.err
	}
	if r.serials[c.SerialNumber.String()] {
		node, _ := NodeOf(c)
		return fmt.Errorf("%w: node %q, serial %x (%s)", ErrRevoked, node, c.SerialNumber, r.path)
	}
	return nil
}

func (r *revocations) load() (map[string]bool, error) {
	crl, err := readCRL(r.path)
	if err != nil {
		return nil, err
	}
	signed := false
	for _, ca := range r.cas {
		signed = signed || crl.CheckSignatureFrom(ca) == nil
	}
	if !signed {
		return nil, fmt.Errorf("nodeid: %s is not signed by this cluster's CA: every peer refused", r.path)
	}
	out := map[string]bool{}
	for _, e := range crl.RevokedCertificateEntries {
		out[e.SerialNumber.String()] = true
	}
	return out, nil
}
