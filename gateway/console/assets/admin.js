"use strict";

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

// The trail comes from GET /v1/audit (log order, paged): the asks people
// made and the gateway's refusals (401, 403), which are highlighted. The
// page shows it newest first; the filters are the route's.
const auditAsks = {
  "evacuation.requested": "/console/requests/", "group_change.requested": "/console/requests/",
  "request.approved": "/console/requests/", "request.cancelled": "/console/requests/",
  "migration.action_requested": "/console/migrations/",
};

async function audit() {
  const q = new URLSearchParams(location.search);
  const outcome = q.get("outcome") || "", actor = q.get("actor") || "";
  const qs = new URLSearchParams();
  if (outcome) qs.set("outcome", outcome);
  if (actor) qs.set("actor", actor);
  const trail = (await all("/v1/audit" + (qs.toString() ? "?" + qs : ""))).reverse();
  const refusals = trail.filter(e => e.outcome === "denied");
  const refused = refusals.reduce((n, e) => n + (e.count || 1), 0);
  const pick = h("select", { id: "audit-outcome" },
    [["", "everything"], ["denied", "refusals only"], ["requested", "asks only"], ["allowed", "allowed decisions"]].map(([v, label]) =>
      h("option", { value: v, selected: v === outcome }, label)));
  const who = h("input", { id: "audit-actor", value: actor, placeholder: "actor or account (all)" });
  const filter = h("form", { class: "actions", id: "audit-filter", onsubmit: ev => {
    ev.preventDefault();
    const next = new URLSearchParams();
    if (pick.value) next.set("outcome", pick.value);
    if (who.value.trim()) next.set("actor", who.value.trim());
    location.search = next.toString();
  } }, pick, who, h("button", { type: "submit" }, "Show"));
  const rows = trail.map(e => {
    const to = auditAsks[e.type];
    const what = to && e.request ? link(to + encodeURIComponent(e.request), e.action) : e.action;
    const answer = e.outcome + (e.count > 1 ? " ×" + e.count : "") + (e.detail && e.count > 1 ? ": " + e.detail : "");
    return h("tr", { class: e.outcome === "denied" ? "refused" : "", "data-seq": e.seq, "data-outcome": e.outcome },
      h("td", {}, when(e.time)), h("td", {}, e.account || e.actor), h("td", { class: "wrap" }, what),
      h("td", { class: "wrap" }, e.why), h("td", { class: "wrap" }, answer));
  });
  setMain("Audit trail", filter,
    h("p", { class: "muted", id: "audit-summary" }, trail.length + " entries, newest first; " + refused + " refusals" +
      (refused !== refusals.length ? " (" + refusals.length + " records: the gateway folds floods of refusals into counts)" : "") +
      ". Each node's and instance's page shows its whole history."),
    table(["When", "Who", "What", "Why", "Outcome"], rows, { id: "audit" }));
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
