package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/transfer"
)

func runCA(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("ca", `
Usage: drove ca init [--dir DIR]
       drove ca issue [--dir DIR] [--out OUT] [--valid-for D] NODE
       drove ca revoke [--dir DIR] [--cert FILE] NODE

A small certificate authority for the streams that carry moves between
executors. 'init' creates the CA in --dir (ca.crt, ca.key and the cluster's
transfer.secret, keys readable by their owner only). 'issue' signs a
certificate naming NODE and writes into --out (default DIR/NODE) what that
node's executor needs: NODE.crt, NODE.key, ca.crt, ca.crl when there is one
and transfer.secret, for drove executor --tls-cert --tls-key --tls-ca
--transfer-secret.

'revoke' adds NODE's certificate (--cert, default DIR/NODE/NODE.crt, the one
'issue' wrote) to the CA's revocation list DIR/ca.crl, an X.509 CRL signed
by the CA. Copy ca.crl onto every node beside its ca.crt (or where
--tls-crl says): each executor reads it again when it changes, and from
then on every receiver (the stream of a move, QEMU's migration) and every
sender refuses that certificate, with no restart. A missing ca.crl means
nothing is revoked; one that is unreadable or not signed by the CA refuses
every peer. To let the node back in, issue it a new certificate (remove its
old NODE.key first): the list names certificates, not nodes.
Keep ca.key off the nodes.`, stderr)
	dir := fs.String("dir", "drove-ca", "the CA's directory")
	out := fs.String("out", "", "issue: where to write the node's files (default DIR/NODE)")
	validFor := fs.Duration("valid-for", 2*365*24*time.Hour, "issue: how long the certificate is valid")
	certFile := fs.String("cert", "", "revoke: the certificate to revoke (default DIR/NODE/NODE.crt)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case len(pos) == 1 && pos[0] == "init":
		if err := nodeid.InitCA(*dir, "Drove CA"); err != nil {
			return fail(stderr, "ca init", err)
		}
		fmt.Fprintf(stdout, "CA created in %s; keep %s secret and off the nodes.\n", *dir, nodeid.CAKey)
	case len(pos) == 2 && pos[0] == "issue":
		node := pos[1]
		o := *out
		if o == "" {
			o = filepath.Join(*dir, node)
		}
		if err := nodeid.IssueFor(*dir, node, o, *validFor); err != nil {
			return fail(stderr, "ca issue", err)
		}
		f := nodeid.FilesIn(o, node)
		fmt.Fprintf(stdout, "Issued %s:\n  drove executor --node %s --tls-cert %s --tls-key %s --tls-ca %s --transfer-secret %s\n",
			node, node, f.Cert, f.Key, f.CA, f.Secret)
	case len(pos) == 2 && pos[0] == "revoke":
		return caRevoke(*dir, pos[1], *certFile, stdout, stderr)
	default:
		fs.Usage()
		return exitUsage
	}
	return exitOK
}

func caRevoke(dir, node, cert string, stdout, stderr io.Writer) int {
	if cert == "" {
		cert = nodeid.FilesIn(filepath.Join(dir, node), node).Cert
	}
	serial, err := nodeid.Revoke(dir, node, cert)
	if err != nil {
		return fail(stderr, "ca revoke", err)
	}
	fmt.Fprintf(stdout, "Revoked %s's certificate (serial %x) in %s; copy it onto every node beside ca.crt.\n",
		node, serial, filepath.Join(dir, nodeid.CRL))
	return exitOK
}

// tlsFlags are an executor's identity for the streams of moves.
type tlsFlags struct {
	cert, key, ca, secret, crl string
	plain                      bool
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.cert, "tls-cert", os.Getenv("DROVE_TLS_CERT"), "this node's certificate, from `drove ca issue` (env DROVE_TLS_CERT)")
	fs.StringVar(&t.key, "tls-key", os.Getenv("DROVE_TLS_KEY"), "this node's key, mode 0600 (env DROVE_TLS_KEY)")
	fs.StringVar(&t.ca, "tls-ca", os.Getenv("DROVE_TLS_CA"), "the CA that signs the nodes' certificates (env DROVE_TLS_CA)")
	fs.StringVar(&t.secret, "transfer-secret", os.Getenv("DROVE_TRANSFER_SECRET"), "the cluster's transfer secret, mode 0600, for per-move tokens; optional (env DROVE_TRANSFER_SECRET)")
	fs.StringVar(&t.crl, "tls-crl", os.Getenv("DROVE_TLS_CRL"), "the CA's revocation list, from `drove ca revoke`; read again when it changes (default ca.crl beside --tls-ca; env DROVE_TLS_CRL)")
	fs.BoolVar(&t.plain, "plain-transfer", os.Getenv("DROVE_PLAIN_TRANSFER") == "true", "send moves in plain TCP, unencrypted and unauthenticated (trusted networks and tests only; env DROVE_PLAIN_TRANSFER=true)")
}

// files are the identity's files; zero when none is given.
func (t *tlsFlags) files() nodeid.Files {
	if t.cert == "" {
		return nodeid.Files{}
	}
	return nodeid.Files{Cert: t.cert, Key: t.key, CA: t.ca, Secret: t.secret, CRL: t.crl}
}

// identity loads the node's identity; nil when none is given (the
// executor then refuses to run a networked driver unless plain is set).
func (t *tlsFlags) identity(node string) (transfer.Identity, error) {
	if t.cert == "" && t.key == "" && t.ca == "" {
		return nil, nil
	}
	if t.cert == "" || t.key == "" || t.ca == "" {
		return nil, fmt.Errorf("--tls-cert, --tls-key and --tls-ca go together")
	}
	if t.plain {
		return nil, fmt.Errorf("--plain-transfer with --tls-cert: choose one")
	}
	id, err := nodeid.Load(t.files())
	if err != nil {
		return nil, err
	}
	if id.Node() != node {
		return nil, fmt.Errorf("%s names node %q, not --node %q", t.cert, id.Node(), node)
	}
	return id, nil
}
