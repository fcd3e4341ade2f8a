package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/test/syncbuf"
)

// TestSecretsStaySecret runs the demo with authentication on and node
// identities issued, uses it (an evacuation, refused and forged
// requests), then greps everything it said — logs at debug level,
// /healthz, /metrics, API answers, every event of every topic — for the
// secrets it was configured with: API tokens, the transfer secret, node
// and CA keys.
func TestSecretsStaySecret(t *testing.T) {
	t.Parallel()
	const (
		opsToken   = "tok-ops-9d7c41e2-secret"
		ownerToken = "tok-owner-51ab07f3-secret"
		forged     = "tok-forged-0c6e99aa-guess"
	)
	logs := &syncbuf.Buffer{}
	pki := t.TempDir()
	e := startWith(t, func(c *allinone.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.GatewayTokens = map[string]gateway.Account{
			opsToken:   {Name: "ops", Role: events.RoleOperator},
			ownerToken: {Name: "acct-nobody", Role: events.RoleOwner},
		}
		c.PKIDir = pki
	}, opsToken)
	ctx := context.Background()
	srv := httptest.NewServer(e.sys.Handler)
	defer srv.Close()

	var said strings.Builder // everything the system answered
	get := func(path, token string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		said.Write(b)
	}
	node := e.sys.Nodes[0]
	a, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all", Reason: "secrets test"})
	if err != nil {
		t.Fatal(err)
	}
	e.finish(a.Request, 3*time.Minute)
	// Refused and forged callers: the audit and the logs must name the
	// refusal, not the token presented.
	owner := client.New(srv.URL, "owner")
	owner.Token = ownerToken
	if _, err := owner.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all", Reason: "not mine"}); err == nil {
		t.Fatal("an owner evacuated a node")
	} else {
		said.WriteString(err.Error())
	}
	forger := client.New(srv.URL, "forger")
	forger.Token = forged
	if _, err := forger.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all", Reason: "forged"}); err == nil {
		t.Fatal("a forged token was accepted")
	} else {
		said.WriteString(err.Error())
	}
	for _, p := range []string{"/healthz", "/metrics", "/v1/requests", "/v1/requests/" + a.Request} {
		get(p, opsToken)
	}
	get("/healthz", "")
	get("/v1/requests", forged)

	log := everyEventJSON(t, e)
	// The outputs hold what happened — the move, the refusal of the
	// owner — so the grep below looks where a leak would be.
	for where, text := range map[string]string{"events": log, "logs": logs.String()} {
		for _, want := range []string{a.Request, node} {
			if !strings.Contains(text, want) {
				t.Fatalf("the %s do not mention %q: nothing to grep", where, want)
			}
		}
	}
	if !strings.Contains(log, "acct-nobody") {
		t.Fatal("the owner's refusal is not in the log")
	}

	secrets := map[string]string{"operator token": opsToken, "owner token": ownerToken, "forged token": forged}
	addKeyLines(t, secrets, pki, node)
	outputs := map[string]string{"logs": logs.String(), "API answers": said.String(), "events": log}
	checkNoSecrets(t, outputs, secrets)
}

// everyEventJSON returns every event of every topic, as JSON.
func everyEventJSON(t *testing.T, e *env) string {
	var log bytes.Buffer
	for _, topic := range events.Topics() {
		recs, err := readAll(e, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			b, err := json.Marshal(r.Event)
			if err != nil {
				t.Fatal(err)
			}
			log.Write(b)
		}
	}
	return log.String()
}

// addKeyLines adds to secrets the lines of the transfer secret, the CA key
// and node's key that pki holds.
func addKeyLines(t *testing.T, secrets map[string]string, pki, node string) {
	for name, file := range map[string]string{
		"transfer secret": filepath.Join(pki, "ca", nodeid.Secret),
		"CA key":          filepath.Join(pki, "ca", nodeid.CAKey),
		"node key":        filepath.Join(pki, node, node+".key"),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The PEM body's lines: any of them showing is a leak.
		for i, line := range strings.Split(string(b), "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				secrets[fmt.Sprintf("%s line %d", name, i)] = line
			}
		}
	}
}

// checkNoSecrets fails for every secret any output shows.
func checkNoSecrets(t *testing.T, outputs, secrets map[string]string) {
	for where, text := range outputs {
		for name, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Errorf("the %s show the %s: ...%s...", where, name, text[max(0, i-120):min(len(text), i+len(s)+40)])
			}
		}
	}
}
