// Drove console: draws each page from the JSON API (/v1/...), with the
// caller's bearer token. No framework, no build step: the gateway embeds
// this file as it is.
"use strict";

const main = document.getElementById("main");
const banner = document.getElementById("banner");
const page = main.dataset.page;
const arg = main.dataset.arg;

// ---------- small helpers ----------

// h builds an element: h("td", {class: "num"}, "12", child...).
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  append(e, kids);
  return e;
}

// s builds an SVG element.
function s(tag, attrs, ...kids) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  setAttrs(e, attrs);
  append(e, kids);
  return e;
}

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.setAttribute("class", v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(e, kids) {
  for (const k of kids.flat(3)) {
    if (k === undefined || k === null || k === false) continue;
    e.append(k instanceof Node ? k : String(k));
  }
}

function bytes(n) {
  if (!n || n < 0) return "0 B";
  const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return i === 0 ? n + " B" : n.toFixed(1) + " " + u[i];
}

function mib(n) { return bytes((n || 0) * 1024 * 1024); }

function dur(sec) {
  if (!(sec > 0)) return "";
  if (sec < 10) return sec.toFixed(1) + "s";
  sec = Math.round(sec);
  const hh = Math.floor(sec / 3600), mm = Math.floor(sec / 60) % 60, ss = sec % 60;
  if (hh > 0) return hh + "h" + String(mm).padStart(2, "0") + "m";
  if (mm > 0) return mm + "m" + String(ss).padStart(2, "0") + "s";
  return ss + "s";
}

function when(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? "" : d.toLocaleString();
}

function state(st) { return h("span", { class: "state " + st, "data-state": st }, st); }

function pct(p) { return (Math.round(p * 10) / 10).toFixed(1) + "%"; }

function bar(p) { return h("progress", { max: "100", value: String(Math.max(0, Math.min(100, p))) }); }

function table(headers, rows, attrs) {
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map(c => h("th", { class: c.startsWith(">") ? "num" : "" }, c.replace(/^>/, ""))))),
    h("tbody", {}, rows));
}

function link(href, text) { return h("a", { href }, text); }

function show(msg, info) {
  banner.textContent = msg;
  banner.className = info ? "info" : "";
  banner.hidden = !msg;
}

function setMain(title, ...kids) {
  main.replaceChildren(h("h1", {}, title), ...kids);
}

// ---------- the API ----------

class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || { code: "http_" + status, message: "HTTP " + status };
    super(e.message);
    this.status = status;
    this.code = e.code;
    this.field = e.field;
  }
}

function headers(json) {
  const hd = { Accept: "application/json" };
  const tok = sessionStorage.getItem("drove-token");
  if (tok) hd.Authorization = "Bearer " + tok;
  hd["X-Drove-Actor"] = sessionStorage.getItem("drove-actor") || "console";
  if (json) hd["Content-Type"] = "application/json";
  return hd;
}

async function api(method, path, body) {
  const r = await fetch(path, {
    method, headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (r.status === 401) { login(data); throw new APIError(r.status, data); }
  if (!r.ok) throw new APIError(r.status, data);
  return data;
}

const get = path => api("GET", path);

// all follows a list's pages.
async function all(path) {
  let out = [], after = "";
  for (;;) {
    const sep = path.includes("?") ? "&" : "?";
    const pg = await get(path + sep + "limit=1000" + (after ? "&after=" + encodeURIComponent(after) : ""));
    out = out.concat(pg.items || []);
    if (!pg.next) return out;
    after = pg.next;
  }
}

// stream reads an NDJSON watch stream, calling onLine for each line,
// until it ends or signal aborts it.
async function stream(path, onLine, signal) {
  const r = await fetch(path, { headers: headers(false), signal });
  if (!r.ok) {
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    throw new APIError(r.status, data);
  }
  const rd = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await rd.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) onLine(JSON.parse(line));
    }
  }
}

// The API's own description says which optional routes it offers (an
// undrain, an audit history): the console shows those features only then.
let described = null;
async function offers(method, path) {
  if (!described) {
    try { described = (await get("/v1/openapi.json")).paths || {}; } catch (e) { described = {}; }
  }
  const item = described[path];
  return !!(item && item[method.toLowerCase()]);
}

// who: an operator, or a tenant (the bulk API answers 403).
let role = "operator";
async function whoami() {
  try {
    await get("/v1/groups?limit=1");
  } catch (e) {
    if (e.status === 403) role = "owner";
    else if (e.status !== 401) throw e;
  }
  for (const a of document.querySelectorAll("#nav a")) {
    a.hidden = a.dataset.role === "operator" && role !== "operator";
    if (a.dataset.nav === page) a.className = "on";
  }
  const tok = sessionStorage.getItem("drove-token");
  document.getElementById("who").replaceChildren(
    role === "operator" ? "operator" : "tenant",
    tok ? h("button", { id: "logout", onclick: () => { sessionStorage.removeItem("drove-token"); location.reload(); } }, "Sign out") : "");
}

function login(body) {
  if (document.getElementById("login")) return;
  const msg = (body && body.error && body.error.message) || "This gateway needs a token.";
  const input = h("input", { id: "token", type: "password", autocomplete: "off" });
  setMain("Sign in",
    h("form", { id: "login", class: "login", onsubmit: ev => {
      ev.preventDefault();
      sessionStorage.setItem("drove-token", input.value.trim());
      location.reload();
    } },
    h("p", {}, msg),
    h("label", { for: "token" }, "API token"), input,
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Sign in"))));
}

// every runs f now and then every ms until the page goes away or f
// returns false; errors are shown, not thrown.
function every(ms, f) {
  let stop = false;
  const tick = async () => {
    if (stop) return;
    let again = true;
    try { again = (await f()) !== false; } catch (e) { failed(e); }
    if (again && !stop) setTimeout(tick, ms);
  };
  tick();
  return () => { stop = true; };
}

function failed(e) {
  if (e && e.status === 401) return; // the sign-in form is up
  console.warn("console:", e);
  show(e && e.message ? e.message : String(e));
}

// ---------- the cluster ----------

async function cluster() {
  if (role !== "operator") return instances();
  setMain("Cluster", h("div", { id: "cluster-cards", class: "cards" }), h("div", { id: "cluster-body" }), evacuateDialog());
  every(4000, drawCluster);
}

async function drawCluster() {
  const [groups, nodes, active] = await Promise.all([all("/v1/groups"), all("/v1/nodes"), all("/v1/requests?status=running")]);
  let instances = 0, drained = 0, offline = 0;
  for (const n of nodes) { instances += n.primary_instances; drained += n.drained ? 1 : 0; offline += n.offline ? 1 : 0; }
  document.getElementById("cluster-cards").replaceChildren(
    card(groups.length, "groups"), card(nodes.length, "nodes"), card(instances, "instances"),
    card(drained, "drained"), card(offline, "offline"),
    card(active.length, "requests running", "/console/requests"));
  const body = [];
  for (const g of groups) {
    const rows = nodes.filter(n => n.group === g.name).map(nodeRow);
    body.push(h("h2", {}, "Group " + g.name + " ", h("span", { class: "muted" }, g.alloc_policy + " · " + g.nodes + " nodes")),
      table(["Node", "Memory", "", "Disk", "", ">Primaries", ">Secondaries", "Marks", ""], rows, { class: "nodes", "data-group": g.name }));
  }
  document.getElementById("cluster-body").replaceChildren(...body);
}

function card(n, what, href) {
  const c = h("div", { class: "card" }, h("b", {}, String(n)), h("span", {}, what));
  return href ? h("a", { href }, c) : c;
}

function fill(free, total) {
  const used = Math.max(0, total - free);
  const p = total > 0 ? 100 * used / total : 0;
  return [h("td", {}, h("meter", { min: "0", max: "100", low: "70", high: "90", optimum: "40", value: p.toFixed(1) })),
    h("td", { class: "num" }, mib(used) + " / " + mib(total))];
}

function nodeRow(n) {
  return h("tr", { "data-node": n.name },
    h("td", {}, link("/console/nodes/" + encodeURIComponent(n.name), n.name)),
    fill(n.free_memory_mib, n.total_memory_mib),
    fill(n.free_disk_mib, n.total_disk_mib),
    h("td", { class: "num" }, n.primary_instances),
    h("td", { class: "num" }, n.secondary_instances),
    h("td", {}, n.drained ? h("span", { class: "mark drained" }, "drained") : "", n.offline ? h("span", { class: "mark offline" }, "offline") : ""),
    h("td", {}, h("button", { "data-evacuate": n.name, onclick: () => openEvacuate(n.name) }, "Evacuate…")));
}

// The evacuation dialog: a dry run first, reviewed on the request's page.
function evacuateDialog() {
  return h("dialog", { id: "evacuate" },
    h("form", { method: "dialog", onsubmit: ev => { ev.preventDefault(); dryRun(); } },
      h("h2", {}, "Evacuate ", h("span", { id: "evac-node" })),
      h("label", { for: "evac-mode" }, "Mode"),
      h("select", { id: "evac-mode" },
        h("option", { value: "all" }, "all: primaries and secondaries"),
        h("option", { value: "primary-only" }, "primary-only"),
        h("option", { value: "secondary-only" }, "secondary-only")),
      h("label", { for: "evac-reason" }, "Reason (recorded in the audit trail)"),
      h("input", { id: "evac-reason", placeholder: "e.g. replace a failed disk" }),
      h("p", { class: "muted" }, "A dry run plans the moves and drains nothing; you approve the plan on the next page."),
      h("div", { class: "actions" },
        h("button", { id: "evac-dryrun", class: "primary", type: "submit" }, "Dry run"),
        h("button", { type: "button", onclick: () => document.getElementById("evacuate").close() }, "Close"))));
}

function openEvacuate(node) {
  let d = document.getElementById("evacuate");
  if (!d) { d = evacuateDialog(); main.append(d); }
  document.getElementById("evac-node").textContent = node;
  d.dataset.node = node;
  d.showModal();
}

async function dryRun() {
  const d = document.getElementById("evacuate");
  const btn = document.getElementById("evac-dryrun");
  btn.disabled = true;
  try {
    const a = await api("POST", "/v1/evacuations", {
      nodes: [d.dataset.node], mode: document.getElementById("evac-mode").value, dry_run: true,
      reason: document.getElementById("evac-reason").value,
    });
    location.href = "/console/requests/" + encodeURIComponent(a.request);
  } catch (e) {
    btn.disabled = false;
    failed(e);
  }
}

// ---------- a node ----------

async function node() {
  const n = await get("/v1/nodes/" + encodeURIComponent(arg));
  const ins = await all("/v1/instances?node=" + encodeURIComponent(arg));
  const actions = h("div", { class: "actions" },
    h("button", { "data-evacuate": n.name, onclick: () => openEvacuate(n.name) }, "Evacuate…"));
  if (n.drained && await offers("POST", "/v1/nodes/{name}/undrain")) {
    actions.append(h("button", { id: "undrain", onclick: async () => {
      try { await api("POST", "/v1/nodes/" + encodeURIComponent(n.name) + "/undrain", {}); location.reload(); } catch (e) { failed(e); }
    } }, "Undrain"));
  }
  setMain("Node " + n.name,
    h("dl", {},
      h("dt", {}, "group"), h("dd", {}, n.group),
      h("dt", {}, "memory"), h("dd", {}, mib(n.total_memory_mib - n.free_memory_mib) + " used of " + mib(n.total_memory_mib)),
      h("dt", {}, "disk"), h("dd", {}, mib(n.total_disk_mib - n.free_disk_mib) + " used of " + mib(n.total_disk_mib)),
      h("dt", {}, "cpus"), h("dd", {}, n.total_cpus),
      h("dt", {}, "marks"), h("dd", { id: "node-marks" }, [n.drained ? "drained" : "", n.offline ? "offline" : "", n.vm_capable ? "" : "not vm-capable"].filter(Boolean).join(", ") || "none")),
    actions,
    h("h2", { id: "node-instances" }, ins.length + " instances"),
    instanceTable(ins, n.name),
    evacuateDialog());
}

function instanceTable(ins, onNode) {
  return table(["Instance", "Owner", "Storage", "Run state", "Role", "Primary", "Secondary", ">Memory", ">Disk"],
    ins.map(i => h("tr", { "data-instance": i.name },
      h("td", {}, link("/console/instances/" + encodeURIComponent(i.name), i.name)),
      h("td", {}, i.owner), h("td", {}, i.storage), h("td", {}, i.run_state),
      h("td", {}, onNode ? (i.primary === onNode ? "primary" : "secondary") : ""),
      h("td", {}, i.primary), h("td", {}, i.secondary || ""),
      h("td", { class: "num" }, mib(i.memory_mib)), h("td", { class: "num" }, mib(i.disk_mib)))),
    { class: "instances" });
}

async function instances() {
  const ins = await all("/v1/instances");
  setMain(role === "operator" ? "Instances" : "My instances", instanceTable(ins, ""));
}

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

// progress folds a request's watch stream as `drove watch` does
// (gateway/client/progress.go): one row per job; percentages from bytes.
function newProgress() { return { jobs: new Map(), finished: false }; }

function jobOf(p, i) {
  if (!p.jobs.has(i)) p.jobs.set(i, { index: i, instance: "", state: "waiting", ops: 0, op: 0, opName: "", phase: "", cur: 0, total: 0, done: 0, rate: 0, eta: 0, message: "" });
  return p.jobs.get(i);
}

function applyEvent(p, ev) {
  const v = ev.payload || {};
  const idx = typeof v.job === "number" ? v.job : (v.job && v.job.index) || 0;
  switch (ev.type) {
    case "plan.computed":
      for (const j of v.jobs || []) {
        const r = jobOf(p, j.index);
        r.ops = (j.opcodes || []).length;
        if (j.opcodes && j.opcodes.length) r.instance = j.opcodes[0].instance;
      }
      break;
    case "job.released": {
      const r = jobOf(p, idx);
      if (r.state === "waiting") r.state = "queued";
      break;
    }
    case "opcode.dispatched": {
      const r = jobOf(p, idx);
      if (r.op > 0 && v.index + 1 > r.op) r.done += r.total;
      r.state = "running"; r.op = v.index + 1; r.ops = Math.max(r.ops, r.op);
      const op = v.opcode || {};
      r.opName = String(op.op_id || "").replace("OP_INSTANCE_", "").toLowerCase().replace(/_/g, "-") + (op.target_node || op.remote_node || op.to ? " → " + (op.to || op.target_node || op.remote_node) : "");
      r.cur = r.total = r.rate = r.eta = 0; r.phase = "";
      if (!r.instance) r.instance = op.instance || "";
      break;
    }
    case "move.progress": {
      const r = jobOf(p, idx);
      if (r.op > 0 && v.index + 1 !== r.op) break;
      r.phase = v.phase || ""; r.cur = v.current || 0; r.total = v.total || 0;
      r.rate = v.bytes_per_second || 0; r.eta = v.eta_seconds || 0;
      break;
    }
    case "job.ended": {
      const r = jobOf(p, idx);
      r.state = v.status; r.message = v.error || "";
      if (v.status === "success") { r.done += r.total; r.cur = r.total = r.rate = r.eta = 0; }
      break;
    }
    case "job.cancelled": {
      const r = jobOf(p, idx);
      r.state = "canceled"; r.message = v.reason || "";
      break;
    }
    case "request.finished":
    case "request.rejected":
      p.finished = true;
      for (const m of v.moved || []) for (const r of p.jobs.values()) if (r.instance === m.instance && r.state !== "success") { r.state = "success"; r.done += r.total; r.cur = r.total = r.rate = r.eta = 0; }
      break;
    default:
      return false;
  }
  return true;
}

function jobBytes(r) { return [r.done + Math.min(r.cur, r.total), r.done + r.total]; }

function jobPct(r) {
  if (r.state === "success") return 100;
  if (r.state === "waiting" || r.state === "queued") return 0;
  const [d, t] = jobBytes(r);
  if (t > 0) return Math.min(99.9, 100 * d / t);
  return r.ops > 0 && r.op > 0 ? 100 * (r.op - 1) / r.ops : 0;
}

function jobEta(r) {
  if (r.state !== "running") return 0;
  if (r.eta > 0) return r.eta;
  return r.rate > 0 && r.total > r.cur ? (r.total - r.cur) / r.rate : 0;
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
      await stream("/v1/requests/" + encodeURIComponent(id) + "/watch", ev => { if (applyEvent(p, ev)) redraw(); }, ctl.signal);
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
    h("dt", {}, "kind"), h("dd", {}, d.kind + (d.mode ? " (" + d.mode + ")" : "") + (d.dry_run ? ", dry run" : "")),
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

// estimates shows how long the request is expected to take, when the API
// says (fields of the request or of its plan summary).
function estimates(d) {
  const out = [];
  const names = { expected_finish: "expected finish", expected_finish_at: "expected finish", lower_bound_seconds: "at the soonest", makespan_seconds: "expected to take" };
  for (const src of [d, d.plan || {}]) {
    for (const [k, label] of Object.entries(names)) {
      const v = src[k];
      if (v === undefined || v === null || v === "") continue;
      out.push(h("dt", {}, label), h("dd", { "data-estimate": k }, typeof v === "number" ? dur(v) : when(v) || String(v)));
    }
  }
  return out;
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

function drawPlan(plan, p) {
  for (const j of plan.jobs || []) {
    const r = jobOf(p, j.index);
    r.ops = (j.opcodes || []).length;
    if (j.opcodes && j.opcodes.length) r.instance = j.opcodes[0].instance;
  }
  const moved = table(["Instance", "Group", "Nodes"], (plan.moved || []).map(m =>
    h("tr", { "data-moved": m.instance }, h("td", {}, link("/console/instances/" + encodeURIComponent(m.instance), m.instance)), h("td", {}, m.group), h("td", {}, (m.nodes || []).join(", ")))), { id: "plan-moved" });
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
    for (const dep of j.depends || []) if (byIndex.has(dep.job)) d = Math.max(d, depth(byIndex.get(dep.job), seen) + 1);
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
    const a = pos.get(dep.job), b = pos.get(j.index);
    if (!a || !b) continue;
    svg.append(s("line", { x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, "marker-end": "url(#arrow)" },
      s("title", {}, "job " + j.index + " after job " + dep.job + " (" + (dep.statuses || []).join("|") + ")")));
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
    const [bd, bt] = jobBytes(r);
    const jp = jobPct(r);
    sumPct += jp; done += bd; total += bt;
    if (r.state === "running") { running++; rate += r.rate; eta = Math.max(eta, jobEta(r)); }
    if (r.state === "waiting" || r.state === "queued") toStart++;
    if (["success", "error", "canceled"].includes(r.state)) ended++;
    const g = document.getElementById("gjob-" + r.index);
    if (g) g.setAttribute("class", "g-" + r.state);
    rows.push(h("tr", { class: "job-row", "data-job": r.index, "data-state": r.state },
      h("td", { class: "num" }, r.index), h("td", {}, r.instance), h("td", {}, state(r.state)),
      h("td", {}, bar(jp)), h("td", { class: "num" }, pct(jp)),
      h("td", { class: "num" }, bt > 0 ? bytes(bd) + " / " + bytes(bt) : ""),
      h("td", { class: "num" }, r.rate > 0 && r.state === "running" ? bytes(r.rate) + "/s" : ""),
      h("td", { class: "num" }, dur(jobEta(r))),
      h("td", { class: "wrap" }, r.state === "error" || r.state === "canceled" ? r.message : (r.op ? "op " + r.op + "/" + r.ops + " " + r.opName + (r.phase ? " [" + r.phase + "]" : "") : ""))));
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

// ---------- migrations ----------

async function migrations() {
  setMain(role === "operator" ? "Migrations" : "My migrations", h("div", { id: "mig-list" }));
  every(4000, async () => {
    const ms = await all("/v1/migrations?kind=instance");
    ms.sort((a, b) => String(b.created_timestamp).localeCompare(String(a.created_timestamp)));
    document.getElementById("mig-list").replaceChildren(table(["Migration", "Instance", "State", "Phase", "Progress", "From", "To", "Asked by", "Created"],
      ms.map(m => h("tr", { "data-migration": m.id },
        h("td", {}, link("/console/migrations/" + encodeURIComponent(m.id), m.id.slice(0, 8))),
        h("td", {}, link("/console/instances/" + encodeURIComponent(m.instance), m.instance)),
        h("td", {}, state(m.state)), h("td", {}, m.phase),
        h("td", {}, m.total_progress > 0 ? bar(100 * m.current_progress / m.total_progress) : ""),
        h("td", {}, m.source_server), h("td", {}, m.target_server || ""),
        h("td", {}, m.account + " (" + m.role + ")"), h("td", {}, when(m.created_timestamp))))));
  });
}

const stepLabels = { begin: "making a reservation", sync: "synchronizing filesystems", switch: "switching instance", abort: "aborting", rollback: "rolling back", finalize: "removing the source copy", pause: "pausing" };

async function migration() {
  const id = arg;
  setMain("Migration " + id, h("div", { id: "mig-head" }), h("div", { id: "mig-actions", class: "actions" }),
    h("h2", {}, "Steps"), h("div", { id: "mig-steps" }, h("p", { class: "muted" }, "No step has reported yet.")));
  const steps = new Map();
  let m = null, watching = false, lastTime = null;
  const ctl = new AbortController();
  const redraw = () => drawSteps(steps, m, lastTime);
  every(1500, async () => {
    m = await get("/v1/migrations/" + encodeURIComponent(id));
    drawMigrationHead(m);
    if (!watching) {
      watching = true;
      stream("/v1/instances/" + encodeURIComponent(m.instance) + "/migrate/watch?migration=" + encodeURIComponent(id), ev => {
        if (ev.type !== "progress" && ev.type !== "end") return;
        lastTime = ev.time;
        let st = steps.get(ev.index);
        if (!st) { st = { index: ev.index, phase: ev.phase, state: "running", started: ev.started_timestamp || ev.time, ended: null, cur: 0, total: 0, rate: 0, eta: 0, message: "" }; steps.set(ev.index, st); }
        if (ev.total_progress > 0) { st.cur = ev.current_progress || 0; st.total = ev.total_progress; }
        st.rate = ev.transfer_bytes_second || 0; st.eta = (ev.eta_ms || 0) / 1000;
        if (ev.message) st.message = ev.message;
        if (ev.type === "end") { st.state = ev.state; st.ended = ev.time; st.eta = 0; if (ev.error) st.message = ev.error; if (ev.state === "successful") st.cur = st.total; }
        redraw();
      }, ctl.signal).catch(e => { if (e.name !== "AbortError") failed(e); });
    }
    redraw();
    return !["successful", "failed", "aborted"].includes(m.state) || !m.finished_timestamp ? true : false;
  });
}

// sides are the source's and the target's statuses, from the record (the
// "live" statuses, when the API gives them) or from its state and phase.
function sides(m) {
  if (m.source_status || m.target_status) return [m.source_status || "", m.target_status || ""];
  const done = ["successful", "failed", "aborted"].includes(m.state);
  let src = "running the instance", dst = "";
  if (m.switched) {
    src = m.finalized ? "copy removed" : "copy kept until finalized";
    dst = m.state === "running" && m.phase === "rollback" ? "rolling back" : "running the instance";
  } else if (m.target_server) {
    dst = done ? (m.state === "successful" ? "running the instance" : "reservation released") : (m.phase === "sync" ? "receiving data" : "reserved");
  }
  return [src, dst];
}

function drawMigrationHead(m) {
  const [src, dst] = sides(m);
  document.getElementById("mig-head").replaceChildren(h("dl", {},
    h("dt", {}, "instance"), h("dd", {}, link("/console/instances/" + encodeURIComponent(m.instance), m.instance)),
    h("dt", {}, "state"), h("dd", {}, h("span", { id: "mig-state", class: "state " + m.state }, m.state), " · phase " + m.phase + (m.automatic ? " · automatic" : "")),
    h("dt", {}, "source"), h("dd", { id: "mig-source" }, m.source_server + " — " + src),
    h("dt", {}, "target"), h("dd", { id: "mig-target" }, (m.target_server || "chosen by the planner") + (dst ? " — " + dst : "")),
    h("dt", {}, "syncs"), h("dd", { id: "mig-syncs" }, m.num_sync_phases + (m.last_sync_size ? ", the last " + bytes(m.last_sync_size) : "")),
    h("dt", {}, "asked by"), h("dd", {}, m.account + " (" + m.role + ")"),
    h("dt", {}, "created"), h("dd", {}, when(m.created_timestamp)),
    m.finished_timestamp ? [h("dt", {}, "finished"), h("dd", {}, when(m.finished_timestamp))] : "",
    m.error ? [h("dt", {}, "error"), h("dd", { class: "wrap" }, m.error + (m.error_detail ? ": " + m.error_detail : ""))] : "",
    m.message ? [h("dt", {}, "message"), h("dd", { class: "wrap" }, m.message)] : ""));
  const acts = [];
  if (m.state === "running" || m.state === "queued" || m.state === "scheduled") {
    if (!m.switched) acts.push("pause", "abort");
  }
  if (m.state === "paused") acts.push("sync", "switch", "abort");
  if (m.switched && !m.finalized && m.state !== "running") acts.push("finalize", "rollback");
  const box = document.getElementById("mig-actions");
  if (box.dataset.want === acts.join()) return;
  box.dataset.want = acts.join();
  box.replaceChildren(...acts.map(a => h("button", { "data-action": a, class: a === "abort" || a === "rollback" ? "danger" : "",
    onclick: ev => migrateAction(ev.target, m.instance, a) }, a)));
}

async function migrateAction(btn, instance, action, body) {
  if (btn) btn.disabled = true;
  try {
    const a = await api("POST", "/v1/instances/" + encodeURIComponent(instance) + "/migrate?action=" + action, body || { reason: action + " from the console" });
    show(action + " accepted", true);
    return a;
  } catch (e) {
    if (btn) btn.disabled = false;
    failed(e);
    return null;
  }
}

function drawSteps(steps, m, lastTime) {
  const box = document.getElementById("mig-steps");
  if (!box || steps.size === 0) return;
  const now = lastTime && m && !m.finished_timestamp ? Math.max(Date.now(), Date.parse(lastTime)) : Date.now();
  let sent = 0;
  const rows = [...steps.values()].sort((a, b) => a.index - b.index).map(st => {
    const p = st.state === "successful" ? 100 : (st.total > 0 ? Math.min(99.9, 100 * st.cur / st.total) : 0);
    if (st.total > 1) sent += Math.min(st.cur, st.total);
    const took = ((st.ended ? Date.parse(st.ended) : now) - Date.parse(st.started)) / 1000;
    const mark = st.state === "running" ? "☐" : (st.state === "successful" || st.state === "paused" ? "✓" : "✗");
    return h("tr", { class: "step", "data-phase": st.phase, "data-state": st.state },
      h("td", { class: "check" }, mark), h("td", {}, stepLabels[st.phase] || st.phase),
      h("td", {}, bar(p)), h("td", { class: "num" }, Math.round(p) + "%"),
      h("td", { class: "num" }, st.total > 1 ? bytes(Math.min(st.cur, st.total)) + " / " + bytes(st.total) : ""),
      h("td", { class: "num" }, st.rate > 0 && st.state === "running" ? bytes(st.rate) + "/s" : ""),
      h("td", { class: "num" }, dur(st.eta)), h("td", { class: "num" }, dur(took)),
      h("td", { class: "wrap" }, st.state + (st.message && st.state !== "running" && st.state !== "successful" ? ": " + st.message : "")));
  });
  rows.push(h("tr", { class: "total" }, h("td", {}, ""), h("td", {}, "total"), h("td", {}, ""), h("td", {}, ""),
    h("td", { class: "num" }, bytes(sent) + " sent"), h("td", {}, ""), h("td", {}, ""), h("td", {}, ""), h("td", {}, m ? state(m.state) : "")));
  box.replaceChildren(table(["", "Step", "Progress", ">%", ">Bytes", ">Rate", ">ETA", ">Took", "State"], rows, { class: "steps", id: "mig-table" }));
}

// ---------- an instance ----------

async function instance() {
  const i = await get("/v1/instances/" + encodeURIComponent(arg));
  const target = h("input", { id: "mig-target-input", placeholder: "target node (empty: the planner chooses)" });
  setMain("Instance " + i.name,
    h("dl", {},
      h("dt", {}, "owner"), h("dd", {}, i.owner),
      h("dt", {}, "storage"), h("dd", {}, i.storage),
      h("dt", {}, "run state"), h("dd", {}, i.run_state),
      h("dt", {}, "group"), h("dd", {}, i.group),
      h("dt", {}, "primary"), h("dd", {}, role === "operator" ? link("/console/nodes/" + encodeURIComponent(i.primary), i.primary) : i.primary),
      h("dt", {}, "secondary"), h("dd", {}, i.secondary || "none"),
      h("dt", {}, "size"), h("dd", {}, mib(i.memory_mib) + " memory, " + i.vcpus + " vCPUs, " + mib(i.disk_mib) + " disk"),
      h("dt", {}, "user migrations"), h("dd", {}, i.user_migration === null || i.user_migration === undefined ? "as the settings say" : (i.user_migration ? "allowed" : "forbidden"))),
    h("h2", {}, "Migrate"),
    h("div", { class: "actions" }, target,
      h("button", { id: "estimate", onclick: async () => {
        const e = await migrateAction(null, i.name, "estimate", { target: target.value.trim() });
        if (e) show("About " + dur(e.total_seconds) + " with " + dur(e.downtime_seconds) + " of downtime (" + bytes(e.bytes) + " to send)", true);
      } }, "Estimate"),
      h("button", { id: "migrate", class: "primary", onclick: async ev => {
        const a = await migrateAction(ev.target, i.name, "automatic", { target: target.value.trim(), reason: "migrate from the console" });
        if (a) location.href = "/console/migrations/" + encodeURIComponent(a.migration);
      } }, "Migrate")),
    h("h2", {}, "Migrations"), h("div", { id: "inst-migs" }));
  const ms = await all("/v1/migrations?kind=instance&instance=" + encodeURIComponent(i.name));
  document.getElementById("inst-migs").replaceChildren(ms.length ? table(["Migration", "State", "Phase", "From", "To", "Created"],
    ms.map(m => h("tr", {}, h("td", {}, link("/console/migrations/" + encodeURIComponent(m.id), m.id.slice(0, 8))), h("td", {}, state(m.state)),
      h("td", {}, m.phase), h("td", {}, m.source_server), h("td", {}, m.target_server || ""), h("td", {}, when(m.created_timestamp))))) : h("p", { class: "muted" }, "None yet."));
}

// ---------- settings ----------

const settingFields = [
  ["allow_user_migrations", "Tenants may migrate their own instances", "bool"],
  ["max_running_migrations_per_node", "Migrations running at once per node", "int"],
  ["send_mbps_limit", "Send limit per move, Mbit/s (0: none)", "num"],
  ["resync_max_bytes", "Switch once a re-sync is below (bytes)", "int"],
  ["resync_max_syncs", "At most this many syncs", "int"],
  ["resync_shrink_window", "Re-syncs that must shrink", "int"],
  ["progress_timeout_seconds", "No progress for this long: stalled (s)", "int"],
  ["finalize_grace_seconds", "Finalize this long after a switch (s)", "int"],
];

async function settings() {
  const st = await get("/v1/settings");
  const inputs = {};
  const rows = settingFields.map(([k, label, kind]) => {
    const inp = kind === "bool"
      ? h("select", { id: "set-" + k }, h("option", { value: "true", selected: st[k] === true }, "yes"), h("option", { value: "false", selected: st[k] === false }, "no"))
      : h("input", { id: "set-" + k, value: String(st[k] ?? ""), inputmode: "numeric" });
    inputs[k] = [inp, kind];
    return h("tr", {}, h("td", {}, label), h("td", {}, h("code", {}, k)), h("td", {}, inp));
  });
  setMain("Settings", table(["Setting", "Name", "Value"], rows, { id: "settings" }),
    h("div", { class: "actions" }, h("input", { id: "set-reason", placeholder: "why (recorded)" }),
      h("button", { class: "primary", id: "save", onclick: async ev => {
        const body = { reason: document.getElementById("set-reason").value };
        for (const [k, [inp, kind]] of Object.entries(inputs)) {
          body[k] = kind === "bool" ? inp.value === "true" : Number(inp.value);
        }
        ev.target.disabled = true;
        try { await api("PUT", "/v1/settings", body); show("Saved.", true); } catch (e) { failed(e); }
        ev.target.disabled = false;
      } }, "Save")));
}

// ---------- the audit trail ----------

async function audit() {
  const [rs, ms] = await Promise.all([all("/v1/requests"), all("/v1/migrations?kind=instance")]);
  const trail = [];
  for (const r of rs) trail.push({ t: r.requested_at, who: r.actor, what: r.kind + " " + ((r.nodes && r.nodes.length ? r.nodes : r.instances) || []).join(", ") + (r.dry_run ? " (dry run)" : ""), why: r.reason, outcome: r.status + (r.rejected_reason ? ": " + r.rejected_reason : ""), href: "/console/requests/" + r.id });
  for (const m of ms) trail.push({ t: m.created_timestamp, who: m.account + " (" + m.role + ")", what: "migrate " + m.instance, why: m.message || "", outcome: m.state + (m.error ? ": " + m.error : ""), href: "/console/migrations/" + encodeURIComponent(m.id) });
  trail.sort((a, b) => String(b.t).localeCompare(String(a.t)));
  const kids = [h("h2", {}, "Who asked what"), table(["When", "Who", "What", "Why", "Outcome"], trail.map(e =>
    h("tr", {}, h("td", {}, when(e.t)), h("td", {}, e.who), h("td", {}, link(e.href, e.what)), h("td", { class: "wrap" }, e.why), h("td", { class: "wrap" }, e.outcome))), { id: "audit" })];
  // Refusals (401, 403) are on drove.audit; the API shows them where it
  // offers a history.
  if (await offers("GET", "/v1/history")) {
    try {
      const pg = await get("/v1/history");
      const hist = (pg.items || []).filter(x => String(x.type || "").startsWith("audit."));
      kids.push(h("h2", {}, "Refused and recorded"), table(["When", "Type", "Record"], hist.map(x =>
        h("tr", {}, h("td", {}, when(x.time)), h("td", {}, x.type), h("td", { class: "wrap" }, JSON.stringify(x.payload || x))))));
    } catch (e) {
      kids.push(h("p", { class: "muted" }, "The history did not answer: " + e.message));
    }
  } else {
    kids.push(h("p", { class: "muted", id: "refusals-note" }, "Refusals (401, 403) are recorded on the drove.audit topic; this gateway's API does not list them yet."));
  }
  setMain("Audit trail", ...kids);
}

// ---------- start ----------

const pages = { cluster, node, requests, request, migrations, migration, instances, instance, settings, audit,
  missing: async () => setMain("Not found", h("p", {}, "No such page: " + arg), link("/console/", "To the cluster")) };

(async () => {
  try {
    await whoami();
    if (document.getElementById("login")) return;
    await (pages[page] || pages.missing)();
  } catch (e) {
    failed(e);
  }
})();
