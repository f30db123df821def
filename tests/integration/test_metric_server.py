"""External metric servers through the simple-object lifecycle, against the served fake cluster, whose metric
servers are ``tests.support.metrics.MetricServerPve`` (pve-manager ``PVE/API2/Cluster/MetricServer.pm``:
fakepve 0.5.0 stores none). A plan only reads, an apply writes what the plan showed, a second plan is
clean; the InfluxDB token is written at create and on a serial bump only and shown nowhere; a server made
by hand is exported as a declaration that plans clean with adopt."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from salt_proxmox.datacenter import metrics
from salt_proxmox.export import objects
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

TOKEN = "influx-token-0f1e2d3c"
INFLUX = {
    "name": "influx",
    "type": "influxdb",
    "server": "influx.example.org",
    "port": 8086,
    "influxdbproto": "https",
    "bucket": "pve",
    "token": TOKEN,
    "secret_serial": 1,
}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _plan_apply_replan(served, ctx, state_id, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, metrics.SPEC, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, metrics.SPEC, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, metrics.SPEC, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    for said in (plan, done, again):
        assert TOKEN not in json.dumps([said.comment, said.changes], default=str)
    return plan, done, log


def test_an_influxdb_server_is_created_its_token_kept_apart_and_rotated_by_serial(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan, _, log = _plan_apply_replan(fresh_cluster, ctx, "influx", **INFLUX)
    assert any("PVE connects to influx.example.org:8086" in line for line in plan.comment)
    (create,) = writes(log)
    assert create[:2] == ("POST", "/cluster/metrics/server/influx")
    assert _form(create[2])["token"] == TOKEN
    # InfluxDB.pm on_add_hook: the token is kept in priv/, never in status.cfg nor in a read.
    assert pve.metric_tokens["influx"] == TOKEN and "token" not in pve.metric_servers["influx"]

    # A value back to PVE's default is a delete; server and port ride along (updateSchema requires them).
    _, done, log = _plan_apply_replan(fresh_cluster, ctx, "influx", **{**INFLUX, "bucket": None})
    assert set(done.changes) == {"bucket"}
    (update,) = writes(log)
    assert _form(update[2]) == {"server": "influx.example.org", "port": "8086", "delete": "bucket"}

    # Another token under the same serial is never written (PVE never shows it, so it is never compared).
    same = present(ctx, metrics.SPEC, True, "influx", **{**INFLUX, "bucket": None, "token": "other"})
    assert same.changes == {}
    _, _, log = _plan_apply_replan(
        fresh_cluster, ctx, "influx", **{**INFLUX, "bucket": None, "token": "rotated", "secret_serial": 2}
    )
    (rotate,) = writes(log)
    assert _form(rotate[2])["token"] == "rotated" and pve.metric_tokens["influx"] == "rotated"


def test_pve_s_defaults_held_or_not_are_no_drift(fresh_cluster):
    """A server made by hand with PVE's defaults written out, declared without them (and the reverse)."""
    fresh_cluster.pve.add_metric_server("carbon", "graphite", server="192.0.2.40", mtu=1500, proto="udp")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {"type": "graphite", "server": "192.0.2.40", "path": "proxmox", "timeout": 1, "adopt": True}
    plan = present(ctx, metrics.SPEC, True, "carbon", name="carbon", **declared)
    assert set(plan.changes) <= {"ownership"}, plan.changes


def test_a_type_change_and_opentelemetry_on_pve_8_are_refused_at_plan(fresh_cluster):
    pve = fresh_cluster.pve
    pve.add_metric_server("carbon", "graphite", server="192.0.2.40", port=2003)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(pve.requests)
    other = present(
        ctx, metrics.SPEC, True, "carbon", name="carbon", type="influxdb", server="192.0.2.40", port=2003,
        adopt=True,
    )  # fmt: skip
    assert other.result is False and "PVE cannot change its type" in " ".join(other.comment)
    pve.version, pve.release_version = "8.4.14", "8.4"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    otel = present(ctx, metrics.SPEC, True, "otel", name="otel", type="opentelemetry", server="192.0.2.41")
    assert otel.result is False and "runs PVE 8.4" in " ".join(otel.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_hand_made_server_exports_as_a_declaration_that_plans_clean_with_adopt(fresh_cluster):
    fresh_cluster.pve.add_metric_server(
        "influx", "influxdb", token=TOKEN, server="influx.example.org", port=8086, influxdbproto="http",
        organization="lab", mtu=1500,
    )  # fmt: skip
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    found = objects.export(ctx, metrics.SPEC)
    (exported,) = found.objects
    assert exported.declaration == {
        "name": "influx",
        "type": "influxdb",
        "server": "influx.example.org",
        "port": 8086,
        "influxdbproto": "http",
        "organization": "lab",
        "adopt": True,
    }
    assert exported.secrets == ("token",), "left out, noted with its pillar path by export.pillar"
    assert TOKEN not in json.dumps([exported.declaration, found.notes])
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, metrics.SPEC, True, "influx", **exported.declaration)
    assert set(plan.changes) <= {"ownership"}, plan.changes
    done = present(ctx, metrics.SPEC, False, "influx", **exported.declaration)
    assert done.result is True and writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.metric_tokens["influx"] == TOKEN, "adopting never touches the token"


def test_a_server_declared_with_its_token_and_serial_is_destroyed_from_its_row(fresh_cluster):
    """``removal: destroy`` re-reads the declaration the ownership row recorded, which never holds the
    token: its ``secret_serial`` is compared with the row (``ObjectSpec.recorded``), so the row's
    declaration without the token is still one the family can check before the delete."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _plan_apply_replan(fresh_cluster, ctx, "influx", **INFLUX)
    plan = absent(ctx, metrics.SPEC, True, "influx", "destroy", name="influx")
    assert plan.result is None and plan.changes == {
        "deleted": {"old": plan.changes["deleted"]["old"], "new": None}
    }
    assert any("would be deleted" in line for line in plan.comment), plan.comment
    gone = absent(ctx, metrics.SPEC, False, "influx", "destroy", name="influx")
    assert gone.result is True, gone.comment
    assert "influx" not in fresh_cluster.pve.metric_servers
    assert TOKEN not in json.dumps([plan.comment, gone.comment], default=str)
