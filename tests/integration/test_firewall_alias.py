"""Cluster firewall aliases against fakepve (which follows pve-firewall's Aliases.pm: names keyed in lower
case, "no such alias" as a 400, list digests checked by PUT and DELETE): create, a clean second plan,
update, case-only and real renames, refusals, malformed reads — counting the requests fakepve saw to
show that an apply writes exactly what its plan showed."""

from __future__ import annotations

from urllib.parse import parse_qs

import requests

from salt_proxmox.firewall import alias
from salt_proxmox.firewall.lifecycle import present
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple import lifecycle as simple
from tests.support.guests import (
    TARGET,
    bao_targets,
    make_context,
    requests_since,
    static_targets,
    writes,
)

ALIASES = "/cluster/firewall/aliases"


def _context(served, store=None, openbao_creds=None):
    if openbao_creds is None:
        return make_context(static_targets(served), store=store)
    targets, openbao = bao_targets(served, openbao_creds)
    return make_context(targets, openbao, store=store)


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode()).items()}


def _out_of_band(served, name: str, cidr: str, comment: str | None = None) -> None:
    """Another admin creates an alias through the API (with the provision token)."""
    token_id, secret = served.seeded.provision_token
    answer = requests.post(
        f"{served.url}/api2/json{ALIASES}",
        data={"name": name, "cidr": cidr, **({"comment": comment} if comment else {})},
        headers={"Authorization": f"PVEAPIToken={token_id}={secret}"},
        verify=served.cafile,
        timeout=10,
    )
    assert answer.status_code == 200, answer.text


def test_create_plan_apply_replan(fresh_cluster, bao_creds):
    """Each step is a run of its own, as each salt-call is."""
    store = MemoryStore()
    ctx = _context(fresh_cluster, store, bao_creds)
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, True, "lab", name="Lab_Net", cidr="10.0.0.0/24", comment="  lab  ")
    assert plan.result is None, plan.comment
    log = requests_since(fresh_cluster, start)
    # The run's listing does not hold it, so its own read proves it absent (PVE's "no such alias").
    assert [(m, p) for m, p, _ in log] == [("GET", ALIASES), ("GET", f"{ALIASES}/Lab_Net")]
    assert store.saves == 0, "a plan writes no grains"

    ctx = _context(fresh_cluster, store, bao_creds)
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, False, "lab", name="Lab_Net", cidr="10.0.0.0/24", comment="  lab  ")
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did exactly what the plan showed"
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in log] == [
        ("GET", ALIASES),
        ("GET", f"{ALIASES}/Lab_Net"),
        ("POST", ALIASES),
        ("GET", f"{ALIASES}/Lab_Net"),
    ], "the read-back after the write is the alias's own read, never the run's listing"
    assert _form(writes(log)[0][2]) == {"name": "Lab_Net", "cidr": "10.0.0.0/24", "comment": "lab"}
    assert ctx.broker.mints == {"read": 1, "provision": 1}, "read minted once per run, provision per write"

    ctx = _context(fresh_cluster, store, bao_creds)
    start = len(fresh_cluster.pve.requests)
    again = present(ctx, True, "lab", name="Lab_Net", cidr="10.0.0.0/24", comment="lab")
    assert (again.result, again.changes) == (True, {}), again.comment
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in log] == [("GET", ALIASES)], "a listed alias is judged on the listing"


def test_update_is_one_put_with_the_list_digest(fresh_cluster):
    store = MemoryStore()
    ctx = _context(fresh_cluster, store)
    assert present(ctx, False, "db", name="db", cidr="10.0.0.21/32", comment="PostgreSQL").result is True
    listed = fresh_cluster.pve.firewall_config("cluster")["aliases"]["db"]
    assert listed["cidr"] == "10.0.0.21", (
        "sent without /32, so fakepve (which keeps /32) stores PVE's spelling"
    )
    digest = requests.get(
        f"{fresh_cluster.url}/api2/json{ALIASES}",
        headers={"Authorization": "PVEAPIToken={}={}".format(*fresh_cluster.seeded.read_token)},
        verify=fresh_cluster.cafile,
        timeout=10,
    ).json()["data"][0]["digest"]

    plan = present(_context(fresh_cluster, store), True, "db", name="db", cidr="10.0.0.22", comment="")
    assert plan.changes == {
        "cidr": {"old": "10.0.0.21", "new": "10.0.0.22"},
        "comment": {"old": "PostgreSQL", "new": ""},
    }
    start = len(fresh_cluster.pve.requests)
    done = present(_context(fresh_cluster, store), False, "db", name="db", cidr="10.0.0.22", comment="")
    assert done.result is True, done.comment
    assert done.changes == plan.changes
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in log] == [
        ("GET", ALIASES),  # the run's listing, judged
        ("GET", ALIASES),  # the write guard: the list digest, read right before the PUT
        ("PUT", f"{ALIASES}/db"),
        ("GET", f"{ALIASES}/db"),
    ]
    assert _form(writes(log)[0][2]) == {"cidr": "10.0.0.22", "digest": digest}
    assert "comment" not in fresh_cluster.pve.firewall_config("cluster")["aliases"]["db"]


def test_case_only_change_is_no_change(fresh_cluster):
    ctx = _context(fresh_cluster)
    assert present(ctx, False, "web", name="web_hosts", cidr="10.0.1.0/24").result is True
    start = len(fresh_cluster.pve.requests)
    for declared in ({"name": "WEB_HOSTS"}, {"name": "Web_Hosts", "rename_from": "web_hosts"}):
        outcome = present(ctx, False, "web", cidr="10.0.1.0/24", **declared)
        assert (outcome.result, outcome.changes) == (True, {}), outcome.comment
    assert writes(requests_since(fresh_cluster, start)) == []


def test_real_rename_creates_first_then_deletes(fresh_cluster):
    store = MemoryStore()
    ctx = _context(fresh_cluster, store)
    assert present(ctx, False, "web", name="web_hosts", cidr="10.0.1.0/24", comment="web").result is True
    start = len(fresh_cluster.pve.requests)
    plan = present(
        ctx, True, "web", name="web_servers", cidr="10.0.1.0/24", comment="web", rename_from="web_hosts"
    )
    assert plan.result is None and plan.changes["renamed"] == {"old": "web_hosts", "new": "web_servers"}
    assert writes(requests_since(fresh_cluster, start)) == []

    start = len(fresh_cluster.pve.requests)
    done = present(
        ctx, False, "web", name="web_servers", cidr="10.0.1.0/24", comment="web", rename_from="web_hosts"
    )
    assert done.result is True, done.comment
    assert done.changes == plan.changes
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", ALIASES),
        ("DELETE", f"{ALIASES}/web_hosts"),
    ]
    assert set(fresh_cluster.pve.firewall_config("cluster")["aliases"]) == {"web_servers"}
    assert set(store.rows) == {row_key(TARGET, "firewall_alias", "web_servers")}
    again = present(
        ctx, True, "web", name="web_servers", cidr="10.0.1.0/24", comment="web", rename_from="web_hosts"
    )
    assert (again.result, again.changes) == (True, {})


def test_rename_onto_a_taken_name_is_refused(fresh_cluster):
    ctx = _context(fresh_cluster)
    assert present(ctx, False, "web", name="web_hosts", cidr="10.0.1.0/24").result is True
    _out_of_band(fresh_cluster, "Web_Servers", "10.9.9.9")
    start = len(fresh_cluster.pve.requests)
    outcome = present(
        ctx, False, "web", name="web_servers", cidr="10.0.1.0/24", rename_from="web_hosts", adopt=True
    )
    assert outcome.result is False and "the name is taken" in outcome.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.firewall_config("cluster")["aliases"]["web_servers"]["cidr"] == "10.9.9.9"


def test_unowned_alias_refused_unless_adopted(fresh_cluster):
    """fakepve keeps a /32 that PVE would strip; both spellings are one address here."""
    _out_of_band(fresh_cluster, "dns1", "10.0.0.53/32", "resolver")
    store = MemoryStore()
    ctx = _context(fresh_cluster, store)
    start = len(fresh_cluster.pve.requests)
    refused = present(ctx, False, "dns", name="dns1", cidr="10.0.0.53", comment="resolver")
    assert refused.result is False and "adopt: true" in refused.comment[0]
    adopted = present(ctx, False, "dns", name="dns1", cidr="10.0.0.53", comment="resolver", adopt=True)
    assert adopted.result is True and adopted.changes == {"ownership": {"old": None, "new": "owned"}}
    assert writes(requests_since(fresh_cluster, start)) == [], "adopting a matching alias writes nothing"
    assert store.rows[row_key(TARGET, "firewall_alias", "dns1")]["declared"]["cidr"] == "10.0.0.53"


def test_malformed_reads_are_errors_not_absence(fresh_cluster):
    pve = fresh_cluster.pve
    conf = pve.firewall_config("cluster")
    conf["aliases"]["broken"] = {"name": "broken", "cidr": "not-an-address"}
    conf["aliases"]["other"] = {"name": "someone_else", "cidr": "10.0.0.1"}
    pve.fail("GET", f"{ALIASES}/proxied", 200, "<html>login</html>", html=True)
    ctx = _context(fresh_cluster)
    start = len(pve.requests)
    for name in ("broken", "other", "proxied"):
        outcome = present(ctx, False, "x", name=name, cidr="10.0.0.1")
        assert outcome.result is False, outcome.comment
        assert "malformed answer" in outcome.comment[0], outcome.comment
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_failed_read_is_not_absence(fresh_cluster):
    fresh_cluster.pve.fail(
        "GET", f"{ALIASES}/web", 500, "cfs-lock 'file-firewall_cluster' error: got lock timeout"
    )
    ctx = _context(fresh_cluster)
    start = len(fresh_cluster.pve.requests)
    outcome = present(ctx, False, "x", name="web", cidr="10.0.0.1")
    assert outcome.result is False and "got lock timeout" in outcome.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []


def test_bad_input_names_the_key_and_sends_nothing(fresh_cluster):
    ctx = _context(fresh_cluster)
    start = len(fresh_cluster.pve.requests)
    outcome = present(ctx, False, "x", name="9lives", cidr="10.0.0.0/33", comment="a\nb")
    assert outcome.result is False
    assert [line.split(":")[1].strip() for line in outcome.comment[:-1]] == ["name", "cidr", "comment"]
    assert "name: '9lives'" in outcome.comment[0] and outcome.comment[-1] == "Nothing was written."
    assert requests_since(fresh_cluster, start) == [], "not even a read"


def test_absent_deletes_ours_with_the_digest_and_proves_it_gone(fresh_cluster):
    store = MemoryStore()
    ctx = _context(fresh_cluster, store)
    assert present(ctx, False, "old", name="old_net", cidr="10.7.0.0/16").result is True
    _out_of_band(fresh_cluster, "theirs", "10.8.0.0/16")
    assert simple.absent(ctx, alias.SPEC, False, "x", "destroy", name="theirs").result is False
    start = len(fresh_cluster.pve.requests)
    plan = simple.absent(ctx, alias.SPEC, True, "old", "destroy", name="old_net")
    assert plan.result is None and writes(requests_since(fresh_cluster, start)) == []
    done = simple.absent(ctx, alias.SPEC, False, "old", "destroy", name="old_net")
    assert done.result is True, done.comment
    assert [(m, p) for m, p, _ in requests_since(fresh_cluster, start)][-3:] == [
        ("GET", ALIASES),
        ("DELETE", f"{ALIASES}/old_net"),
        ("GET", f"{ALIASES}/old_net"),
    ]
    assert set(fresh_cluster.pve.firewall_config("cluster")["aliases"]) == {"theirs"}
    assert store.rows == {}
