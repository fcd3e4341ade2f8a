"use strict";

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
  const [n, ins, hist] = await Promise.all([get("/v1/nodes/" + encodeURIComponent(arg)),
    all("/v1/instances?node=" + encodeURIComponent(arg)), history("node", arg, 0)]);
  const reason = h("input", { id: "node-reason", placeholder: "why (recorded)" });
  const actions = h("div", { class: "actions" },
    h("button", { "data-evacuate": n.name, onclick: () => openEvacuate(n.name) }, "Evacuate…"), reason);
  const act = (id, verb, label, cls) => actions.append(h("button", { id, class: cls || "",
    onclick: ev => nodeAction(ev.target, n.name, verb, reason.value) }, label));
  if (n.drained) act("undrain", "undrain", "Undrain");
  if (n.offline) act("online", "online", "Bring online");
  else act("offline", "offline", "Take offline", "danger");
  setMain("Node " + n.name,
    h("dl", {},
      h("dt", {}, "group"), h("dd", {}, n.group),
      h("dt", {}, "memory"), h("dd", {}, mib(n.total_memory_mib - n.free_memory_mib) + " used of " + mib(n.total_memory_mib)),
      h("dt", {}, "disk"), h("dd", {}, mib(n.total_disk_mib - n.free_disk_mib) + " used of " + mib(n.total_disk_mib)),
      h("dt", {}, "cpus"), h("dd", {}, n.total_cpus),
      h("dt", {}, "marks"), h("dd", { id: "node-marks" }, [n.drained ? "drained" : "", n.offline ? "offline" : "", n.vm_capable ? "" : "not vm-capable"].filter(Boolean).join(", ") || "none"),
      h("dt", {}, "heartbeat"), h("dd", { id: "node-heartbeat" }, n.heartbeat_at ? when(n.heartbeat_at) : "none yet")),
    actions,
    h("h2", { id: "node-instances" }, ins.length + " instances"),
    instanceTable(ins, n.name),
    h("h2", {}, "History"),
    // The node's own story: its states, the evacuations and node actions
    // asked (refusals included); the instances' moves are on their pages.
    historyTable(hist.items.filter(x => x.type.startsWith("node.") || x.type === "evacuation.requested"), { id: "node-history" }),
    evacuateDialog());
}

// nodeAction asks for an undrain, offline or online and waits for the
// planner service's answer (done, or refused and why) before redrawing.
async function nodeAction(btn, name, verb, why) {
  if (verb === "offline" && !confirm("Take " + name + " offline? Nothing is placed on it, and moves to or from it end.")) return;
  btn.disabled = true;
  try {
    const a = await api("POST", "/v1/nodes/" + encodeURIComponent(name) + "/" + verb, why ? { reason: why } : {});
    show(verb + " accepted; waiting for the planner service…", true);
    for (let i = 0; i < 60; i++) {
      // The action is appended before the projector folds it: until
      // then its link answers 404, which is "not yet", not an error.
      const r = await get(a.links.self).catch(e => {
        if (e.status === 404) return { state: "requested" };
        throw e;
      });
      if (r.state !== "requested") {
        if (r.state === "done") await nodeShows(name, verb);
        show(r.state === "done" ? verb + " done." : verb + " refused: " + r.answer, r.state === "done");
        break;
      }
      await new Promise(ok => setTimeout(ok, 500));
    }
    await node();
  } catch (e) {
    btn.disabled = false;
    failed(e);
  }
}

// nodeShows waits, for at most 30 s, until the node's view shows a done
// action: the answer and the node's new state travel on different topics,
// so the projector may fold the answer first, and a page drawn then would
// show the node as it was.
async function nodeShows(name, verb) {
  const shown = n => verb === "undrain" ? !n.drained : verb === "offline" ? n.offline : !n.offline;
  for (let i = 0; i < 60; i++) {
    if (shown(await get("/v1/nodes/" + encodeURIComponent(name)))) return;
    await new Promise(ok => setTimeout(ok, 500));
  }
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
