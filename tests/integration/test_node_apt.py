"""A node's APT repositories through the simple-object lifecycle, against the served fake cluster, whose
repository files are ``tests.support.apt.AptPve`` (pve-manager ``PVE/API2/APT.pm`` over proxmox-apt:
fakepve 0.5.0 stores none). A plan only reads, an apply writes what the plan showed, each write carrying
the digest of the read right before it, and a second plan is clean."""

from __future__ import annotations

from urllib.parse import parse_qs

from salt_proxmox.node import apt
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

ENTERPRISE = "/etc/apt/sources.list.d/pve-enterprise.sources"
DECLARED = {
    "name": "pve1",
    "adopt": True,
    "repositories": [{"handle": "no-subscription"}, {"path": ENTERPRISE, "index": 0, "enabled": False}],
}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _plan_apply_replan(served, ctx, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, apt.SPEC, True, "pve1-apt", **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, apt.SPEC, False, "pve1-apt", **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, apt.SPEC, True, "pve1-apt", **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    return plan, log


def test_a_standard_repository_is_added_and_the_enterprise_one_disabled_each_with_a_fresh_digest(
    fresh_cluster,
):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan, log = _plan_apply_replan(fresh_cluster, ctx, **DECLARED)
    assert plan.changes == {
        "no-subscription": {"old": False, "new": True},
        f"{ENTERPRISE}#0": {"old": True, "new": False},
        "ownership": {"old": None, "new": "owned"},  # adopt: the enterprise entry is live
    }
    add, change = writes(log)
    assert add[:2] == ("PUT", "/nodes/pve1/apt/repositories")
    assert change[:2] == ("POST", "/nodes/pve1/apt/repositories")
    # proxmox-apt api.rs: every write checks the common digest; the second is read after the first write.
    assert _form(add[2])["handle"] == "no-subscription" and _form(add[2])["digest"]
    second = _form(change[2])
    assert {k: second[k] for k in ("path", "index", "enabled")} == {
        "path": ENTERPRISE,
        "index": "0",
        "enabled": "0",
    }
    assert second["digest"] and second["digest"] != _form(add[2])["digest"]
    files = pve.apt_files["pve1"]
    assert files[ENTERPRISE][0]["Enabled"] is False
    assert files["/etc/apt/sources.list.d/proxmox.sources"][0]["Components"] == ["pve-no-subscription"]


def test_a_live_repository_set_is_not_taken_over_without_adopt(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    refused = present(ctx, apt.SPEC, True, "pve1-apt", **{**DECLARED, "adopt": False})
    assert refused.result is False and "adopt" in " ".join(refused.comment)


def test_a_handle_the_node_does_not_offer_is_refused_with_the_offered_list(fresh_cluster):
    """PVE 9 (trixie) offers no Ceph Quincy or Reef (proxmox-apt standard.rs CEPH_RELEASES)."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    refused = present(
        ctx, apt.SPEC, False, "pve1-apt", name="pve1", repositories=[{"handle": "ceph-reef-test"}]
    )
    assert refused.result is False
    said = " ".join(refused.comment)
    assert "ceph-reef-test is not a standard repository of node pve1" in said and "ceph-tentacle-test" in said
    assert writes(requests_since(fresh_cluster, start)) == []


def test_on_pve8_a_disabled_entry_is_enabled_where_it_is_never_appended_twice(fresh_cluster):
    """stable-bookworm add_repository_handle looks entries up as product pbs, so PUT would append a
    second no-subscription entry: the write is change_repository on the existing one."""
    pve = fresh_cluster.pve
    pve.version, pve.release_version = "8.4.14", "8.4"
    pve.apt_files["pve1"] = {
        "/etc/apt/sources.list": [
            {"Types": ["deb"], "URIs": ["http://download.proxmox.com/debian/pve"], "Suites": ["bookworm"],
             "Components": ["pve-no-subscription"], "Enabled": False, "FileType": "list"},
        ],
    }  # fmt: skip
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _, log = _plan_apply_replan(fresh_cluster, ctx, name="pve1", repositories=[{"handle": "no-subscription"}])
    ((method, _, body),) = writes(log)
    assert method == "POST" and _form(body)["index"] == "0"
    assert len(pve.apt_files["pve1"]["/etc/apt/sources.list"]) == 1


def test_destroy_disables_what_the_declaration_enabled_and_proves_it_absent(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _plan_apply_replan(fresh_cluster, ctx, **DECLARED)
    start = len(pve.requests)
    gone = absent(ctx, apt.SPEC, False, "pve1-apt", name="pve1", removal="destroy")
    assert gone.result is True, gone.comment
    ((method, _, body),) = writes(requests_since(fresh_cluster, start))
    assert method == "POST" and _form(body)["enabled"] == "0"
    assert pve.apt_files["pve1"]["/etc/apt/sources.list.d/proxmox.sources"][0]["Enabled"] is False
    # What it disabled at the declaration's wish stays disabled: destroy re-enables nothing.
    assert pve.apt_files["pve1"][ENTERPRISE][0]["Enabled"] is False


def test_a_file_pve_cannot_parse_is_refused_before_any_write(fresh_cluster):
    pve = fresh_cluster.pve
    pve.apt_node("pve1")
    pve.apt_errors["pve1"] = {ENTERPRISE: "malformed entry on line 3"}
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(pve.requests)
    done = present(ctx, apt.SPEC, False, "pve1-apt", **DECLARED)
    assert done.result is False
    assert writes(requests_since(fresh_cluster, start)) == []
