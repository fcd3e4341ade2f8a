package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TLS says how clients reach brokers over TLS. The zero value is plain TCP.
type TLS struct {
	// Enabled turns TLS on; it is implied by any file below.
	Enabled bool
	// CAFile is the PEM bundle brokers' certificates are checked against;
	// empty means the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key, for
	// brokers that authenticate clients by certificate (mTLS). Together
	// or not at all.
	CertFile, KeyFile string
	// ServerName overrides the name checked in brokers' certificates;
	// empty means each broker's host.
	ServerName string
}

// On says whether clients use TLS.
func (t TLS) On() bool { return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// SASL says how clients authenticate to brokers. The zero value is none.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty: no SASL.
	Mechanism string
	User      string
	// Password is never logged, printed or put in an error: String and
	// errors name only the user and mechanism.
	Password string
	// PasswordFile, when set, holds the password instead (trailing
	// newline dropped); it must be readable by its owner only.
	PasswordFile string
}

// password is the SASL password, from the file when one is given.
func (s SASL) password() (string, error) {
	if s.PasswordFile == "" {
		return s.Password, nil
	}
	if err := privateFile(s.PasswordFile); err != nil {
		return "", err
	}
	b, err := os.ReadFile(s.PasswordFile)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// String names the mechanism and user, never the password.
func (s SASL) String() string {
	if s.Mechanism == "" {
		return "none"
	}
	return s.Mechanism + " as " + s.User
}

// The SASL mechanisms Drove speaks.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// securityProblems lists what is wrong with the TLS and SASL settings.
func (c Config) securityProblems() []string {
	var ps []string
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		ps = append(ps, "TLS: CertFile and KeyFile go together")
	}
	if c.TLS.On() {
		if _, err := c.TLS.config(); err != nil {
			ps = append(ps, "TLS: "+err.Error())
		}
	}
	switch m := strings.ToUpper(c.SASL.Mechanism); m {
	case "":
		if c.SASL.User != "" || c.SASL.Password != "" || c.SASL.PasswordFile != "" {
			ps = append(ps, "SASL: a user or password without a Mechanism")
		}
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		pw, err := c.SASL.password()
		if err != nil {
			ps = append(ps, "SASL: PasswordFile: "+err.Error())
		} else if c.SASL.User == "" || pw == "" {
			ps = append(ps, "SASL: "+m+" needs a User and a Password")
		}
		if m == MechanismPlain && !c.TLS.On() {
			ps = append(ps, "SASL: PLAIN sends the password as is; use it over TLS only")
		}
	default:
		ps = append(ps, fmt.Sprintf("SASL: unknown Mechanism %q (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", c.SASL.Mechanism))
	}
	return ps
}

// config builds the client's TLS configuration from the files.
func (t TLS) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		b, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" && t.KeyFile != "" {
		if err := privateFile(t.KeyFile); err != nil {
			return nil, err
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// privateFile refuses a key file that group or others can read.
func privateFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is readable by group or others (%v); chmod 600 it", path, st.Mode().Perm())
	}
	return nil
}

// securityOpts are the client options for TLS and SASL. Validate has
// checked them; should the files have changed since, every dial fails
// with the reason rather than fall back to plain TCP.
func (c Config) securityOpts() []kgo.Opt {
	var opts []kgo.Opt
	switch {
	case c.TLS.On():
		cfg, err := c.TLS.config()
		if err != nil {
			return []kgo.Opt{kgo.Dialer(func(context.Context, string, string) (net.Conn, error) {
				return nil, fmt.Errorf("kafka TLS: %w", err)
			})}
		}
		if c.Dial == nil {
			opts = append(opts, kgo.DialTLSConfig(cfg))
			break
		}
		opts = append(opts, kgo.Dialer(tlsOver(c.Dial, cfg)))
	case c.Dial != nil:
		opts = append(opts, kgo.Dialer(c.Dial))
	}
	user := c.SASL.User
	pass, err := c.SASL.password()
	if err != nil {
		return []kgo.Opt{kgo.Dialer(func(context.Context, string, string) (net.Conn, error) {
			return nil, fmt.Errorf("kafka SASL: %w", err)
		})}
	}
	switch strings.ToUpper(c.SASL.Mechanism) {
	case MechanismPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case MechanismScramSHA256:
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case MechanismScramSHA512:
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return opts
}

// explain marks the errors of a connection the brokers refused, for the
// first calls a service makes (EnsureTopics, ReadAll): ErrTLS when no TLS
// session could be made, ErrAuth when SASL was refused, naming the user
// and mechanism (never the password). Brokers refuse bad SASL credentials
// with an error code, or (some, and kfake) by closing the connection in
// the middle of the exchange, which the client sees as an EOF.
func (c Config) explain(err error) error {
	var (
		cv *tls.CertificateVerificationError
		ua x509.UnknownAuthorityError
		rh tls.RecordHeaderError
		fe *kgo.ErrFirstReadEOF
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &cv), errors.As(err, &ua), errors.As(err, &rh):
		return fmt.Errorf("%w (CA %q): %w", ErrTLS, c.TLS.CAFile, err)
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("%w: %s: %w", ErrAuth, c.SASL, err)
	case c.SASL.Mechanism != "" && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &fe)):
		return fmt.Errorf("%w: the brokers closed the connection during SASL %s (wrong password or unknown user?): %w", ErrAuth, c.SASL, err)
	case c.TLS.On() && errors.As(err, &fe):
		return fmt.Errorf("%w: %w", ErrTLS, err)
	}
	return err
}

// tlsOver is a dialer that opens TLS over dial's connections (Config.Dial
// and TLS together; kgo takes one dialer only), checking each broker's
// certificate against its host unless cfg names a server.
func tlsOver(dial func(ctx context.Context, network, host string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		raw, err := dial(ctx, network, host)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			if h, _, err := net.SplitHostPort(host); err == nil {
				c.ServerName = h
			}
		}
		tc := tls.Client(raw, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		return tc, nil
	}
}
