// Package cli is what the benchmarks' mains share: reading their flags
// the same way (help exits 0, a bad flag or a stray argument 2, said as
// "name: problem"), stopping at Ctrl-C, and writing their figures as
// JSON under test/bench/results (docs/benchmarks.md keeps what was
// measured when).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Parse parses args into fs and refuses positional arguments: no bench
// takes any, so one is a mistyped flag.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// The brokers a bench's -kafka flag names: a real Apache Kafka broker
// the bench starts (make test-deps fetches it), or franz-go's kfake in the
// bench's own process.
const (
	KafkaApache   = "apache"
	KafkaEmbedded = "embedded"
)

// KafkaFlag defines -kafka on fs, Apache Kafka by default; what says what
// the broker is for. Check the value with CheckKafka.
func KafkaFlag(fs *flag.FlagSet, what string) *string {
	return fs.String("kafka", KafkaApache, fmt.Sprintf("%s: %s (a real Apache Kafka broker; make test-deps fetches it) or %s (franz-go's kfake)",
		what, KafkaApache, KafkaEmbedded))
}

// CheckKafka returns what is wrong with a -kafka value, "" if nothing.
func CheckKafka(v string) string {
	if v == KafkaApache || v == KafkaEmbedded {
		return ""
	}
	return fmt.Sprintf("-kafka %q: want %s or %s", v, KafkaApache, KafkaEmbedded)
}

// Flags reads a bench's configuration with parse. When ok is false the
// bench must exit with code: 0 after -h (the flag package printed the
// usage), 2 after a bad flag, which Flags printed to stderr as
// "name: problem".
func Flags[C any](name string, args []string, stderr io.Writer, parse func([]string, io.Writer) (C, error)) (cfg C, code int, ok bool) {
	cfg, err := parse(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return cfg, 0, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return cfg, 2, false
	}
	return cfg, 0, true
}

// Run is a bench's main: it reads the flags as Flags does, then runs run
// with a context that ends at an interrupt (Ctrl-C), and returns the
// process's exit code.
func Run[C any](name string, args []string, stderr io.Writer, parse func([]string, io.Writer) (C, error),
	run func(context.Context, C) int) int {
	cfg, code, ok := Flags(name, args, stderr, parse)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, cfg)
}

// WriteJSON writes v to path as indented JSON, making its folder.
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Report is a bench's ending: the table of r (when it got that far)
// printed and r written to out as JSON, then err; it returns the exit
// code (1 for either failure).
func Report[R any](name, out string, r *R, err error, table func(io.Writer, *R), stdout, stderr io.Writer) int {
	if r != nil {
		table(stdout, r)
		if werr := WriteJSON(out, r); werr != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, werr)
			return 1
		}
		fmt.Fprintf(stdout, "written to %s\n", out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// Main is a bench's whole main: its flags (parse), a context that ends at
// an interrupt, the bench run with the command's output, and its Report
// (the table, the JSON at the path out names).
func Main[C, R any](name string, parse func([]string, io.Writer) (C, error),
	bench func(context.Context, C, io.Writer) (*R, error), out func(C) string, table func(io.Writer, *R)) {
	os.Exit(Run(name, os.Args[1:], os.Stderr, parse, func(ctx context.Context, cfg C) int {
		r, err := bench(ctx, cfg, os.Stdout)
		return Report(name, out(cfg), r, err, table, os.Stdout, os.Stderr)
	}))
}

// Host is where a bench ran, as every bench's JSON says it (embedded, so
// the keys stay date, go_version and cpus).
type Host struct {
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
	CPUs      int    `json:"cpus"`
}

// ThisHost is this machine, now.
func ThisHost() Host {
	return Host{Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(), CPUs: runtime.NumCPU()}
}

// LoadAvg is /proc/loadavg's three load averages, or "" off Linux.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Median is the middle of xs, or the mean of the middle two; 0 for none.
func Median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
