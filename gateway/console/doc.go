// Package console is the operators' and tenants' web console, served by
// the gateway under /console/: the cluster (groups, nodes, their fill and
// marks), requests (plans, the jobs' dependency graph, live progress),
// per-instance migrations (RFD 34 steps, live), operator actions, the
// settings and the audit trail.
//
// It is one binary's worth of web: the pages are a server-rendered shell
// (html/template) and the assets (one script, one style sheet) are
// embedded; nothing is fetched from anywhere else. The script reads and
// writes only the public JSON API (/v1/...), with the caller's bearer
// token, so the console can do nothing the API would not let that caller
// do, and a tenant sees only their own instances and migrations.
package console
