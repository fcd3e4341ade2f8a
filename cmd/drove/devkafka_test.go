package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/syncbuf"
)

// TestDevOnApacheKafkaKeepsItsLogAcrossRestarts runs drove dev --kafka
// apache on a new directory, waits until the API answers, stops it, and
// starts it again: the same broker, on the same address, with the same
// seeded inventory (the demo is not seeded twice).
func TestDevOnApacheKafkaKeepsItsLogAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	first, declared := runDevOnce(t, dir)
	again, redeclared := runDevOnce(t, dir)
	if first != again {
		t.Fatalf("the broker line changed across a restart:\n%s\n%s", first, again)
	}
	if declared == 0 || redeclared != declared {
		t.Fatalf("instances declared in the log: %d before the restart, %d after; want the same, not 0", declared, redeclared)
	}
	// The notary's signed heads are kept in --dir, outside the log, for
	// drove verify-log --heads.
	if _, err := os.Stat(filepath.Join(dir, "notary-heads.jsonl")); err != nil {
		t.Fatalf("drove dev kept no heads file: %v", err)
	}
}

// runDevOnce runs drove dev --kafka apache on dir until the API lists
// nodes, then stops it; it returns the printed broker line and the
// InstanceDeclared events in the log.
func runDevOnce(t *testing.T, dir string) (string, int) {
	t.Helper()
	port, err := embedded.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pgPort, err := embedded.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	f := devFlags{dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), kafka: kafkaApache, pgPort: pgPort,
		logLevel: "error", driver: "sim", partitions: 3}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncbuf.Buffer
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- f.dev(ctx, &out, &errs) }()
	defer func() {
		stopped := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("drove dev: %v\n%s", err, errs.String())
		}
		t.Logf("drove dev stopped in %s", time.Since(stopped).Round(time.Millisecond))
	}()
	waitAPI(t, f.addr, done, &errs)
	t.Logf("drove dev answered in %s", time.Since(began).Round(time.Millisecond))
	want := regexp.MustCompile(`Kafka: Apache Kafka ` + regexp.QuoteMeta(apachekafka.Version) +
		` at (127\.0\.0\.1:\d+) \(deploy/apachekafka, data in ` + regexp.QuoteMeta(filepath.Join(dir, "apachekafka")) + `\)`)
	m := want.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no line matching %s in drove dev's output:\n%s", want, out.String())
	}
	return m[0], countDeclared(t, m[1])
}

// waitAPI polls the gateway until it lists nodes, within a deadline.
func waitAPI(t *testing.T, addr string, done chan error, errs *syncbuf.Buffer) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("drove dev ended: %v\n%s", err, errs.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/v1/nodes")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"name"`) {
				return
			}
			last = fmt.Sprintf("%d %.200s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond) // polling under the deadline
	}
	t.Fatalf("the API at %s listed no nodes within 90 s; last: %s\n%s", addr, last, errs.String())
}

// countDeclared counts the InstanceDeclared events of the log on broker.
func countDeclared(t *testing.T, broker string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs, err := kafka.ReadAll(ctx, kafka.Config{Brokers: []string{broker}}, events.TopicInventory)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event.Type == events.TypeInstanceDeclared {
			n++
		}
	}
	return n
}

func TestDevRefusesAnUnknownBroker(t *testing.T) {
	code, _, errs := run(t, "", "dev", "--kafka", "pulsar", "--dir", t.TempDir())
	if code != 1 || !strings.Contains(errs, `unknown --kafka "pulsar": embedded or apache`) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// A --dir that holds the embedded broker's log is not run on Apache
// Kafka: Postgres's views there are folded from the other log.
func TestDevRefusesAnotherBrokersDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "kafka"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "dev", "--kafka", "apache", "--dir", dir)
	if code != 1 || !strings.Contains(errs, "holds a log of the embedded broker") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// Without the broker's jars, drove dev --kafka apache says how to get them.
func TestDevOnApacheKafkaSaysWhatIsMissing(t *testing.T) {
	t.Setenv(apachekafka.LibsEnv, t.TempDir())
	code, _, errs := run(t, "", "dev", "--kafka", "apache", "--dir", t.TempDir())
	if code != 1 || !strings.Contains(errs, "make test-deps") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
