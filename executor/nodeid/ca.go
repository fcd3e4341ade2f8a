package nodeid

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// File names in a CA directory and next to an issued certificate.
const (
	CACert = "ca.crt"
	CAKey  = "ca.key"
	// Secret is the cluster's transfer secret: per-move tokens are derived
	// from it (see Token), a second factor beside the certificates.
	Secret = "transfer.secret"
	// CRL is the CA's list of revoked certificates (`drove ca revoke`),
	// signed by the CA: executors look for it beside their ca.crt.
	CRL = "ca.crl"
)

// Lifetimes: the CA outlives the certificates it issues, which are
// re-issued by running `drove ca issue` again.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	nodeLifetime = 2 * 365 * 24 * time.Hour
)

// NodeURI is the URI SAN that names node in its certificate.
func NodeURI(node string) *url.URL {
	return &url.URL{Scheme: "drove", Host: "node", Path: "/" + node}
}

// DNs are the distinguished name Issue gives node's certificate, printed
// in the certificate's order (as gnutls_x509_crt_get_dn does, which
// QEMU's tls-authz matches) and in RFC 4514's reversed order (as other
// versions print it). Node names hold no character a DN would escape
// (validNode).
func DNs(node string) []string {
	return []string{"O=" + nodeOrg + ",CN=" + node, "CN=" + node + ",O=" + nodeOrg}
}

const nodeOrg = "Drove node"

// InitCA creates a CA in dir: ca.crt, ca.key (0600) and transfer.secret
// (0600). It refuses to overwrite an existing CA.
func InitCA(dir, name string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []string{CACert, CAKey, Secret} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%w: %s", ErrExists, filepath.Join(dir, f))
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name, Organization: []string{"Drove"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return errors.Join(
		writeKey(filepath.Join(dir, CAKey), key),
		os.WriteFile(filepath.Join(dir, CACert), pemBlock("CERTIFICATE", der), 0o644),
		writeSecret(filepath.Join(dir, Secret), secret))
}

// Issue signs a certificate for node with the CA in caDir and writes
// NODE.crt and NODE.key (0600) into outDir, beside a copy of ca.crt, of
// the CA's revocation list when there is one, and of the transfer secret:
// outDir is what the node's executor needs.
func Issue(caDir, node, outDir string) error {
	return IssueFor(caDir, node, outDir, nodeLifetime)
}

// IssueFor is Issue for a certificate valid for validFor from now:
// short-lived certificates, renewed before they expire, bound what a
// stolen key is worth without waiting for a revocation to reach every node.
func IssueFor(caDir, node, outDir string, validFor time.Duration) error {
	if validFor <= 0 {
		return fmt.Errorf("nodeid: a certificate valid for %v: want a positive lifetime", validFor)
	}
	if !validNode(node) {
		return fmt.Errorf("nodeid: %q is not a node name (letters, digits, '.', '-', '_')", node)
	}
	caCert, caKey, err := loadCA(caDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return err
	}
	crt, keyPath := filepath.Join(outDir, node+".crt"), filepath.Join(outDir, node+".key")
	if _, err := os.Stat(keyPath); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, keyPath)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: node, Organization: []string{nodeOrg}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{NodeURI(node)}, DNSNames: []string{node},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(caDir, CACert))
	if err != nil {
		return err
	}
	errs := []error{
		writeKey(keyPath, key),
		os.WriteFile(crt, pemBlock("CERTIFICATE", der), 0o644),
		os.WriteFile(filepath.Join(outDir, CACert), caPEM, 0o644),
	}
	if secret, err := readPrivate(filepath.Join(caDir, Secret)); err == nil {
		errs = append(errs, writeSecret(filepath.Join(outDir, Secret), secret))
	}
	if crl, err := os.ReadFile(filepath.Join(caDir, CRL)); err == nil {
		errs = append(errs, os.WriteFile(filepath.Join(outDir, CRL), crl, 0o644))
	}
	return errors.Join(errs...)
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(filepath.Join(dir, CACert))
	if err != nil {
		return nil, nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, nil, fmt.Errorf("nodeid: %s: no PEM certificate", filepath.Join(dir, CACert))
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, nil, err
	}
	kb, err := readPrivate(filepath.Join(dir, CAKey))
	if err != nil {
		return nil, nil, err
	}
	kblk, _ := pem.Decode(kb)
	if kblk == nil {
		return nil, nil, fmt.Errorf("nodeid: %s: no PEM key", filepath.Join(dir, CAKey))
	}
	k, err := x509.ParsePKCS8PrivateKey(kblk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("nodeid: %s: %w", filepath.Join(dir, CAKey), err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("nodeid: %s: not an ECDSA key", filepath.Join(dir, CAKey))
	}
	return cert, key, nil
}

func validNode(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, r := range n {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_'
		if !ok {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// writeKey writes key as PKCS #8, the form Kafka's PEM key stores take
// too (a node's files can serve a broker).
func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePrivate(path, pemBlock("PRIVATE KEY", der))
}

func writeSecret(path string, secret []byte) error {
	return writePrivate(path, pemBlock("DROVE TRANSFER SECRET", secret))
}

// writePrivate creates path 0600, refusing to follow or replace a file.
func writePrivate(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Close())
}
