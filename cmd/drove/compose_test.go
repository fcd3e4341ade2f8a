package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/kafkaacl"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/projector/notary"
)

// composeFile is deploy/compose.yaml as far as this test reads it.
type composeFile struct {
	Services map[string]struct {
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

// loadCompose reads deploy/compose.yaml, with compose's ${VAR:-default}
// resolved from the environment as `docker compose` does.
func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	vars := regexp.MustCompile(`\$\$|\$\{(\w+)(:-([^}]*))?\}`)
	for _, s := range c.Services {
		for k, v := range s.Environment {
			s.Environment[k] = vars.ReplaceAllStringFunc(v, func(m string) string {
				if m == "$$" {
					return "$"
				}
				sub := vars.FindStringSubmatch(m)
				if got, ok := os.LookupEnv(sub[1]); ok && got != "" {
					return got
				}
				return sub[3]
			})
		}
	}
	return c
}

// brokerProperties are the server properties the apache/kafka image makes
// of a container's KAFKA_* variables (KAFKA_FOO_BAR is foo.bar; ___ is
// '-' and __ is '_'), with the compose file's hosts, ports and paths
// replaced by the test's: apachekafka writes the listeners and the voters
// with its own host and ports (the names and protocols are checked to be
// compose's), and /pki is pki.
func brokerProperties(t *testing.T, env map[string]string, pki string) map[string]string {
	t.Helper()
	name := strings.NewReplacer("___", "-", "__", "_", "_", ".")
	props := map[string]string{}
	for k, v := range env {
		if rest, ok := strings.CutPrefix(k, "KAFKA_"); ok {
			props[name.Replace(strings.ToLower(rest))] = v
		}
	}
	for k, want := range map[string]string{
		"listeners":                      `^SECURE://:\d+,CONTROLLER://[\w.]+:\d+$`,
		"advertised.listeners":           `^SECURE://kafka:\d+$`,
		"controller.quorum.voters":       `^1@[\w.]+:\d+$`,
		"listener.security.protocol.map": `^CONTROLLER:PLAINTEXT,SECURE:SASL_SSL$`,
		"inter.broker.listener.name":     `^SECURE$`,
		"controller.listener.names":      `^CONTROLLER$`,
		"node.id":                        `^1$`,
	} {
		if !regexp.MustCompile(want).MatchString(props[k]) {
			t.Fatalf("compose's kafka has %s=%q; this test runs it as %s", k, props[k], want)
		}
	}
	delete(props, "listeners")
	delete(props, "advertised.listeners")
	delete(props, "controller.quorum.voters")
	for k, v := range props {
		if rest, ok := strings.CutPrefix(v, "/pki/"); ok {
			props[k] = filepath.Join(pki, rest)
		}
	}
	return props
}

// composePKI makes the pki volume as compose's pki service does, with
// `drove ca`: the CA, the broker's certificate, and keystore.pem (its key
// and certificate). The broker is "localhost" here, not "kafka".
func composePKI(t *testing.T, pki string) {
	t.Helper()
	ca := filepath.Join(pki, "ca")
	if code, out, errs := run(t, "", "ca", "init", "--dir", ca); code != exitOK {
		t.Fatalf("drove ca init: %d\n%s%s", code, out, errs)
	}
	out := filepath.Join(pki, "kafka")
	if code, o, errs := run(t, "", "ca", "issue", "--dir", ca, "--out", out, "localhost"); code != exitOK {
		t.Fatalf("drove ca issue: %d\n%s%s", code, o, errs)
	}
	key, err := os.ReadFile(filepath.Join(out, "localhost.key"))
	if err != nil {
		t.Fatal(err)
	}
	crt, err := os.ReadFile(filepath.Join(out, "localhost.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "keystore.pem"), append(key, crt...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// useServiceEnv puts a compose service's environment in this process's,
// with the test's brokers and pki, and clears the Kafka variables it
// does not set.
func useServiceEnv(t *testing.T, env map[string]string, brokers, pki string) {
	t.Helper()
	for _, k := range []string{"KAFKA_TLS", "KAFKA_CA_FILE", "KAFKA_CERT_FILE", "KAFKA_KEY_FILE", "KAFKA_TLS_SERVER_NAME",
		"KAFKA_SASL_MECHANISM", "KAFKA_SASL_USER", "KAFKA_SASL_PASSWORD", "KAFKA_SASL_PASSWORD_FILE", "KAFKA_NAMESPACE"} {
		t.Setenv(k, "")
	}
	for k, v := range env {
		if rest, ok := strings.CutPrefix(v, "/pki/"); ok {
			v = filepath.Join(pki, rest)
		}
		t.Setenv(k, v)
	}
	t.Setenv("KAFKA_BROKERS", brokers)
}

// serviceConfig is the kafka.Config a service of compose builds from its
// environment, through the services' flag code.
func serviceConfig(t *testing.T, env map[string]string, brokers, pki, clientID string) (kafka.Config, int) {
	t.Helper()
	useServiceEnv(t, env, brokers, pki)
	var sf serviceFlags
	fs := flag.NewFlagSet(clientID, flag.ContinueOnError)
	sf.register(fs, false)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	cfg := sf.kafka(clientID)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg, sf.partitions
}

// startComposeKafka starts Apache Kafka as compose's kafka service is
// configured, and sets the cluster up with `drove acls apply` run with
// compose's kafka-setup environment.
func startComposeKafka(t *testing.T, c composeFile, pki string) *apachekafka.Cluster {
	t.Helper()
	start := time.Now()
	composePKI(t, pki)
	admin, _ := serviceConfig(t, c.Services["kafka-setup"].Environment, "unset:1", pki, "drove-test")
	cl, err := apachekafka.Start(t.Context(), apachekafka.Options{
		Dir: filepath.Join(t.TempDir(), "kafka"), Hosts: []string{"localhost"},
		Listener: apachekafka.Listener{Name: "SECURE", Protocol: "SASL_SSL"},
		Settings: brokerProperties(t, c.Services["kafka"].Environment, pki),
		Client:   admin,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Kill() })
	t.Logf("broker listed in %s", time.Since(start).Round(time.Millisecond))
	useServiceEnv(t, c.Services["kafka-setup"].Environment, strings.Join(cl.Brokers(), ","), pki)
	if code, out, errs := run(t, "", "acls", "apply"); code != exitOK {
		t.Fatalf("drove acls apply as compose's kafka-setup: exit %d\n%s%s", code, out, errs)
	}
	return cl
}

// TestComposeDeploymentOnARealBroker runs Apache Kafka with the listener,
// SASL, TLS and authorizer settings of deploy/compose.yaml, the PKI made
// as its pki service makes it and the ACLs its kafka-setup service
// applies; then every service connects with the KAFKA_* environment the
// compose file gives it, and does what it does: the executor, the planner
// and the notary run, the projector reads every topic, the gateway
// appends a request. Each may write exactly the topics it owns. A wrong
// password and a broker of another CA are refused, each with an error
// that says so.
func TestComposeDeploymentOnARealBroker(t *testing.T) {
	start := time.Now()
	c := loadCompose(t)
	pki := filepath.Join(t.TempDir(), "pki")
	cl := startComposeKafka(t, c, pki)
	brokers := strings.Join(cl.Brokers(), ",")
	t.Logf("broker started and set up in %s", time.Since(start).Round(time.Millisecond))
	env := func(svc string) map[string]string {
		e := c.Services[svc].Environment
		if e["KAFKA_SASL_USER"] == "" {
			t.Fatalf("compose's %s has no KAFKA_SASL_USER", svc)
		}
		return e
	}
	runServices(t, env, brokers, pki)
	t.Logf("services ran in %s", time.Since(start).Round(time.Millisecond))
	for svc, user := range map[string]string{"planner": kafkaacl.Planner, "projector": kafkaacl.Projector,
		"gateway": kafkaacl.Gateway, "executor-node-a1": kafkaacl.Executor, "notary": kafkaacl.Notary} {
		cfg, _ := serviceConfig(t, env(svc), brokers, pki, "drove-test-"+user)
		if cfg.SASL.User != user {
			t.Fatalf("compose's %s connects as %q, want %q", svc, cfg.SASL.User, user)
		}
		checkWrites(t, cfg, user)
	}
	t.Logf("writes checked in %s", time.Since(start).Round(time.Millisecond))
	checkRefusals(t, c, brokers, pki)
}

// txnID is the transactional id user's service appends with.
func txnID(user string) string {
	switch user {
	case kafkaacl.Planner:
		return service.TransactionalID
	case kafkaacl.Gateway:
		return fmt.Sprintf("drove-gateway-%s-%d", "test", os.Getpid())
	case kafkaacl.Executor:
		return events.ExecutorGroup("node-a1")
	}
	return "drove-" + user
}

// checkWrites appends to every topic as user: its own topics take the
// event, every other is refused by the brokers' ACLs, before anything is
// written. The projector writes nothing: even its producer is refused.
func checkWrites(t *testing.T, cfg kafka.Config, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg.TransactionalID = txnID(user)
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	owns := kafkaacl.Writes(user)
	for _, topic := range events.Topics() {
		ev := events.New(events.RequestApproved{Request: "acl-" + user}, events.WithProducer(user),
			events.WithReason(events.Reason{Actor: "operator:test", Why: "testing the ACLs", RequestID: "acl-" + user}))
		err := p.Append(ctx, topic, ev)
		switch {
		case slices.Contains(owns, topic) && err != nil:
			t.Errorf("%s appending to its own %s: %v", user, topic, err)
		case !slices.Contains(owns, topic) && !errors.Is(err, kafka.ErrDenied):
			t.Errorf("%s appending to %s, which it does not own: %v; want kafka.ErrDenied", user, topic, err)
		case err != nil && user == kafkaacl.Executor && (topic == events.TopicRequests || topic == events.TopicPlans),
			err != nil && user == kafkaacl.Gateway && topic == events.TopicOpcodes:
			t.Logf("%s appending to %s: %v", user, topic, err)
		}
	}
}

// runServices runs the executor, the planner and the notary as compose
// does, each as its own user, until each has done its part: the executor
// heartbeats, the gateway's request is appended, the notary certifies it,
// the projector reads all of it; the planner stands through it all.
func runServices(t *testing.T, env func(string) map[string]string, brokers, pki string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	type ended struct {
		name string
		err  error
	}
	done := make(chan ended, 3)
	running := 0
	goRun := func(name string, f func() error) {
		running++
		go func() { done <- ended{name, f()} }()
	}
	defer func() {
		cancel()
		for ; running > 0; running-- {
			if e := <-done; e.err != nil && !errors.Is(e.err, context.Canceled) {
				t.Errorf("%s, stopped: %v", e.name, e.err)
			}
		}
	}()

	ncfg, _ := serviceConfig(t, env("notary"), brokers, pki, "drove-notary")
	goRun("notary", func() error {
		return notary.Run(ctx, notary.Config{Kafka: ncfg, Interval: 100 * time.Millisecond, Logger: quiet})
	})
	pcfg, parts := serviceConfig(t, env("planner"), brokers, pki, "drove-planner")
	s, err := service.New(service.Config{Kafka: pcfg, Partitions: parts, Standby: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	goRun("planner", func() error { return s.Run(ctx) })
	ecfg, parts := serviceConfig(t, env("executor-node-a1"), brokers, pki, "drove-executor-node-a1")
	d, err := sim.New(allinone.DemoSim())
	if err != nil {
		t.Fatal(err)
	}
	e, err := executor.New(executor.Config{Node: "node-a1", Kafka: ecfg, Partitions: parts,
		Heartbeat: 100 * time.Millisecond, Logger: quiet}, d)
	if err != nil {
		t.Fatal(err)
	}
	goRun("executor", func() error { return e.Run(ctx) })

	proj, _ := serviceConfig(t, env("projector"), brokers, pki, "drove-projector")
	waitFor(t, done, proj, events.TopicHeartbeats, "the executor's heartbeat")

	gcfg, parts := serviceConfig(t, env("gateway"), brokers, pki, "drove-gateway")
	gcfg.TransactionalID = txnID(kafkaacl.Gateway)
	if err := kafka.EnsureTopics(ctx, gcfg, parts, events.Topics()...); err != nil {
		t.Fatalf("the gateway's EnsureTopics: %v", err)
	}
	g, err := kafka.NewProducer(gcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ev := events.New(events.RequestApproved{Request: "r-compose"}, events.WithProducer("gateway"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "testing compose", RequestID: "r-compose"}))
	if err := g.Append(ctx, events.TopicRequests, ev); err != nil {
		t.Fatalf("the gateway's append of a request: %v", err)
	}
	waitFor(t, done, proj, events.TopicCheckpoints, "the notary's checkpoint")
	for _, topic := range events.Topics() {
		if _, err := kafka.ReadAll(ctx, proj, topic); err != nil {
			t.Errorf("the projector reading %s: %v", topic, err)
		}
	}
}

// serviceWait bounds the wait for a service's first record: beside a
// loaded make test the broker took 98 s to start and the executor's
// first heartbeat came after 30.
const serviceWait = 2 * time.Minute

// waitFor waits until topic holds a record, read with cfg, failing at
// once if a service ends meanwhile.
func waitFor[T any](t *testing.T, ended <-chan T, cfg kafka.Config, topic, what string) {
	t.Helper()
	deadline := time.After(serviceWait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		recs, err := kafka.ReadAll(t.Context(), cfg, topic)
		if err != nil {
			t.Fatalf("reading %s as %s: %v", topic, cfg.SASL.User, err)
		}
		if len(recs) > 0 {
			return
		}
		select {
		case e := <-ended:
			t.Fatalf("waiting for %s, a service ended: %+v", what, e)
		case <-deadline:
			t.Fatalf("no record on %s within %s: %s never came", topic, serviceWait, what)
		case <-tick.C:
		}
	}
}

// checkRefusals: compose's kafka-setup run with a wrong password is told
// SASL refused it, and with the CA of another `drove ca` that the broker
// is not the one it trusts; neither error shows the password.
func checkRefusals(t *testing.T, c composeFile, brokers, pki string) {
	t.Helper()
	setup := c.Services["kafka-setup"].Environment
	useServiceEnv(t, setup, brokers, pki)
	t.Setenv("KAFKA_SASL_PASSWORD", "wrong-pw-4d1e")
	code, _, errs := run(t, "", "acls", "apply", "--timeout", "30s")
	if code == exitOK || !strings.Contains(errs, "SASL authentication refused") || !strings.Contains(errs, "PLAIN as admin") {
		t.Errorf("acls apply with a wrong password: exit %d, %q; want SASL authentication refused, PLAIN as admin", code, errs)
	}
	if strings.Contains(errs, "wrong-pw-4d1e") {
		t.Errorf("the error shows the password: %s", errs)
	}
	t.Logf("a wrong password: %s", strings.TrimSpace(errs))

	other := filepath.Join(t.TempDir(), "other-ca")
	if code, out, errs := run(t, "", "ca", "init", "--dir", other); code != exitOK {
		t.Fatalf("drove ca init: %d\n%s%s", code, out, errs)
	}
	useServiceEnv(t, setup, brokers, pki)
	t.Setenv("KAFKA_CA_FILE", filepath.Join(other, "ca.crt"))
	code, _, errs = run(t, "", "acls", "apply", "--timeout", "30s")
	if code == exitOK || !strings.Contains(errs, "TLS with the broker failed") || !strings.Contains(errs, "certificate") {
		t.Errorf("acls apply trusting another CA: exit %d, %q; want TLS with the broker failed, naming the certificate", code, errs)
	}
	t.Logf("another CA: %s", strings.TrimSpace(errs))
}
