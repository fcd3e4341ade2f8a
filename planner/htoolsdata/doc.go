// Package htoolsdata reads and writes the cluster data of Ganeti htools'
// offline command line, for `drove iallocator` standing in for hail:
// Ganeti's text backend (the files `hail -t`, `hbal -t` read and
// `hspace -S` writes; Parse, Format), the empty clusters of `--simulate`
// (Simulate), and the cluster a plan leaves (After), which `-S` saves.
// Formats and meanings follow Ganeti 3.0's htools (Backend/Text.hs,
// Backend/Simu.hs); the code is Drove's own.
//
// The package does no I/O: it turns bytes into planner values and back.
package htoolsdata
