"""Cluster options through the simple-object lifecycle, against the served fake cluster, whose
``datacenter.cfg`` is ``tests.support.datacenter.DatacenterPve`` (pve-manager ``PVE/API2/Cluster.pm``
``get_options``/``set_options`` over pve-cluster ``DataCenterConfig.pm``: fakepve 0.5.0 stores nothing).
A plan only reads, an apply writes what the plan showed, a second plan is clean; a ``tag-style`` the run
plans or writes is the one its later guest states compare tags with; options set by hand export as a
declaration that plans clean with adopt; ``http_proxy``'s password is shown nowhere."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from salt_proxmox.datacenter import options
from salt_proxmox.export import objects
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve import facts
from salt_proxmox.pve.facts import TagStyle
from salt_proxmox.simple.lifecycle import present
from tests.support.guests import make_context, requests_since, static_targets, writes

PROXY = "http://squid:pr0xy-pass-4c1d@proxy.example.org:3128/"
DECLARED = {
    "name": "datacenter",
    "keyboard": "en-us",
    "migration": {"type": "insecure", "network": "10.10.0.0/24"},
    "next-id": "lower=1000,upper=9999",
    "description": "Lab cluster\nrack 4",
    "http_proxy": PROXY,
}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _plan_apply_replan(served, ctx, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, options.SPEC, True, "datacenter", **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, options.SPEC, False, "datacenter", **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, options.SPEC, True, "datacenter", **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    for said in (plan, done, again):
        assert "pr0xy-pass" not in json.dumps([said.comment, said.changes], default=str)
    return plan, done, log


def test_options_are_written_then_plan_clean_and_a_cleared_key_is_deleted(fresh_cluster):
    pve = fresh_cluster.pve
    pve.datacenter["language"] = "de"  # set by hand, not declared: never compared, never touched
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, **DECLARED)
    (put,) = writes(log)
    assert put[:2] == ("PUT", "/cluster/options") and _form(put[2])["http_proxy"] == PROXY
    assert pve.datacenter["migration"] == {"type": "insecure", "network": "10.10.0.0/24"}
    assert pve.datacenter["language"] == "de"
    # Back to PVE's default is delete= (set_options deletes after it sets).
    cleared = {**DECLARED, "migration": "type=secure", "next-id": None}
    _, done, log = _plan_apply_replan(fresh_cluster, ctx, **cleared)
    assert set(done.changes) == {"migration", "next-id"}
    (put,) = writes(log)
    assert _form(put[2]) == {"delete": "migration,next-id"}
    assert "migration" not in pve.datacenter and pve.datacenter["language"] == "de"


def test_the_tag_style_a_run_plans_or_writes_is_the_one_its_later_guests_compare_with(fresh_cluster):
    style = {"name": "datacenter", "tag-style": {"ordering": "config", "case-sensitive": 1}}
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    assert facts.tag_style(ctx) == TagStyle()  # read once and kept for the run
    plan = present(ctx, options.SPEC, True, "datacenter", **style)
    assert plan.result is None and any("declared tag-style" in line for line in plan.comment)
    assert facts.tag_style(ctx) == TagStyle(case_sensitive=True, ordered=True), "planned guests see it"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    assert facts.tag_style(ctx) == TagStyle()
    done = present(ctx, options.SPEC, False, "datacenter", **style)
    assert done.result is True, done.comment
    start = len(fresh_cluster.pve.requests)
    assert facts.tag_style(ctx) == TagStyle(case_sensitive=True, ordered=True)
    assert [r for r in requests_since(fresh_cluster, start) if r[1] == "/cluster/options"], "read again"


def test_hand_made_options_export_as_a_declaration_that_plans_clean_with_adopt(fresh_cluster):
    pve = fresh_cluster.pve
    pve.datacenter.update(
        {
            "keyboard": "de",
            "crs": {"ha": "static"},
            "registered-tags": ["prod", "db"],
            "mac_prefix": "02:00:00",
            "description": "Made by hand\n",
            "http_proxy": PROXY,
        }
    )
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    found = objects.export(ctx, options.SPEC)
    (exported,) = found.objects
    assert exported.declaration == {
        "name": "cluster",
        "keyboard": "de",
        "crs": "ha=static",
        "registered-tags": "db;prod",
        "mac_prefix": "02:00:00",
        "description": "Made by hand",
        "adopt": True,
    }
    assert exported.secrets == ("http_proxy",), "left out, noted with its pillar path by export.pillar"
    assert "pr0xy-pass" not in json.dumps([exported.declaration, found.notes])
    start = len(pve.requests)
    plan = present(ctx, options.SPEC, True, "datacenter", **exported.declaration)
    assert set(plan.changes) <= {"ownership"}, plan.changes
    done = present(ctx, options.SPEC, False, "datacenter", **exported.declaration)
    assert done.result is True and writes(requests_since(fresh_cluster, start)) == []


def test_a_key_pve_8_lacks_is_refused_at_plan(fresh_cluster):
    pve = fresh_cluster.pve
    pve.version, pve.release_version = "8.4.14", "8.4"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(pve.requests)
    refused = present(ctx, options.SPEC, True, "datacenter", name="datacenter", replication="insecure")
    assert refused.result is False and "runs PVE 8.4" in " ".join(refused.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
