// Package gateway is Drove's HTTP API (gin): operators and owners ask for
// evacuations and group changes, approve and cancel them, read the views the
// projector keeps in Postgres, and watch requests and instances as newline-
// delimited JSON streams.
//
// The gateway keeps no state of its own. Its invariants:
//
//   - A command either appends exactly one event to the log or appends
//     nothing. Everything that can be refused from the views (a malformed
//     body, an unknown node, an instance an active request already holds) is
//     refused before anything is appended, with a JSON error naming the
//     field: {"error": {"code", "message", "field"}}.
//   - The gateway's checks are a courtesy, not the guard. The views lag the
//     log, so two gateways (or two quick calls) can both accept requests for
//     the same instance; the planner service re-validates every request
//     against its own snapshot and rejects the loser. Within one gateway,
//     requests it appended but the views do not show yet still count (see
//     recent.go), so a double click is refused here already.
//   - Reads are deterministic: every list is ordered by its key and paged
//     with a cursor (?after=<last key>&limit=, default 100, at most 1000).
//   - Watch streams come from one shared tailer per gateway that polls
//     event_log by seq and fans rows out to subscribers (tailer.go); a
//     watcher never queries the log in a loop of its own, and a slow one is
//     cut off with a final error line instead of holding the others back.
//   - A stream's history is read a page at a time (stream.go), never held
//     whole; ?after=SEQ resumes a request's or an instance's stream after
//     the last line a watcher saw. At most Config.MaxWatchers streams are
//     open at once; one more is refused with 503 too_many_watchers.
//   - Refusals (401, 403) are audited on drove.audit within a budget, so a
//     flood of bad tokens cannot become a flood of writes: past it they
//     are folded into one count per caller and reason (auditlimit.go).
//     Path segments and query values must be UTF-8 text without NUL (400).
//   - /healthz names the part that fails (postgres, kafka), never the
//     error's text, which carries hosts, users and connection strings;
//     beside `drove dev` it also lists each component (Config.Parts):
//     running, restarted N times, restarting or down.
//   - Auditors (history.go, asof.go): GET /v1/history/{kind}/{id} (kind
//     instance, node, request or migration) pages, by seq (?after=SEQ,
//     ?limit=), every event that touched it with who asked and why and what
//     changed; owners read only their own instances' and migrations'
//     histories (403 otherwise). GET /v1/instances?at=TIME and
//     /v1/nodes?at=TIME (RFC 3339) answer from the views as they stood
//     then (Config.PointInTime), built on the first ask: 400 for a time in
//     the future, 501 when no point-in-time views are configured.
//     GET /v1/audit (audit.go, operators only; 403 audited otherwise)
//     pages the audit trail by seq: the asks people made and the
//     gateway's refusals (a folded flood with its count), filtered by
//     ?outcome=requested|allowed|denied and ?actor=.
//   - When Postgres cannot be reached (restarting, down), a call that
//     reads the views answers 503 unavailable with Retry-After, not 500,
//     and appends nothing (unavailable.go).
//   - A node's lifecycle (nodes.go, operators only): POST
//     /v1/nodes/{name}/undrain, /offline and /online (body {"reason"})
//     append NodeActionRequested after the views' checks (404 unknown
//     node; 409 when the node is already so, or, for undrain, while an
//     active evacuation empties it, naming the request); the planner
//     service answers, and GET /v1/node-actions/{id} shows the answer
//     (requested, done or refused, with why).
//
// Every body, answer and stream line is a type of gateway/wire, the one
// definition of the API's shapes; the OpenAPI 3 document served at
// /v1/openapi.json (gateway/openapi) is generated from those types and a
// table of the routes, and the tests hold every route and answer to it; the
// web console (gateway/console) is served at /console/ and reads only the
// API.
//
// The views are defined in projector/schema (the contract); the gateway
// reads them in Config.Schema, qualifying every name, so it works on a pool
// whatever its search_path.
package gateway
