"""HA resources, groups and rules through the simple-object lifecycle, against the served fake cluster's
HA configuration (``tests.support.ha.HaPve``, from pve-ha-manager ``API2/HA/{Resources,Groups,Rules}.pm``:
fakepve 0.5.0 stores none); and a guest whose power state an HA resource of the run owns refusing
``status:`` (pve-ha-manager ``HA/Config.pm`` ``vm_is_ha_managed``)."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from salt_proxmox.guest import ha_owned
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.ha import group, resource, rule
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.errors import PveError
from salt_proxmox.run.lowstate import Run
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.cluster import DNS1_VMID, ROUTER_VMID
from tests.support.guests import dns1, make_context, requests_since, static_targets, writes


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _plan_apply_replan(served, ctx, spec, state_id, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, spec, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, spec, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, spec, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    return plan, done, log


def _on_pve8(served):
    served.pve.version, served.pve.release_version = "8.4.14", "8.4"


def test_a_resource_is_created_updated_and_replanned_clean_and_its_guest_shows_it_managed(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    sid = f"ct:{DNS1_VMID}"
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, resource.SPEC, "dns-ha", name=sid, max_restart=2)
    (create,) = writes(log)
    assert create[:2] == ("POST", "/cluster/ha/resources")
    assert _form(create[2]) == {"sid": sid, "max_restart": "2"}
    assert fresh_cluster.pve.ct(DNS1_VMID).ha_state == "started", "PVE's default state"
    # A max_restart of 0 is sent (not PVE's default 1); the update carries the digest it was judged on.
    _, _, log = _plan_apply_replan(
        fresh_cluster, ctx, resource.SPEC, "dns-ha", name=sid, max_restart=0, ha_state="stopped"
    )
    (update,) = writes(log)
    assert update[:2] == ("PUT", f"/cluster/ha/resources/{sid}")
    sent = _form(update[2])
    assert sent["max_restart"] == "0" and sent["state"] == "stopped" and sent["digest"]
    # The delete takes it out of HA: the guest is no longer managed.
    gone = absent(ctx, resource.SPEC, False, "dns-ha", "destroy", name=sid)
    assert gone.result is True, gone.comment
    assert fresh_cluster.pve.ct(DNS1_VMID).ha_state is None


def test_a_pve8_group_goes_through_on_8_and_is_refused_on_9_naming_rules(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {"name": "prefer-pve1", "nodes": ["pve1:2", "pve2:1"], "restricted": 0}
    # PVE 9: GET /cluster/ha/groups answers 500 (migrated), never an empty list; refused at plan.
    plan = present(ctx, group.SPEC, True, "prefer", **declared)
    assert plan.result is False, plan.comment
    text = " ".join(plan.comment)
    assert "migrated HA groups to HA rules" in text and "node-affinity rule under proxmox:ha_rules" in text
    assert writes(requests_since(fresh_cluster, 0)) == []

    _on_pve8(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, group.SPEC, "prefer", **declared)
    assert _form(writes(log)[0][2])["nodes"] in ("pve1:2,pve2:1", "pve2:1,pve1:2")
    # A resource on 8 may name its group.
    _plan_apply_replan(
        fresh_cluster, ctx, resource.SPEC, "dns-ha", name=f"ct:{DNS1_VMID}", group="prefer-pve1"
    )


def test_a_pve9_rule_goes_through_on_9_and_is_refused_on_8_naming_groups(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    sid = f"ct:{DNS1_VMID}"
    _plan_apply_replan(fresh_cluster, ctx, resource.SPEC, "dns-ha", name=sid)
    declared = {
        "name": "dns-on-pve1",
        "type": "node-affinity",
        "resources": [sid],
        "nodes": ["pve1:2", "pve2:1"],
    }
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, rule.SPEC, "dns-on-pve1", **declared)
    assert writes(log)[0][:2] == ("POST", "/cluster/ha/rules")
    assert fresh_cluster.pve.ha_rules["dns-on-pve1"]["type"] == "node-affinity"
    # A group on a resource is refused on 9 (Resources.pm: groups migrated to rules).
    refused = present(ctx, resource.SPEC, True, "dns-ha", name=sid, group="prefer-pve1")
    assert refused.result is False and "invalid parameter 'group'" in " ".join(refused.comment)

    _on_pve8(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, rule.SPEC, True, "other", **{**declared, "name": "other"})
    assert plan.result is False, plan.comment
    assert "has no HA rules" in " ".join(plan.comment) and "proxmox:ha_groups" in " ".join(plan.comment)


def test_a_rule_of_a_type_is_checked_before_anything_is_sent(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(
        ctx, rule.SPEC, True, "r", name="r1", type="resource-affinity", resources=["ct:120"], nodes="pve1"
    )
    assert plan.result is False
    text = " ".join(plan.comment)
    assert "nodes: not a key of a resource-affinity rule" in text and "affinity:" in text


def test_a_guest_an_ha_resource_of_the_run_manages_refuses_status(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    ha_owned.remember_declared(
        ctx, [{"name": f"ct:{DNS1_VMID}", "ha_state": "started"}, {"name": f"vm:{ROUTER_VMID}"}]
    )
    plan = guest_lifecycle.present(
        ctx, LXC, "dns1", True, **dns1(description="Resolver for the lab", status="running", adopt=True)
    )
    assert plan.result is False, plan.comment
    text = " ".join(plan.comment)
    assert f"HA resource ct:{DNS1_VMID} (declared in this run, state started) owns its power state" in text
    assert f"declare proxmox:ha_resources:ct:{DNS1_VMID}: {{ha_state: started}}" in text
    assert writes(requests_since(fresh_cluster, 0)) == []
    # A resource in state ignored does not manage its guest (HA/Config.pm $service_check_ha_state).
    ha_owned.remember_declared(ctx, [{"name": f"ct:{DNS1_VMID}", "ha_state": "ignored"}])
    plan = guest_lifecycle.present(
        ctx, LXC, "dns1", True, **dns1(description="Resolver for the lab", status="running", adopt=True)
    )
    assert plan.result is not False, plan.comment
    assert not any("owns its power state" in line for line in plan.comment)


def test_a_guest_a_live_ha_resource_manages_refuses_status_until_the_resource_is_ignored(fresh_cluster):
    """pve-ha-manager ``HA/Config.pm``: ``get_service_status`` (``status/current``'s ``ha``) reads
    ``managed: 1`` for a guest whose resource is configured and not ``ignored``; PVE then hands its
    start and shutdown to the HA manager (``vm_is_ha_managed``). A resource no state of the run
    declares owns the guest's power as a declared one does: ``status:`` is refused, even the status
    HA holds; once the resource is ``ignored`` the guest's status is its own again."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    sid = f"ct:{DNS1_VMID}"
    assert present(ctx, resource.SPEC, False, "dns-ha", name=sid).result is True
    start = len(fresh_cluster.pve.requests)
    declared = dns1(description="Resolver for the lab", status="running", adopt=True)
    for test in (True, False):
        fresh = make_context(static_targets(fresh_cluster), store=MemoryStore())
        refused = guest_lifecycle.present(fresh, LXC, "dns1", test, **declared)
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert (
            f"status: running is refused: HA resource {sid} (live, ha.state started) owns its power" in text
        )
        assert "even while both say the same" in text
        assert f"declare proxmox:ha_resources:{sid}: {{ha_state: started}}" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    assert present(ctx, resource.SPEC, False, "dns-ha", name=sid, ha_state="ignored").result is True
    fresh = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = guest_lifecycle.present(fresh, LXC, "dns1", True, **declared)
    assert plan.result is not False, plan.comment
    assert not any("owns its power state" in line for line in plan.comment)


def test_a_resource_for_a_guest_the_cluster_lacks_is_refused_unless_the_run_declares_it(
    fresh_cluster,
):
    # pve-ha-manager Resources/PVECT.pm exists: `resource 'ct:199' does not exist in cluster`.
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, resource.SPEC, True, "ha", name="ct:199")
    assert plan.result is False and "does not exist in cluster" in " ".join(plan.comment), plan.comment
    # vm:120 names a container's vmid: the type is part of the id.
    plan = present(ctx, resource.SPEC, True, "ha", name=f"vm:{DNS1_VMID}")
    assert plan.result is False and "is a lxc guest on pve1" in " ".join(plan.comment), plan.comment
    assert writes(requests_since(fresh_cluster, 0)) == []
    # A guest the run declares is created before its resource (the formula's requisite): no refusal.
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    lowstate = [
        {"state": "proxmox_ha_resource", "fun": "present", "__id__": "ha", "name": "ct:199"},
        {"state": "proxmox_lxc", "fun": "present", "__id__": "new", "name": "new", "vmid": 199},
    ]
    ha_owned.remember_run(ctx, Run(lowstate), ctx.target.name)
    plan = present(ctx, resource.SPEC, True, "ha", name="ct:199")
    assert plan.result is None, plan.comment


def test_an_export_lists_groups_on_pve8_only_and_rules_on_pve9_only(fresh_cluster):
    """pve-ha-manager: PVE 9 migrated groups to rules (its group listing answers 500), PVE 8 has no
    rules: an export reads each kind's listing on its own release only, never a failing read."""
    from salt_proxmox.export import objects

    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    on9 = [objects.export(ctx, spec).notes for spec in (group.SPEC, rule.SPEC)]
    assert on9 == [[], []], on9
    paths = [path for method, path, _ in requests_since(fresh_cluster, start) if method == "GET"]
    assert "/cluster/ha/groups" not in paths and "/cluster/ha/rules" in paths, paths
    _on_pve8(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    on8 = [objects.export(ctx, spec).notes for spec in (group.SPEC, rule.SPEC)]
    assert on8 == [[], []], on8
    paths = [path for method, path, _ in requests_since(fresh_cluster, start) if method == "GET"]
    assert "/cluster/ha/rules" not in paths and "/cluster/ha/groups" in paths, paths


def test_a_rule_naming_a_node_outside_the_cluster_or_an_unmanaged_resource_is_refused_at_plan(fresh_cluster):
    """pve-ha-manager ``API2/HA/Rules.pm`` ``create_rule``/``update_rule``: ``$assert_valid_nodes_param``
    dies ``cannot use non-existent node(s) <nodes>.`` (``PVE::Cluster::check_node_exists``) and
    ``$assert_valid_resources_param`` ``cannot use unmanaged resource(s) <sids>.``
    (``HA/Config.pm`` ``service_is_configured``). Both are judged at plan from ``GET /nodes`` and ``GET
    /cluster/ha/resources`` with the read token; a resource the run declares is made first. The fake
    refuses both as PVE does, so the plan's refusal is PVE's."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    sid = f"ct:{DNS1_VMID}"
    _plan_apply_replan(fresh_cluster, ctx, resource.SPEC, "dns-ha", name=sid)
    declared = {
        "name": "dns-on-pve3",
        "type": "node-affinity",
        "resources": [sid],
        "nodes": ["pve1", "pve3:2"],
    }
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = present(ctx, rule.SPEC, test, "dns-on-pve3", **declared)
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert "HA rule dns-on-pve3: pve3 is not a node of the cluster (GET /nodes)" in text
        assert "`cannot use non-existent node(s) pve3.`" in text and "$assert_valid_nodes_param" in text
    other = f"vm:{ROUTER_VMID}"
    refused = present(ctx, rule.SPEC, True, "pair", name="pair", type="resource-affinity",
                      resources=[sid, other], affinity="negative")  # fmt: skip
    assert refused.result is False, refused.comment
    text = " ".join(refused.comment)
    assert f"HA rule pair: {other} is no HA resource and no state of this run declares one" in text
    assert f"`cannot use unmanaged resource(s) {other}.`" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    # PVE says the same: the fake refuses the create the plan refused.
    form = {"rule": "x", "type": "node-affinity", "resources": sid, "nodes": "pve3"}
    with pytest.raises(PveError, match=r"cannot use non-existent node\(s\) pve3\."):
        ctx.client.request("POST", "cluster/ha/rules", ctx.broker.provision(), form=form)
    # A resource the run declares present is made before the rule (the formula's requisite).
    lowstate = [{"state": "proxmox_ha_resource", "fun": "present", "__id__": "r", "name": other}]
    ha_owned.remember_run(ctx, Run(lowstate), ctx.target.name)
    plan = present(ctx, rule.SPEC, True, "pair", name="pair", type="resource-affinity",
                   resources=[sid, other], affinity="negative")  # fmt: skip
    assert plan.result is None, plan.comment
    # An update judges what it sends: nodes changed to a member plan, to a stranger are refused.
    _plan_apply_replan(
        fresh_cluster, ctx, rule.SPEC, "dns-on", **{**declared, "name": "dns-on", "nodes": ["pve1"]}
    )
    assert (
        present(ctx, rule.SPEC, True, "dns-on", **{**declared, "name": "dns-on", "nodes": ["pve2"]}).result
        is None
    )
    refused = present(ctx, rule.SPEC, True, "dns-on", **{**declared, "name": "dns-on"})
    assert refused.result is False and "`cannot use non-existent node(s) pve3.`" in " ".join(refused.comment)


def test_a_pve8_group_naming_a_node_outside_the_cluster_is_noted_as_pve_8_stores_it(fresh_cluster):
    """pve-ha-manager ``HA/Groups.pm`` ``decode_value`` checks a group node's form only
    (``pve_verify_ha_node``), and ``API2/HA/Groups.pm`` ``create`` no membership: PVE 8 stores a node
    that is not a member. The plan notes it, and the group goes through as PVE takes it."""
    _on_pve8(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan, _, _ = _plan_apply_replan(
        fresh_cluster, ctx, group.SPEC, "later", name="later", nodes=["pve1:2", "pve9:1"]
    )
    assert (
        "HA group later: pve9 is not a node of the cluster (GET /nodes); PVE 8 stores it as given "
        "(pve-ha-manager HA/Groups.pm checks only its form), and HA places no resource there until such a "
        "node joins"
    ) in plan.comment
    assert fresh_cluster.pve.ha_groups["later"]["nodes"] in ("pve1:2,pve9:1", "pve9:1,pve1:2")
    members = present(ctx, group.SPEC, True, "prefer", name="prefer", nodes=["pve1:2", "pve2:1"])
    assert not any("not a node of the cluster" in line for line in members.comment)


def test_a_guest_under_an_ha_resource_even_an_ignored_one_is_not_destroyed_and_the_plan_says_why(
    fresh_cluster,
):
    """qemu-server and pve-container ``destroy_vm``: ``unable to remove CT <vmid> - used in HA
    resources and purge parameter not set.`` whenever ``HA/Config.pm`` ``service_is_configured``,
    ``ignored`` included (its guest reads ``managed: 0``, so the plan asks ``GET
    /cluster/ha/resources/<sid>``); ``purge`` is never sent. Refused at plan and apply, nothing sent;
    once the resource is gone the stopped container is destroyed."""
    from tests.support.guests import declaration

    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.present(ctx, LXC, "web", False, **declaration(vmid=160)).result
    sid = "ct:160"
    assert present(ctx, resource.SPEC, False, "web-ha", name=sid, ha_state="ignored").result is True
    fresh_cluster.pve.ct(160).status = "stopped"
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = guest_lifecycle.absent(ctx, LXC, "web", test, vmid=160, node="pve1", removal="destroy")
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert "CT 160 on pve1 is HA resource ct:160, and PVE refuses to destroy it" in text
        assert "`ha-manager remove ct:160`" in text
    assert writes(requests_since(fresh_cluster, start)) == [] and fresh_cluster.pve.ct(160) is not None
    assert absent(ctx, resource.SPEC, False, "web-ha", "destroy", name=sid).result is True
    destroyed = guest_lifecycle.absent(ctx, LXC, "web", False, vmid=160, node="pve1", removal="destroy")
    assert destroyed.result is True, destroyed.comment
    assert fresh_cluster.pve.ct(160) is None


def test_a_resource_s_group_and_error_state_are_judged_as_pve_8_judges_them(fresh_cluster):
    """pve-ha-manager ``API2/HA/Resources.pm``: ``create`` stores a group that does not exist (noted at
    plan), ``update`` dies ``HA group '<group>' does not exist`` for one it sends, unless the run
    declares the group (the resource requires it); ``check_service_state`` refuses any update of a
    service the HA manager holds in ``error`` but one to ``disabled``."""
    _on_pve8(fresh_cluster)
    sid = f"ct:{DNS1_VMID}"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan, _, _ = _plan_apply_replan(fresh_cluster, ctx, resource.SPEC, "dns-ha", name=sid, group="later")
    assert (
        f"HA resource {sid} (CT {DNS1_VMID}): HA group later does not exist and no state of this run "
        "declares it; PVE stores it as given"
    ) in " ".join(plan.comment)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = present(ctx, resource.SPEC, test, "dns-ha", name=sid, group="other")
        assert refused.result is False, refused.comment
        assert "`HA group 'other' does not exist`" in " ".join(refused.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
    lowstate = [{"state": "proxmox_ha_group", "fun": "present", "__id__": "g", "name": "other"}]
    declared = make_context(static_targets(fresh_cluster), store=ctx.ownership.store)
    ha_owned.remember_run(declared, Run(lowstate), declared.target.name)
    assert present(declared, resource.SPEC, True, "dns-ha", name=sid, group="other").result is None

    fresh_cluster.pve.ct(DNS1_VMID).ha_state = "error"  # the CRM gave up on it
    for test in (True, False):
        refused = present(ctx, resource.SPEC, test, "dns-ha", name=sid, group="later", max_restart=3)
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert f"`service '{sid}' in error state, must be disabled and fixed first`" in text
        assert "Declare ha_state: disabled" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    done = present(ctx, resource.SPEC, False, "dns-ha", name=sid, group="later", ha_state="disabled")
    assert done.result is True, done.comment


def test_a_resource_in_two_node_affinity_rules_is_refused_at_plan_as_pve_finds_the_rules_infeasible(
    fresh_cluster,
):
    """pve-ha-manager ``API2/HA/Rules.pm`` ``$assert_feasibility``: ``Rules/NodeAffinity.pm``
    ``check_single_resource_reference`` over the enabled node-affinity rules, ``Rule '<rule>' is
    invalid.`` with ``resource '<sid>' is already used in another node affinity rule``. A disabled rule
    does not count, and a resource-affinity rule may name it."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    sid = f"ct:{DNS1_VMID}"
    _plan_apply_replan(fresh_cluster, ctx, resource.SPEC, "dns-ha", name=sid)
    first = {"type": "node-affinity", "resources": [sid], "nodes": ["pve1"]}
    _plan_apply_replan(fresh_cluster, ctx, rule.SPEC, "on-pve1", name="on-pve1", **first)
    start = len(fresh_cluster.pve.requests)
    second = {**first, "nodes": ["pve2"]}
    for test in (True, False):
        refused = present(ctx, rule.SPEC, test, "on-pve2", name="on-pve2", **second)
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert f"HA rule on-pve2: {sid} is in node-affinity rule on-pve1 already" in text
        assert f"`resource '{sid}' is already used in another node affinity rule`" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    form = {"rule": "x", "type": "node-affinity", "resources": sid, "nodes": "pve2"}
    with pytest.raises(PveError, match=r"Rule 'x' is invalid"):
        ctx.client.request("POST", "cluster/ha/rules", ctx.broker.provision(), form=form)
    assert present(ctx, rule.SPEC, True, "on-pve2", name="on-pve2", disable=True, **second).result is None
    _plan_apply_replan(fresh_cluster, ctx, rule.SPEC, "on-pve1", name="on-pve1", disable=True, **first)
    assert present(ctx, rule.SPEC, True, "on-pve2", name="on-pve2", **second).result is None
