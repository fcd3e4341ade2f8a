// Drove console: draws each page from the JSON API (/v1/...), with the
// caller's bearer token. No framework, no build step: the gateway embeds
// these files as they are. page.html loads them in order (deferred, so they
// share one global scope): core.js (helpers, the API, sign-in), then one
// file per part (cluster.js, requests.js, migrations.js), then admin.js
// (settings, audit) which starts the page.
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

// history reads GET /v1/history/{kind}/{id} after the seq `after` (0:
// from the start) to its end: the events in log order and the last seq.
async function history(kind, id, after) {
  let items = [];
  for (;;) {
    const pg = await get("/v1/history/" + kind + "/" + encodeURIComponent(id) + "?limit=1000" + (after ? "&after=" + after : ""));
    items = items.concat(pg.items || []);
    if (items.length) after = items[items.length - 1].seq;
    if (!pg.next) return { items, after };
  }
}

// historyTable shows a history's latest events first: who asked, why and
// what changed; a refused node action is marked so.
function historyTable(items, attrs) {
  const rows = items.slice(-100).reverse().map(x => h("tr", { "data-type": x.type, class: /refused/.test(x.summary) ? "refused" : "" },
    h("td", {}, when(x.time)), h("td", {}, x.actor), h("td", { class: "wrap" }, x.why),
    h("td", { class: "wrap" }, x.summary), h("td", {}, x.requester && x.requester !== x.actor ? x.requester : "")));
  return rows.length ? table(["When", "Who", "Why", "What changed", "Asked by"], rows, attrs) : h("p", { class: "muted" }, "Nothing yet.");
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
    try {
      again = (await f()) !== false;
      if (!banner.hidden && banner.className !== "info") show(""); // it answers again
    } catch (e) { failed(e); }
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
