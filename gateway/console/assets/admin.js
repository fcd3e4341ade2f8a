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

async function audit() {
  const [rs, ms] = await Promise.all([all("/v1/requests"), all("/v1/migrations?kind=instance")]);
  const trail = [];
  for (const r of rs) trail.push({ t: r.requested_at, who: r.actor, what: r.kind + " " + ((r.nodes && r.nodes.length ? r.nodes : r.instances) || []).join(", ") + (r.dry_run ? " (dry run)" : ""), why: r.reason, outcome: r.status + (r.rejected_reason ? ": " + r.rejected_reason : ""), href: "/console/requests/" + r.id });
  for (const m of ms) trail.push({ t: m.created_timestamp, who: m.account + " (" + m.role + ")", what: "migrate " + m.instance, why: m.message || "", outcome: m.state + (m.error ? ": " + m.error : ""), href: "/console/migrations/" + encodeURIComponent(m.id) });
  trail.sort((a, b) => String(b.t).localeCompare(String(a.t)));
  const kids = [h("h2", {}, "Who asked what"), table(["When", "Who", "What", "Why", "Outcome"], trail.map(e =>
    h("tr", {}, h("td", {}, when(e.t)), h("td", {}, e.who), h("td", {}, link(e.href, e.what)), h("td", { class: "wrap" }, e.why), h("td", { class: "wrap" }, e.outcome))), { id: "audit" })];
  // Refusals (401, 403) are audit.recorded events on drove.audit: no view
  // folds them, so no route lists them. Node actions, refused ones too,
  // are in each node's history (its page).
  kids.push(h("p", { class: "muted", id: "refusals-note" }, "Refusals (401, 403) are recorded on the drove.audit topic, which the API does not list. " +
    "Each node's and instance's page shows its history: who asked what and why, node actions refused by the planner service included."));
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
