// Package termview is what the drove command's client subcommands draw
// on a terminal: a request's progress folded from its watch stream
// (progress.go: one row per job, percentages from bytes where the moves
// report bytes), a migration's steps (migview.go), and a table redrawn
// in place (screen.go). It reads the gateway through gateway/client and
// knows nothing of HTTP.
package termview
