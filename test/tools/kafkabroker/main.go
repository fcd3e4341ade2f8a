// Command kafkabroker runs a command beside a real Apache Kafka broker:
// it starts one (deploy/apachekafka, with the tests' settings), runs the
// command with KAFKA_BROKERS set to it, and stops the broker when the
// command ends, exiting with the command's status. `make test` runs the
// whole suite under it, so every test package shares one broker by
// address, each test in a namespace of its own (test/testenv).
//
//	go run ./test/tools/kafkabroker -- go test ./...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/test/testenv"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: kafkabroker -- COMMAND [ARG...]\n\n"+
			"Starts an Apache Kafka %s broker in a temporary directory, runs COMMAND with\n"+
			"KAFKA_BROKERS set to it, then stops the broker and exits with COMMAND's status.\n", apachekafka.Version)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args()))
}

func run(argv []string) int {
	dir, err := os.MkdirTemp("", "drove-kafkabroker-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: dir, Settings: testenv.BrokerSettings})
	if err != nil {
		return fail(err)
	}
	defer c.Kill() // its data is thrown away: no need for a clean stop
	if err := testenv.WarmUp(ctx, c.Config()); err != nil {
		return fail(err)
	}
	brokers := strings.Join(c.Brokers(), ",")
	fmt.Fprintf(os.Stderr, "kafkabroker: Apache Kafka %s at %s (started in %s)\n", apachekafka.Version, brokers, time.Since(t0).Round(time.Millisecond))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KAFKA_BROKERS="+brokers)
	// ^C reaches the command (same process group); wait for it to end.
	signal.Ignore(syscall.SIGINT)
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "kafkabroker: %v\n", err)
	return 1
}
