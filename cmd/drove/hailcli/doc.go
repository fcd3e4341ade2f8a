// Package hailcli is `drove iallocator`'s command line: Ganeti's hail's
// options and I/O around the pure planner/iallocator. Ganeti runs an
// allocator as `ALLOCATOR FILE [OPTIONS]`, so options may come before or
// after the request file ("-" for standard input), with hail's meanings
// (Ganeti 3.0's htools CLI): -t text data and --simulate clusters in place
// of the request's, -S saving the cluster before and after, -p listing
// the nodes, -v, --restrict-allocation-to, --version, --help-completion,
// and hail's exit codes (2 for a bad option, 1 for a bad request).
package hailcli
