"use strict";

// ---------- requests ----------

async function requests() {
  setMain("Requests", h("div", { id: "req-list" }));
  every(4000, async () => {
    const rs = await all("/v1/requests");
    rs.sort((a, b) => String(b.requested_at).localeCompare(String(a.requested_at)));
    document.getElementById("req-list").replaceChildren(table(["Request", "Kind", "Status", "What", "Asked by", "Reason", "Requested", "Finished"],
      rs.map(r => h("tr", { "data-request": r.id },
        h("td", {}, link("/console/requests/" + r.id, r.id.slice(0, 8))),
        h("td", {}, r.kind + (r.dry_run ? " (dry run)" : "")), h("td", {}, state(r.status)),
        h("td", {}, (r.nodes && r.nodes.length ? r.nodes : r.instances || []).join(", ")),
        h("td", {}, r.actor), h("td", { class: "wrap" }, r.reason),
        h("td", {}, when(r.requested_at)), h("td", {}, when(r.finished_at))))));
  });
}

// The gateway folds a request's watch stream into one row per job
// (gateway/progress, the fold `drove watch` draws too) and, asked with
// ?rows=jobs, sends on each event line the rows it changed: the console
// keeps each job's latest row and draws it.
function newProgress() { return { jobs: new Map() }; }

function jobOf(p, i) { return p.jobs.get(i) || { index: i, state: "waiting" }; }

function takeRows(p, ev) {
  for (const r of ev.jobs || []) p.jobs.set(r.index, r);
  return (ev.jobs || []).length > 0;
}

async function request() {
  const id = arg;
  setMain("Request " + id,
    h("div", { id: "req-head" }), h("div", { id: "req-actions", class: "actions" }),
    h("h2", {}, "Progress"), h("div", { id: "req-progress" }, h("p", { class: "muted" }, "Nothing runs until the plan is approved.")),
    h("div", { id: "req-plan" }));
  const p = newProgress();
  let plan = null, detail = null, watching = false;
  const ctl = new AbortController();
  const redraw = () => { if (plan) drawProgress(p, plan, detail); };
  const watch = async () => {
    watching = true;
    try {
      await stream("/v1/requests/" + encodeURIComponent(id) + "/watch?rows=jobs", ev => { if (takeRows(p, ev)) redraw(); }, ctl.signal);
    } catch (e) {
      if (e.name !== "AbortError") failed(e);
    }
  };
  every(1500, async () => {
    detail = await get("/v1/requests/" + encodeURIComponent(id));
    drawRequestHead(detail);
    if (!plan && detail.plan) {
      plan = await get("/v1/requests/" + encodeURIComponent(id) + "/plan");
      drawPlan(plan, p);
    }
    if (plan && !watching && detail.status !== "awaiting-approval" && detail.status !== "rejected") watch();
    redraw();
    return !(detail.status === "finished" || detail.status === "rejected");
  });
}

function drawRequestHead(d) {
  document.getElementById("req-head").replaceChildren(h("dl", {},
    h("dt", {}, "status"), h("dd", {}, h("span", { id: "req-status", class: "state " + d.status }, d.status)),
    h("dt", {}, "kind"), h("dd", {}, d.kind + (d.mode ? " (" + d.mode + ")" : "") + (d.dry_run ? ", dry run first" : "")),
    h("dt", {}, d.nodes && d.nodes.length ? "nodes" : "instances"), h("dd", {}, ((d.nodes && d.nodes.length ? d.nodes : d.instances) || []).join(", ")),
    h("dt", {}, "asked by"), h("dd", {}, d.actor + (d.reason ? ": " + d.reason : "")),
    h("dt", {}, "requested"), h("dd", {}, when(d.requested_at)),
    d.approved_at ? [h("dt", {}, "approved"), h("dd", {}, when(d.approved_at))] : "",
    d.finished_at ? [h("dt", {}, "finished"), h("dd", {}, when(d.finished_at))] : "",
    d.rejected_reason ? [h("dt", {}, "rejected"), h("dd", {}, d.rejected_reason)] : "",
    estimates(d),
    d.plan ? [h("dt", {}, "plan"), h("dd", { id: "req-plan-summary" }, d.plan.moved + " moved, " + d.plan.failed + " not moved, " + d.plan.jobs + " jobs; cluster score " + d.plan.score_before.toFixed(3) + " → " + d.plan.score_after.toFixed(3))] : ""));
  const acts = document.getElementById("req-actions");
  const want = (d.status === "awaiting-approval" ? "a" : "") + (d.status !== "finished" && d.status !== "rejected" && d.status !== "cancelling" ? "c" : "");
  if (acts.dataset.want === want) return;
  acts.dataset.want = want;
  acts.replaceChildren();
  if (want.includes("a")) acts.append(h("button", { id: "approve", class: "primary", onclick: ev => act(ev.target, "approve", d.id) }, "Approve the plan"));
  if (want.includes("c")) acts.append(h("button", { id: "cancel", class: "danger", onclick: ev => act(ev.target, "cancel", d.id) }, "Cancel the request"));
}

// estimates shows the request's makespan estimate (GET /v1/requests/{id}
// estimate, gateway/estimate.go): when the jobs ahead are expected to
// finish, and the lower bound no schedule beats, with its largest term.
// The API leaves it out once no job is ahead.
function estimates(d) {
  const e = d.estimate;
  if (!e) return [];
  const b = e.lower_bound || {};
  let term = "";
  if (b.seconds > 0) {
    if (b.node && b.node_seconds >= b.seconds) term = "busiest node " + b.node + ": " + dur(b.node_seconds);
    else if (b.largest_move_seconds >= b.seconds) term = "largest move alone: " + dur(b.largest_move_seconds);
    else if (b.cluster_seconds >= b.seconds) term = "all moves over the cluster limit: " + dur(b.cluster_seconds);
  }
  const ahead = e.jobs_ahead + (e.jobs_ahead === 1 ? " job" : " jobs") + ", " + bytes(e.bytes) + " to send";
  return [
    h("dt", {}, d.status === "awaiting-approval" ? "finish if approved now" : "expected finish"),
    h("dd", { "data-estimate": "expected_finish_at", title: e.how || "" },
      when(e.expected_finish_at) + (e.finish_seconds > 0 ? " (in " + dur(e.finish_seconds) + ")" : "") + "; " + ahead),
    h("dt", {}, "at the soonest"),
    h("dd", { "data-estimate": "lower_bound_seconds" }, (dur(e.lower_bound_seconds) || "0s") + (term ? " (" + term + ")" : "")),
  ];
}

async function act(btn, verb, id) {
  btn.disabled = true;
  try {
    await api("POST", "/v1/requests/" + encodeURIComponent(id) + "/" + verb, { reason: verb + " from the console" });
    show(verb === "approve" ? "Approved: the jobs start as their dependencies allow." : "Cancel asked: jobs not started will not start.", true);
  } catch (e) {
    btn.disabled = false;
    failed(e);
  }
}

// downtimeOf sums a dry run's predicted downtime of each instance's
// moves, with how each was reached (the estimate's words) for its title.
function downtimeOf(plan) {
  const by = new Map();
  for (const m of plan.moves || []) {
    const d = by.get(m.instance) || { ms: 0, how: [] };
    d.ms += m.predicted_downtime_ms;
    d.how.push(m.op_id.replace(/^OP_INSTANCE_/, "").toLowerCase() + ": " + m.how);
    by.set(m.instance, d);
  }
  return by;
}

function drawPlan(plan, p) {
  const down = downtimeOf(plan), dry = (plan.moves || []).length > 0;
  const moved = table(["Instance", "Group", "Nodes"].concat(dry ? [">Predicted downtime"] : []), (plan.moved || []).map(m => {
    const d = down.get(m.instance);
    return h("tr", { "data-moved": m.instance }, h("td", {}, link("/console/instances/" + encodeURIComponent(m.instance), m.instance)), h("td", {}, m.group), h("td", {}, (m.nodes || []).join(", ")),
      dry ? h("td", { class: "num", "data-downtime": m.instance, title: d ? d.how.join("\n") : "" }, d ? d.ms + " ms" : "") : null);
  }), { id: "plan-moved" });
  const failedT = table(["Instance", "Why not"], (plan.failed || []).map(f =>
    h("tr", { "data-failed": f.instance }, h("td", {}, f.instance), h("td", { class: "wrap" }, f.reason))), { id: "plan-failed" });
  document.getElementById("req-plan").replaceChildren(
    h("h2", {}, "Jobs and their dependencies"), h("div", { class: "graph" }, graph(plan.jobs || [], p)),
    h("div", { class: "two" },
      h("div", {}, h("h2", {}, (plan.moved || []).length + " moved"), moved),
      h("div", {}, h("h2", {}, (plan.failed || []).length + " not moved"), failedT)));
}

// graph draws the jobs as a layered DAG: a job's column is one more than
// its deepest dependency's; an arrow from each dependency.
function graph(jobs, p) {
  const layer = new Map();
  const byIndex = new Map(jobs.map(j => [j.index, j]));
  const depth = (j, seen) => {
    if (layer.has(j.index)) return layer.get(j.index);
    if (seen.has(j.index)) return 0;
    seen.add(j.index);
    let d = 0;
    for (const dep of j.depends || []) {
      const from = j.index + dep.job; // relative, as in Ganeti: -1 is the job before
      if (byIndex.has(from)) d = Math.max(d, depth(byIndex.get(from), seen) + 1);
    }
    layer.set(j.index, d);
    return d;
  };
  jobs.forEach(j => depth(j, new Set()));
  const cols = new Map();
  for (const j of jobs) {
    const d = layer.get(j.index);
    if (!cols.has(d)) cols.set(d, []);
    cols.get(d).push(j);
  }
  // A layer of many jobs wraps into several columns of at most 8.
  const W = 150, H = 34, GX = 60, GY = 12, PER = 8;
  const pos = new Map();
  let maxRows = 1, col = 0;
  for (const d of [...cols.keys()].sort((a, b) => a - b)) {
    const js = cols.get(d);
    js.forEach((j, i) => pos.set(j.index, { x: 10 + (col + Math.floor(i / PER)) * (W + GX), y: 10 + (i % PER) * (H + GY) }));
    col += Math.ceil(js.length / PER);
    maxRows = Math.max(maxRows, Math.min(js.length, PER));
  }
  const width = 20 + col * (W + GX), height = 20 + maxRows * (H + GY);
  const svg = s("svg", { id: "job-graph", width, height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "jobs and dependencies" },
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "6", markerHeight: "6", orient: "auto" }, s("path", { d: "M0,0 L10,5 L0,10 z" }))));
  for (const j of jobs) for (const dep of j.depends || []) {
    const from = j.index + dep.job;
    const a = pos.get(from), b = pos.get(j.index);
    if (!a || !b) continue;
    svg.append(s("line", { x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, "marker-end": "url(#arrow)", "data-from": from, "data-to": j.index },
      s("title", {}, "job " + j.index + " after job " + from + " ends " + ((dep.statuses || []).join(" or ") || "in any state"))));
  }
  for (const j of jobs) {
    const at = pos.get(j.index);
    const r = jobOf(p, j.index);
    svg.append(s("g", { "data-job": j.index },
      s("rect", { x: at.x, y: at.y, width: W, height: H, class: "g-" + r.state, id: "gjob-" + j.index }),
      s("text", { x: at.x + 8, y: at.y + 14 }, "job " + j.index + " · " + (j.opcodes || []).length + " op"),
      s("text", { x: at.x + 8, y: at.y + 28 }, (j.opcodes && j.opcodes[0] ? j.opcodes[0].instance : ""))));
  }
  return svg;
}

function drawProgress(p, plan, d) {
  const box = document.getElementById("req-progress");
  if (!box || !d || d.status === "awaiting-approval" || d.status === "rejected") return;
  const rows = [];
  let sumPct = 0, done = 0, total = 0, rate = 0, eta = 0, ended = 0, running = 0, toStart = 0;
  const jobs = [...p.jobs.values()].sort((a, b) => a.index - b.index);
  for (const r of jobs) {
    sumPct += r.percent; done += r.bytes_done; total += r.bytes_total;
    if (r.state === "running") { running++; rate += r.bytes_per_second; eta = Math.max(eta, r.remaining_seconds); }
    if (r.state === "waiting" || r.state === "queued") toStart++;
    if (["success", "error", "canceled"].includes(r.state)) ended++;
    const g = document.getElementById("gjob-" + r.index);
    if (g) g.setAttribute("class", "g-" + r.state);
    rows.push(h("tr", { class: "job-row", "data-job": r.index, "data-state": r.state },
      h("td", { class: "num" }, r.index), h("td", {}, r.instance), h("td", {}, state(r.state)),
      h("td", {}, bar(r.percent)), h("td", { class: "num" }, pct(r.percent)),
      h("td", { class: "num" }, r.bytes_total > 0 ? bytes(r.bytes_done) + " / " + bytes(r.bytes_total) : ""),
      h("td", { class: "num" }, r.bytes_per_second > 0 && r.state === "running" ? bytes(r.bytes_per_second) + "/s" : ""),
      h("td", { class: "num" }, dur(r.remaining_seconds)),
      h("td", { class: "wrap" }, r.state === "error" || r.state === "canceled" ? r.message : (r.op ? "op " + r.op + "/" + r.ops + " " + r.op_name + (r.phase ? " [" + r.phase + "]" : "") : ""))));
  }
  const whole = d.status === "finished" ? 100 : (jobs.length ? sumPct / jobs.length : 0);
  rows.push(h("tr", { class: "total", id: "req-total" },
    h("td", {}, "all"), h("td", {}, jobs.length + " jobs"), h("td", {}, state(d.status)),
    h("td", {}, bar(whole)), h("td", { class: "num", id: "req-pct" }, pct(whole)),
    h("td", { class: "num" }, total > 0 ? bytes(done) + " / " + bytes(total) : ""),
    h("td", { class: "num" }, rate > 0 ? bytes(rate) + "/s" : ""),
    h("td", { class: "num" }, toStart ? "" : dur(eta)),
    h("td", {}, ended + "/" + jobs.length + " jobs done, " + running + " running, " + toStart + " to start")));
  box.replaceChildren(table([">Job", "Instance", "State", "Progress", ">%", ">Bytes", ">Rate", ">ETA", "Step"], rows, { id: "req-jobs" }));
}
