package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func parse(args []string, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 1, "a number")
	return *n, Parse(fs, args)
}

// Help exits 0, a bad flag or a stray argument 2 with the bench's name,
// and good flags go on.
func TestFlagsExitCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		ok   bool
		says string
	}{
		{[]string{"-n", "3"}, 0, true, ""},
		{[]string{"-h"}, 0, false, "Usage"},
		{[]string{"-m"}, 2, false, "x: flag provided but not defined: -m"},
		{[]string{"stray"}, 2, false, `x: unexpected arguments ["stray"]`},
	} {
		var out strings.Builder
		n, code, ok := Flags("x", c.args, &out, parse)
		if code != c.code || ok != c.ok || !strings.Contains(out.String(), c.says) || (ok && n != 3) {
			t.Errorf("%v: code %d, ok %t, n %d, said %q", c.args, code, ok, n, out.String())
		}
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

func TestKafkaFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
		bad  bool
	}{{nil, KafkaApache, false}, {[]string{"-kafka", "embedded"}, KafkaEmbedded, false}, {[]string{"-kafka", "kfake"}, "kfake", true}} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		v := KafkaFlag(fs, "the broker")
		if err := fs.Parse(tc.args); err != nil || *v != tc.want {
			t.Fatalf("%v: -kafka %q, %v; want %q", tc.args, *v, err, tc.want)
		}
		if problem := CheckKafka(*v); (problem != "") != tc.bad || (tc.bad && !strings.Contains(problem, "want apache or embedded")) {
			t.Errorf("%v: CheckKafka says %q", tc.args, problem)
		}
	}
}
