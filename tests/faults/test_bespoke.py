"""Faults a table row cannot express: what the next run does after an uncertain write, a token revoked
between the plan and the apply of one run, and the text of the exceptions themselves."""

from __future__ import annotations

import traceback

import pytest

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.firewall import ipset
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import CREATING, OWNED
from salt_proxmox.ownership.stores import MemoryStore
from tests.faults.harness import Run, install_hooks, leaks, pve_log, with_lease_ids, write_lines
from tests.faults.matrix import CT160, OWNED_160, ours_160
from tests.support.cluster import PROVISION_TOKEN_ID, READ_TOKEN_ID, ServedCluster
from tests.support.guests import TARGET, bao_targets, declaration, make_context, static_targets

ROW_150 = f"{TARGET}/lxc/150"


def _run(cluster: ServedCluster, store: MemoryStore) -> Run:
    return Run(cluster=cluster, store=store, targets=static_targets(cluster))


def test_an_uncertain_create_is_finished_by_the_next_run(fresh_cluster: ServedCluster) -> None:
    """pve1 goes offline after the POST: the create is uncertain and the creating row stays. When the
    node is back, the next run finds the guest, matches it against the row and records it as ours —
    with no second POST."""
    store = MemoryStore()
    run = _run(fresh_cluster, store)
    run.before("GET", "/status", lambda r: r.pve.set_node_offline("pve1"))
    ctx = make_context(run.targets, store=store)
    install_hooks(ctx, run)
    first = guest_lifecycle.present(ctx, LXC, "web", False, **declaration())
    assert first.result is False and "could not be read" in "\n".join(first.comment)
    assert store.rows[ROW_150]["phase"] == CREATING

    fresh_cluster.pve.set_node_offline("pve1", offline=False)
    start = len(fresh_cluster.pve.requests)
    second = guest_lifecycle.present(
        make_context(run.targets, store=store), LXC, "web", False, **declaration()
    )
    assert second.result is True, second.comment
    assert "interrupted create" in "\n".join(second.comment)
    assert write_lines(pve_log(run, start)) == []
    assert store.rows[ROW_150]["phase"] == OWNED


def test_an_uncertain_destroy_is_settled_by_the_next_run(fresh_cluster: ServedCluster) -> None:
    """The destroy's status cannot be read: the row stays. The next run proves the guest absent and
    forgets the row, sending no second DELETE."""
    store = MemoryStore(OWNED_160)
    run = _run(fresh_cluster, store)
    ours_160(run)
    fresh_cluster.pve.fail("GET", "/status", status=500, message="proxy timeout", times=1)
    removal = {"vmid": CT160["vmid"], "node": "pve1", "removal": "destroy"}
    first = guest_lifecycle.absent(make_context(run.targets, store=store), LXC, "old", False, **removal)
    assert first.result is False and "could not be read" in "\n".join(first.comment)
    assert f"{TARGET}/lxc/160" in store.rows

    start = len(fresh_cluster.pve.requests)
    second = guest_lifecycle.absent(make_context(run.targets, store=store), LXC, "old", False, **removal)
    assert second.result is True, second.comment
    assert "already absent" in "\n".join(second.comment)
    assert write_lines(pve_log(run, start)) == [] and store.rows == {}


def test_a_failed_create_leaves_no_row_to_take_over_a_stranger(fresh_cluster: ServedCluster) -> None:
    """A create whose task ends in TASK ERROR leaves no creating row. Had it left one, a guest somebody
    else later creates at that vmid with the same keys would be recorded as ours without adopt."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    failed = guest_lifecycle.present(
        ctx, LXC, "web", False, **declaration(ostemplate="local:vztmpl/missing-13.tar.zst")
    )
    assert failed.result is False and store.rows == {}

    # Somebody creates CT 150 by hand, as the declaration describes it.
    assert guest_lifecycle.present(
        make_context(static_targets(fresh_cluster)), LXC, "theirs", False, **declaration()
    ).result
    again = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **declaration()
    )
    assert again.result is False and "this minion did not create it" in "\n".join(again.comment)
    assert store.rows == {}


def test_a_read_token_revoked_between_plan_and_apply_stops_the_apply(fresh_cluster: ServedCluster) -> None:
    """One run, one cached read credential: the plan succeeds, the token is revoked, and the apply that
    reuses it fails on PVE's 401 before anything is written."""
    cache: dict = {}
    store = MemoryStore()
    targets = static_targets(fresh_cluster)
    plan = guest_lifecycle.present(
        make_context(targets, cache=cache, store=store), LXC, "web", True, **declaration()
    )
    assert plan.result is None
    del fresh_cluster.pve.apitokens[READ_TOKEN_ID]
    start = len(fresh_cluster.pve.requests)
    apply = guest_lifecycle.present(
        make_context(targets, cache=cache, store=store), LXC, "web", False, **declaration()
    )
    comment = "\n".join(apply.comment)
    assert apply.result is False and "HTTP 401" in comment and "issue a new token" in comment
    assert write_lines(pve_log(_run(fresh_cluster, store), start)) == [] and store.rows == {}


@pytest.mark.parametrize("revoked", [READ_TOKEN_ID, PROVISION_TOKEN_ID])
def test_exception_texts_carry_no_secret(fresh_cluster, bao_creds, monkeypatch, revoked: str) -> None:
    """The exceptions themselves — their str, repr and traceback — and the credentials the broker hands
    out name no secret, OpenBao token or lease id, whichever call fails."""
    with_lease_ids(monkeypatch, "lease-canary-7f3a")
    targets, bao = bao_targets(fresh_cluster, bao_creds)
    cache: dict = {}
    ctx = make_context(targets, bao, cache=cache)
    secrets = [
        fresh_cluster.seeded.read_token[1],
        fresh_cluster.seeded.provision_token[1],
        bao_creds["token"],
        "lease-canary-7f3a",
    ]
    credentials = [ctx.broker.read(), ctx.broker.provision()]
    del fresh_cluster.pve.apitokens[revoked]
    texts = {"credentials": repr(credentials) + str(credentials), "cache": repr(cache)}
    calls = {
        READ_TOKEN_ID: lambda: guest_lifecycle.read_live(ctx, LXC, "pve1", 150),
        PROVISION_TOKEN_ID: lambda: ctx.task("DELETE", "nodes/pve1/lxc/120", "pve1", "destroy CT 120"),
    }
    with pytest.raises(SaltProxmoxError) as caught:
        calls[revoked]()
    exc = caught.value
    texts["exception"] = f"{exc}\n{exc!r}\n{''.join(traceback.format_exception(exc))}"
    assert "HTTP 401" in str(exc)
    assert leaks(texts, secrets) == []


def test_an_ip_set_whose_entry_answer_was_lost_is_finished_by_the_next_run(
    fresh_cluster: ServedCluster,
) -> None:
    """The answer to an IP set entry's POST is lost after PVE stored it (matrix row
    ``firewall-ipset-entry-answer-lost``): the row stays ``creating``. The next plan finds the set as
    declared and would only record it as ours; its apply sends nothing and the plan after is clean."""
    store = MemoryStore()
    run = _run(fresh_cluster, store)
    run.lose_answer("POST", "/cluster/firewall/ipset/admins", "504")
    ctx = make_context(run.targets, store=store)
    install_hooks(ctx, run)
    declared = {"name": "admins", "cidrs": ["192.0.2.0/24"]}
    first = ipset.present(ctx, False, "admins", **declared)
    assert first.result is False and "may or may not have acted" in "\n".join(first.comment)
    row = f"{TARGET}/firewall_ipset/admins"
    assert store.rows[row]["phase"] == CREATING

    start = len(fresh_cluster.pve.requests)
    plan = ipset.present(make_context(run.targets, store=store), True, "admins", **declared)
    assert plan.result is None and set(plan.changes) == {"ownership"}, plan.comment
    done = ipset.present(make_context(run.targets, store=store), False, "admins", **declared)
    assert done.result is True, done.comment
    assert store.rows[row]["phase"] == OWNED
    again = ipset.present(make_context(run.targets, store=store), True, "admins", **declared)
    assert again.result is True and again.changes == {}, again.comment
    assert write_lines(pve_log(run, start)) == []
