package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/bench/cli"
	"github.com/drovehq/drove/test/bench/eventlog"
	"github.com/drovehq/drove/test/bench/subproc"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// brokerSettings are the benchmark brokers' server properties over
// apachekafka's defaults: the internal topics at a few partitions, as a
// small cluster would have them, so their creation at first use does not
// land in a timed figure. Everything else is Kafka's default.
var brokerSettings = map[string]string{
	"offsets.topic.num.partitions":         "3",
	"transaction.state.log.num.partitions": "3",
}

// infra is what every measure runs on: Postgres, kfake and one Apache
// Kafka broker.
type infra struct {
	tmp    string
	bin    string
	pg     *embedded.PostgresServer
	kfake  *embedded.BrokerServer
	apache *apachekafka.Cluster
}

// brokers are the two brokers compared, by name.
func (in *infra) brokers() []namedBroker {
	return []namedBroker{{"apache", in.apache.Config()}, {"kfake", kafka.Config{Brokers: in.kfake.Addrs()}}}
}

type namedBroker struct {
	name string
	cfg  kafka.Config
}

func startInfra(ctx context.Context, cfg config, stdout io.Writer) (*infra, error) {
	tmp, err := os.MkdirTemp("", "drove-bench-kafka-")
	if err != nil {
		return nil, err
	}
	in := &infra{tmp: tmp}
	// As root, Postgres runs as the postgres user, who must reach its dir.
	for d := tmp; d != "/" && d != filepath.Dir(os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if in.bin, err = subproc.DroveBinary(ctx, cfg.droveBin, tmp); err != nil {
		return in, err
	}
	if in.pg, err = embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(tmp, "pg")}); err != nil {
		return in, err
	}
	if in.kfake, err = embedded.StartBroker(embedded.Broker{Dir: filepath.Join(tmp, "kfake"), Logger: quiet}); err != nil {
		return in, err
	}
	began := time.Now()
	in.apache, err = apachekafka.Start(ctx, apachekafka.Options{Dir: in.apacheDir(), Settings: brokerSettings})
	if err != nil {
		return in, err
	}
	fmt.Fprintf(stdout, "Apache Kafka %s at %v (started in %s); kfake at %v; Postgres on port %d\n",
		apachekafka.Version, in.apache.Brokers(), time.Since(began).Round(time.Millisecond), in.kfake.Addrs(), in.pg.Port)
	return in, nil
}

func (in *infra) apacheDir() string { return filepath.Join(in.tmp, "apache") }

func (in *infra) stop() {
	if in.apache != nil {
		_ = in.apache.Kill() // its data is thrown away
	}
	if in.kfake != nil {
		in.kfake.Stop()
	}
	if in.pg != nil {
		_ = in.pg.Stop()
	}
	_ = os.RemoveAll(in.tmp)
}

// runBench measures everything in one run, noting what it could not
// measure; it fails only when it cannot start what every measure needs.
func runBench(ctx context.Context, cfg config, stdout io.Writer) (*summary, error) {
	s := newSummary(cfg)
	in, err := startInfra(ctx, cfg, stdout)
	defer in.stop()
	if err != nil {
		return nil, err
	}
	w := eventlog.Build(cfg.events)
	for _, b := range in.brokers() {
		res, err := measureFold(ctx, in, b, w, cfg.txnEvents, stdout)
		if err != nil {
			s.note("projector fold on %s: %v", b.name, err)
			continue
		}
		s.setFold(b.name, res)
	}
	for _, b := range in.brokers() {
		samples, err := measurePlan(ctx, in, b, cfg.requests, stdout)
		if err != nil {
			s.note("request to first opcode on %s: %v", b.name, err)
			continue
		}
		s.setPlan(b.name, samples)
	}
	if err := measureTakeover(ctx, in, cfg, s, stdout); err != nil {
		s.note("planner takeover: %v", err)
	}
	_ = in.apache.Kill() // the 3-node cluster's JVMs need the memory
	in.apache = nil
	if err := measureBrokerKill(ctx, filepath.Join(in.tmp, "three"), s, stdout); err != nil {
		s.note("broker kill to append: %v", err)
	}
	s.LoadEnd = cli.LoadAvg()
	return s, nil
}

func (s *summary) setFold(broker string, res *foldResult) {
	if broker == "apache" {
		s.ProjectorEPSApache, s.FoldApache = ptr(res.EPS), res
	} else {
		s.ProjectorEPSKfake, s.FoldKfake = ptr(res.EPS), res
	}
}

func (s *summary) setPlan(broker string, samples []float64) {
	if broker == "apache" {
		s.PlanSamplesMsApache, s.PlanToFirstOpcodeMsApache = samples, ptr(cli.Median(samples))
	} else {
		s.PlanSamplesMsKfake, s.PlanToFirstOpcodeMsKfake = samples, ptr(cli.Median(samples))
	}
}
