"use strict";

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

async function migration() {
  const id = arg;
  setMain("Migration " + id, h("div", { id: "mig-head" }), h("div", { id: "mig-actions", class: "actions" }),
    h("h2", {}, "Steps"), h("div", { id: "mig-steps" }, h("p", { class: "muted" }, "No step has reported yet.")));
  const steps = new Map(); // index -> the step as the gateway folds it (?rows=steps)
  let m = null, watching = false, lastTime = null, seen = 0;
  const reported = {}; // node -> its last move status (oVirt's), from the migration's history
  const ctl = new AbortController();
  const redraw = () => drawSteps(steps, m, lastTime);
  every(1500, async () => {
    try {
      m = await get("/v1/migrations/" + encodeURIComponent(id));
    } catch (e) {
      if (e.status !== 404 || m) throw e;
      show("Accepted; waiting for the coordinator to record the migration…", true);
      return true; // just accepted: the views have not caught up yet
    }
    if (banner.textContent.startsWith("Accepted; waiting")) show("");
    const hist = await history("migration", id, seen);
    seen = hist.after;
    for (const x of hist.items) if (x.type === "move.status_reported" && x.payload) reported[x.payload.node] = x.payload.status;
    drawMigrationHead(m, reported);
    if (!watching) {
      watching = true;
      stream("/v1/instances/" + encodeURIComponent(m.instance) + "/migrate/watch?rows=steps&migration=" + encodeURIComponent(id), ev => {
        if (!ev.steps) return;
        lastTime = ev.time;
        for (const st of ev.steps) steps.set(st.index, st);
        redraw();
      }, ctl.signal).catch(e => { if (e.name !== "AbortError") failed(e); });
    }
    redraw();
    return !["successful", "failed", "aborted"].includes(m.state) || !m.finished_timestamp ? true : false;
  });
}

// sides are the source's and the target's statuses: what each node last
// reported (move.status_reported in the migration's history: "migration
// source", "up", ...), else what the record's state and phase imply.
function sides(m, reported) {
  const [src, dst] = derivedSides(m);
  const said = node => (reported && node && reported[node]) || "";
  return [said(m.source_server) || src, said(m.target_server) || dst];
}

function derivedSides(m) {
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

// downtimeText: the switch's downtime, predicted (and the budget, if
// any) and, once it switched, measured: the workload's own figure (from
// the timeline it writes with its data) first when there is one.
function downtimeText(m) {
  const parts = [];
  if (m.workload_downtime_ms) parts.push(m.workload_downtime_ms + " ms as the workload saw it");
  if (m.downtime_ms) parts.push(m.downtime_ms + " ms measured by Drove");
  if (m.predicted_downtime_ms) parts.push(m.predicted_downtime_ms + " ms predicted");
  if (m.max_downtime_ms) parts.push("budget " + m.max_downtime_ms + " ms");
  return parts.join(" · ");
}

function drawMigrationHead(m, reported) {
  const [src, dst] = sides(m, reported);
  document.getElementById("mig-head").replaceChildren(h("dl", {},
    h("dt", {}, "instance"), h("dd", {}, link("/console/instances/" + encodeURIComponent(m.instance), m.instance)),
    h("dt", {}, "state"), h("dd", {}, h("span", { id: "mig-state", class: "state " + m.state }, m.state), " · phase " + m.phase + (m.automatic ? " · automatic" : "")),
    h("dt", {}, "source"), h("dd", { id: "mig-source" }, m.source_server + " — " + src),
    h("dt", {}, "target"), h("dd", { id: "mig-target" }, (m.target_server || "chosen by the planner") + (dst ? " — " + dst : "")),
    h("dt", {}, "syncs"), h("dd", { id: "mig-syncs" }, m.num_sync_phases + (m.last_sync_size ? ", the last " + bytes(m.last_sync_size) : "")),
    downtimeText(m) ? [h("dt", {}, "downtime"), h("dd", { id: "mig-downtime" }, downtimeText(m))] : "",
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
    const cur = Math.min(st.current_progress, st.total_progress);
    if (st.total_progress > 1) sent += cur; // begin and the like count 0 to 1, not bytes
    const took = ((st.ended_timestamp ? Date.parse(st.ended_timestamp) : now) - Date.parse(st.started_timestamp)) / 1000;
    const mark = st.state === "running" ? "☐" : (st.state === "successful" || st.state === "paused" ? "✓" : "✗");
    return h("tr", { class: "step", "data-phase": st.phase, "data-state": st.state },
      h("td", { class: "check" }, mark), h("td", {}, st.label),
      h("td", {}, bar(st.percent)), h("td", { class: "num" }, Math.round(st.percent) + "%"),
      h("td", { class: "num" }, st.total_progress > 1 ? bytes(cur) + " / " + bytes(st.total_progress) : ""),
      h("td", { class: "num" }, st.transfer_bytes_second > 0 && st.state === "running" ? bytes(st.transfer_bytes_second) + "/s" : ""),
      h("td", { class: "num" }, dur(st.eta_ms / 1000)), h("td", { class: "num" }, dur(took)),
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
      h("dt", {}, "user migrations"), h("dd", {}, i.user_migration === null || i.user_migration === undefined ? "as the settings say" : (i.user_migration ? "allowed" : "forbidden")),
      h("dt", {}, "downtime budget"), h("dd", { id: "inst-budget" }, i.max_downtime_ms ? i.max_downtime_ms + " ms, its own" : "as the settings say")),
    h("h2", {}, "Migrate"),
    h("div", { class: "actions" }, target,
      h("button", { id: "estimate", onclick: async () => {
        const e = await migrateAction(null, i.name, "estimate", { target: target.value.trim() });
        if (e) show("About " + dur(e.total_seconds) + " with " + dur(e.downtime_seconds) + " of downtime (" + bytes(e.bytes) + " to send)" +
          (e.max_downtime_ms ? "; downtime budget " + e.max_downtime_ms + " ms" : ""), true);
      } }, "Estimate"),
      h("button", { id: "migrate", class: "primary", onclick: async ev => {
        const a = await migrateAction(ev.target, i.name, "automatic", { target: target.value.trim(), reason: "migrate from the console" });
        if (a) location.href = "/console/migrations/" + encodeURIComponent(a.migration);
      } }, "Migrate")),
    h("h2", {}, "Migrations"), h("div", { id: "inst-migs" }),
    h("h2", {}, "History"), h("div", { id: "inst-history" }));
  const ms = await all("/v1/migrations?kind=instance&instance=" + encodeURIComponent(i.name));
  document.getElementById("inst-migs").replaceChildren(ms.length ? table(["Migration", "State", "Phase", "From", "To", "Created"],
    ms.map(m => h("tr", {}, h("td", {}, link("/console/migrations/" + encodeURIComponent(m.id), m.id.slice(0, 8))), h("td", {}, state(m.state)),
      h("td", {}, m.phase), h("td", {}, m.source_server), h("td", {}, m.target_server || ""), h("td", {}, when(m.created_timestamp))))) : h("p", { class: "muted" }, "None yet."));
  const hist = await history("instance", i.name, 0);
  document.getElementById("inst-history").replaceChildren(historyTable(hist.items, { id: "instance-history" }));
}
