// Package deploy holds Drove's deployments: compose.yaml (Apache Kafka in
// KRaft mode, PostgreSQL and every service), the Dockerfile, and the
// embedded (deploy/embedded) and all-in-one (deploy/allinone) ones.
package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/drovehq/drove/deploy/apachekafka"
)

// The compose file must validate: `docker compose config` (or the older
// docker-compose) parses it fully without a Docker engine.
func TestComposeFileValidates(t *testing.T) {
	var cmd *exec.Cmd
	if err := exec.Command("docker", "compose", "version").Run(); err == nil {
		cmd = exec.Command("docker", "compose", "-f", "compose.yaml", "config")
	} else if path, err := exec.LookPath("docker-compose"); err == nil {
		cmd = exec.Command(path, "-f", "compose.yaml", "config")
	} else {
		t.Fatal("neither `docker compose` nor docker-compose is installed: run `make test-deps` (installs Debian's docker-compose)")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	for _, want := range []string{"kafka:", "KAFKA_PROCESS_ROLES: broker,controller", "postgres:", "projector", "planner", "gateway", "executor",
		// Kafka takes SASL over TLS only, and the services are told so.
		"SECURE:SASL_SSL", "KAFKA_SSL_KEYSTORE_TYPE: PEM", "KAFKA_CA_FILE: /pki/kafka/ca.crt", "KAFKA_SASL_MECHANISM: PLAIN",
		"DROVE_TLS_CERT: /pki/node-a1/node-a1.crt"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the resolved compose file lacks %q", want)
		}
	}
	// A production partition count, not the demo's 3.
	if !regexp.MustCompile(`DROVE_PARTITIONS: ["']?24["']?\n`).Match(out) {
		t.Errorf("the services are not given a production partition count (DROVE_PARTITIONS: 24):\n%s", out)
	}
	if strings.Contains(string(out), "PLAINTEXT://") {
		t.Errorf("a Kafka listener in plain text:\n%s", out)
	}
}

// The compose file runs the Apache Kafka the tests run (deploy/
// apachekafka/pom.xml): one version, proven by the tests.
func TestComposeKafkaIsTheTestedVersion(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+image:\s*apache/kafka:(\S+)\s*$`).FindAllSubmatch(b, -1)
	if len(m) != 1 {
		t.Fatalf("compose.yaml names %d apache/kafka images; want one", len(m))
	}
	if got := string(m[0][1]); got != apachekafka.Version {
		t.Fatalf("compose.yaml runs apache/kafka:%s; the tests run %s (deploy/apachekafka/pom.xml)", got, apachekafka.Version)
	}
}
