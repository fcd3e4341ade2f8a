package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/test/bench/cli"
)

const defaultHail = "/usr/lib/ganeti/iallocators/hail"

// config is the bench's flags.
type config struct {
	quick     bool
	sizes     []int
	budget    time.Duration
	runs      int
	seed      uint64
	mix       clustergen.Mix
	hail      string
	hailArgs  []string
	droveBin  string
	out       string
	keep      string
	large     bool
	largeMix  clustergen.Mix
	largeN    int
	largeIPN  int
	childCase string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := cli.Flags("bench", args, stderr, parseFlags)
	if !ok {
		return code
	}
	if cfg.childCase == "large" {
		return runLargeChild(cfg, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runBench(ctx, cfg, stdout, stderr)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{}
	fs := flag.NewFlagSet("planner bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "20,80,140", "nodes per group of the clusters compared with hail, comma separated")
	mix := fs.String("mix", "drbd=0.8,plain=0.1,rbd=0.1", "storage-kind weights of the compared clusters (hail cannot read zfs kinds)")
	largeMix := fs.String("large-mix", "drbd=0.7,plain=0.1,rbd=0.1,zfs-local=0.1", "storage-kind weights of the large cluster (Drove only)")
	hailArgs := fs.String("hail-args", "", "extra arguments for hail, space separated (such as --no-capacity-checks)")
	fs.BoolVar(&cfg.quick, "quick", false, "compare at 20 nodes per group only, and skip the large case unless -large is given")
	fs.DurationVar(&cfg.budget, "budget", 120*time.Second, "time hail gets per case before it is killed")
	fs.IntVar(&cfg.runs, "runs", 5, "runs of Drove per case; the best is reported")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the generated clusters and requests")
	fs.StringVar(&cfg.hail, "hail", defaultHail, "path of Ganeti's hail (Debian package ganeti-htools)")
	fs.StringVar(&cfg.droveBin, "drove-bin", "", "also time this `drove` binary (drove iallocator FILE); empty skips it")
	fs.StringVar(&cfg.out, "out", "test/bench/results/planner.json", "where to write the summary as JSON")
	fs.StringVar(&cfg.keep, "keep", "", "keep the request and answer documents in this directory")
	fs.BoolVar(&cfg.large, "large", true, "run the large case (Drove only) after the comparison")
	fs.IntVar(&cfg.largeN, "large-nodes", 5000, "nodes of the large case's single group")
	fs.IntVar(&cfg.largeIPN, "large-instances-per-node", 10, "instances per node of the large case")
	fs.StringVar(&cfg.childCase, "case", "", "internal: run one case in this process (large) and print it as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	var probs []string
	var err error
	if cfg.sizes, err = parseSizes(*sizes); err != nil {
		probs = append(probs, err.Error())
	}
	if cfg.quick {
		cfg.sizes = []int{20}
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "large" })
		cfg.large = cfg.large && explicit
	}
	if cfg.mix, err = parseMix(*mix); err != nil {
		probs = append(probs, "-mix: "+err.Error())
	}
	if cfg.largeMix, err = parseMix(*largeMix); err != nil {
		probs = append(probs, "-large-mix: "+err.Error())
	}
	cfg.hailArgs = strings.Fields(*hailArgs)
	if cfg.budget <= 0 {
		probs = append(probs, "-budget must be positive")
	}
	if cfg.runs < 1 {
		probs = append(probs, "-runs must be at least 1")
	}
	if cfg.largeN < 2 || cfg.largeIPN < 1 {
		probs = append(probs, "-large-nodes must be at least 2 and -large-instances-per-node at least 1")
	}
	if len(probs) > 0 {
		return cfg, errors.New(strings.Join(probs, "; "))
	}
	return cfg, nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 5 {
			return nil, fmt.Errorf("-sizes: %q is not a node count of at least 5", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseMix(s string) (clustergen.Mix, error) {
	m := clustergen.Mix{}
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		w, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || w < 0 {
			return nil, fmt.Errorf("%q is not kind=weight", f)
		}
		if !planner.StorageKind(k).Known() {
			return nil, fmt.Errorf("unknown storage kind %q", k)
		}
		m[planner.StorageKind(k)] = w
	}
	return m, nil
}

// runBench runs the comparison cases, then the large case, prints the
// summary and writes it as JSON.
func runBench(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	if _, err := os.Stat(cfg.hail); err != nil {
		fmt.Fprintf(stderr, "bench: hail not found at %s (apt-get install -y ganeti-htools): %v\n", cfg.hail, err)
		return 2
	}
	workdir := cfg.keep
	if workdir == "" {
		d, err := os.MkdirTemp("", "drove-bench-")
		if err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return 2
		}
		defer os.RemoveAll(d)
		workdir = d
	} else if err := os.MkdirAll(workdir, 0o755); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	sum := newSummary(cfg)
	fmt.Fprintf(stdout, "planner bench: hail %s, budget %s per case, Drove best of %d, seed %d\n\n",
		cfg.hail, cfg.budget, cfg.runs, cfg.seed)
	for _, npg := range cfg.sizes {
		cases, err := runSize(ctx, cfg, npg, workdir, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %d nodes per group: %v\n", npg, err)
			return 2
		}
		sum.Cases = append(sum.Cases, cases...)
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "bench: interrupted")
			return 2
		}
	}
	if cfg.large {
		l, err := runLargeParent(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "bench: large case: %v\n", err)
			sum.Notes = append(sum.Notes, "large case failed: "+err.Error())
		} else {
			sum.Large = l
			printLarge(stdout, l)
		}
	}
	sum.LoadEnd = cli.LoadAvg()
	sum.judgeAll()
	printSummary(stdout, sum)
	if err := cli.WriteJSON(cfg.out, sum); err != nil {
		fmt.Fprintf(stderr, "bench: writing %s: %v\n", cfg.out, err)
		return 2
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", cfg.out)
	if !sum.QualityOK {
		fmt.Fprintln(stdout, "QUALITY: FAILED in at least one case (see above)")
		return 1
	}
	return 0
}
