package qemu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/drovehq/drove/executor/nodeid"
)

// QEMU's own TLS for its migration stream: the source and the target VM
// each get a tls-creds-x509 object over the node's identity (the files
// `drove ca issue` wrote: the node's certificate and key, the cluster's
// CA), the target's a server that verifies its peer, the source's a
// client that checks the target's certificate names the target node (a
// node certificate carries its node name as a DNS SAN), and the target
// takes a stream only from the move's source node (tls-authz, matched
// against the client certificate's distinguished name, which `drove ca
// issue` makes CN=NODE,O=Drove node), and, as both ends of Drove's own
// streams do, refuses certificates on the CA's revocation list (gnutls
// reads ca-crl.pem on the server side). QEMU speaks TLS
// on the stream itself, so post-copy's return path is covered too. The
// files are copied into QEMU's layout at each migration, so a renewed
// certificate is used from the next one on.

const (
	tlsClientID = "drove-tls-client"
	tlsServerID = "drove-tls-server"
	tlsAuthzID  = "drove-tls-authz"
)

// ffdhe2048 is RFC 7919's 2048-bit finite-field group, in PKCS #3 PEM.
const ffdhe2048 = `-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
`

// tlsOn says whether the migration stream goes over TLS.
func (d *Driver) tlsOn() bool { return d.cfg.TLS.Cert != "" }

// tlsDir writes the node's identity in QEMU's tls-creds-x509 layout
// (ca-cert.pem, server-cert.pem and -key.pem, client-cert.pem and
// -key.pem) into Dir/tls and returns it.
func (d *Driver) tlsDir() (string, error) {
	dir := filepath.Join(d.cfg.Dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f := d.cfg.TLS
	for _, c := range []struct{ from, to string }{
		{f.CA, "ca-cert.pem"}, {f.Cert, "server-cert.pem"}, {f.Key, "server-key.pem"},
		{f.Cert, "client-cert.pem"}, {f.Key, "client-key.pem"},
	} {
		b, err := os.ReadFile(c.from)
		if err != nil {
			return "", fmt.Errorf("qemu: the node's identity for TLS: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.to), b, 0o600); err != nil {
			return "", err
		}
	}
	// Without dh-params.pem a server's credentials make QEMU generate
	// Diffie-Hellman parameters at object-add: seconds of CPU, past the
	// QMP timeout on a loaded node (seen in tests). The standard group
	// serves (TLS 1.3 negotiates ECDHE anyway); it is public.
	if err := os.WriteFile(filepath.Join(dir, "dh-params.pem"), []byte(ffdhe2048), 0o600); err != nil {
		return "", err
	}
	// The revocation list is optional: copied when there is one, and a
	// copy from an earlier migration removed when there is none now.
	crl := filepath.Join(dir, "ca-crl.pem")
	switch b, err := os.ReadFile(f.CRLPath()); {
	case err == nil:
		if err := os.WriteFile(crl, b, 0o600); err != nil {
			return "", err
		}
	case errors.Is(err, os.ErrNotExist):
		if err := os.Remove(crl); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	default:
		return "", fmt.Errorf("qemu: the CA's revocation list: %w", err)
	}
	return dir, nil
}

// addTLS (re)creates the VM's TLS credentials object id for endpoint
// (client or server). QEMU's load-time lint of the files is off
// (sanity-check): it wants key encipherment in a certificate's key
// usage, which an ECDSA node certificate has no use for; the peer's
// certificate is still verified against the CA in the handshake.
func (d *Driver) addTLS(v *vm, id, endpoint string) error {
	dir, err := d.tlsDir()
	if err != nil {
		return err
	}
	return d.replaceObject(v, map[string]any{"qom-type": "tls-creds-x509", "id": id, "dir": dir,
		"endpoint": endpoint, "verify-peer": true, "sanity-check": false})
}

// replaceObject adds the QOM object obj, deleting one of its id first.
func (d *Driver) replaceObject(v *vm, obj map[string]any) error {
	var objs []struct {
		Name string `json:"name"`
	}
	if err := d.exec(v, "qom-list", map[string]any{"path": "/objects"}, &objs); err != nil {
		return err
	}
	if slices.ContainsFunc(objs, func(o struct {
		Name string `json:"name"`
	}) bool {
		return o.Name == obj["id"]
	}) {
		if err := d.exec(v, "object-del", map[string]any{"id": obj["id"]}, nil); err != nil {
			return err
		}
	}
	return d.exec(v, "object-add", obj, nil)
}

// sourceTLS sets the source VM's migration to TLS to node to.
func (d *Driver) sourceTLS(v *vm, to string) error {
	if !d.tlsOn() {
		return d.exec(v, "migrate-set-parameters", map[string]any{"tls-creds": ""}, nil)
	}
	if err := d.addTLS(v, tlsClientID, "client"); err != nil {
		return fmt.Errorf("qemu: TLS credentials of the source: %w", err)
	}
	return d.exec(v, "migrate-set-parameters", map[string]any{"tls-creds": tlsClientID, "tls-hostname": to}, nil)
}

// targetTLS sets the incoming VM to take only a TLS stream from node
// from, with a certificate of the cluster's CA that is not revoked.
func (d *Driver) targetTLS(v *vm, from string) error {
	if !d.tlsOn() {
		return nil
	}
	if err := d.addTLS(v, tlsServerID, "server"); err != nil {
		return fmt.Errorf("qemu: TLS credentials of the target: %w", err)
	}
	var rules []map[string]any
	for _, dn := range nodeid.DNs(from) {
		rules = append(rules, map[string]any{"match": dn, "policy": "allow", "format": "exact"})
	}
	if err := d.replaceObject(v, map[string]any{"qom-type": "authz-list", "id": tlsAuthzID,
		"policy": "deny", "rules": rules}); err != nil {
		return fmt.Errorf("qemu: the target's check of the source node: %w", err)
	}
	return d.exec(v, "migrate-set-parameters", map[string]any{"tls-creds": tlsServerID, "tls-authz": tlsAuthzID}, nil)
}
