package hailcli

import (
	"errors"
	"fmt"
	"strings"
)

// errUsage marks a command line getopt itself refuses (an unknown or
// ambiguous option, a missing value): hail exits 2 on those, and 1 on a
// value its option refuses.
var errUsage = errors.New("command line error")

// parse reads args as GNU getopt does with permutation: options and
// arguments in any order, "--" ending the options, "-" an argument,
// short options clustered (-vv, -tFILE), long ones as --name=value or
// --name value, abbreviated to any unique prefix (hail's --simu).
func parse(args []string) (Options, []string, error) {
	o := Options{StaticNodeMem: -1}
	opts := options()
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		var err error
		switch {
		case a == "--":
			return o, append(rest, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			i, err = parseLong(&o, opts, args, i)
		case strings.HasPrefix(a, "-") && a != "-":
			i, err = parseShort(&o, opts, args, i)
		default:
			rest = append(rest, a)
		}
		if err != nil {
			return o, nil, err
		}
	}
	return o, rest, nil
}

func parseLong(o *Options, opts []option, args []string, i int) (int, error) {
	name, val, hasVal := strings.Cut(args[i][2:], "=")
	var found []option
	for _, op := range opts {
		if op.long == name {
			found = []option{op}
			break
		}
		if strings.HasPrefix(op.long, name) {
			found = append(found, op)
		}
	}
	switch {
	case len(found) == 0:
		return i, fmt.Errorf("%w: unrecognized option `--%s'", errUsage, name)
	case len(found) > 1:
		return i, fmt.Errorf("%w: option `--%s' is ambiguous", errUsage, name)
	}
	op := found[0]
	switch {
	case op.arg == noArg && hasVal:
		return i, fmt.Errorf("%w: option `--%s' doesn't allow an argument", errUsage, op.long)
	case op.arg == reqArg && !hasVal:
		if i+1 >= len(args) {
			return i, fmt.Errorf("%w: option `--%s' requires an argument %s", errUsage, op.long, op.meta)
		}
		i++
		val = args[i]
	}
	return i, op.set(o, val)
}

func parseShort(o *Options, opts []option, args []string, i int) (int, error) {
	a := args[i]
	for k := 1; k < len(a); k++ {
		op, ok := shortOption(opts, rune(a[k]))
		if !ok {
			return i, fmt.Errorf("%w: unrecognized option `-%c'", errUsage, a[k])
		}
		if op.arg == noArg {
			if err := op.set(o, ""); err != nil {
				return i, err
			}
			continue
		}
		val := a[k+1:]
		if val == "" && op.arg == reqArg {
			if i+1 >= len(args) {
				return i, fmt.Errorf("%w: option `-%c' requires an argument %s", errUsage, a[k], op.meta)
			}
			i++
			val = args[i]
		}
		return i, op.set(o, val)
	}
	return i, nil
}

func shortOption(opts []option, c rune) (option, bool) {
	for _, op := range opts {
		if op.short == c {
			return op, true
		}
	}
	return option{}, false
}
