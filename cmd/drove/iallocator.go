package main

import (
	"io"
	"path/filepath"

	"github.com/drovehq/drove/cmd/drove/hailcli"
)

func runIAllocator(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return hailcli.Run("drove iallocator", args, stdin, stdout, stderr)
}

// allocatorNames are the names under which the binary is Ganeti's
// allocator itself: Ganeti runs /usr/lib/ganeti/iallocators/NAME FILE
// [OPTIONS], so a link named hail (in hail's place) or drove-hail (beside
// it, chosen with --iallocator drove-hail) to drove answers as
// `drove iallocator` does.
var allocatorNames = map[string]bool{"hail": true, "drove-hail": true}

// asAllocator reports whether the program, run as argv0, is an allocator.
func asAllocator(argv0 string) (string, bool) {
	name := filepath.Base(argv0)
	return name, allocatorNames[name]
}
