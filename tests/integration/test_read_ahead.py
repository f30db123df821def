"""Reads ahead against a real fake PVE: the first container state of a run reads the configs of
every container the run declares, and each state then judges the answer read for it exactly as if
it had sent the GET itself (salt_proxmox.pve.readahead, docs/design.md §5).

Each run below is built as the ``proxmox`` execution module builds it: one context per state over
the run's cache (Salt's ``__context__``), the run's declarations handed over as Salt's
``__lowstate__`` chunks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from salt_proxmox.firewall import alias
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.run import config as run_config
from salt_proxmox.simple import acl, pool, role
from salt_proxmox.simple import lifecycle as simple
from tests.support.cluster import READ_TOKEN_ID
from tests.support.guests import (
    TARGET,
    bao_targets,
    count_openbao_requests,
    declaration,
    make_context,
    requests_since,
    static_targets,
    writes,
)


def chunk(vmid: int, **over: Any) -> dict[str, Any]:
    """The ``__lowstate__`` chunk of ``ct<vmid>``, as Salt 3008 builds it (``compile_high_data``)."""
    return {
        "__id__": f"ct{vmid}",
        "name": f"ct{vmid}",
        "state": "proxmox_lxc",
        "fun": "present",
        "__sls__": "proxmox",
        "__env__": "base",
        "order": 10000,
        **declaration(vmid=vmid, **over),
    }


def _lxc_ahead(ctx, declarations):
    return guest_lifecycle.read_ahead(ctx, LXC, declarations)


class Run:
    """One Salt run: its cache, its chunks, and a context per state as ``_modules/proxmox.py`` makes."""

    def __init__(self, targets: dict, store: MemoryStore, chunks: list[dict], openbao: dict | None = None):
        self.targets, self.store, self.chunks, self.openbao = targets, store, chunks, openbao
        self.cache: dict = {}
        self.sent_ahead = 0

    def context(self):
        return make_context(self.targets, self.openbao, cache=self.cache, store=self.store)

    def state(self, vmid: int, test: bool, ahead: bool = True, **over: Any):
        ctx = self.context()
        low = chunk(vmid, **over)
        kwargs = {"__lowstate__": self.chunks, "__low__": low, "__instance_id__": id(self)}
        # Every state enters its run (_modules/proxmox.py _state); only the read ahead is switched.
        run_config.enter_run(ctx, kwargs, self.cache)
        if ahead:
            self.sent_ahead += run_config.read_ahead(ctx, kwargs, LXC.state, TARGET, _lxc_ahead, self.cache)
        return guest_lifecycle.present(ctx, LXC, f"ct{vmid}", test, **declaration(vmid=vmid, **over))


def _own(cluster, store: MemoryStore, vmids: list[int]) -> None:
    ctx = make_context(static_targets(cluster), store=store)
    for vmid in vmids:
        outcome = guest_lifecycle.present(ctx, LXC, f"ct{vmid}", False, **declaration(vmid=vmid))
        assert outcome.result is True, outcome.comment


def test_plan_and_no_drift_apply_read_each_config_once(fresh_cluster, bao_creds):
    """N owned containers: the plan and the no-drift apply each send N config GETs (not 2N), all of
    them before the first state returns, besides them only the run's one tag-style read, no write;
    one read mint, no provision."""
    targets, bao = bao_targets(fresh_cluster, bao_creds)
    store = MemoryStore()
    vmids = [150, 151, 152, 153, 154]
    _own(fresh_cluster, store, vmids)
    for test in (True, False):
        run = Run(targets, store, [chunk(vmid) for vmid in vmids], bao)
        bao_seen = count_openbao_requests(run.context())
        start = len(fresh_cluster.pve.requests)
        for index, vmid in enumerate(vmids):
            outcome = run.state(vmid, test)
            assert outcome.result is True and outcome.changes == {}, outcome.comment
            if index == 0:
                first = [p for _, p, _ in requests_since(fresh_cluster, start) if p.endswith("/pending")]
                assert len(first) == len(vmids), "all read by the first state"
        log = requests_since(fresh_cluster, start)
        config_gets = sorted(p for m, p, _ in log if m == "GET" and p.endswith("/pending"))
        assert config_gets == sorted(f"/nodes/pve1/lxc/{vmid}/pending" for vmid in vmids), log
        # Besides them, only what a run reads once: the backup jobs for the run's coverage note
        # (backup.coverage), the datacenter's tag style (pve.facts).
        assert [p for _, p, _ in log if not p.endswith("/pending")] == ["/cluster/backup", "/cluster/options"]
        assert writes(log) == []
        assert run.sent_ahead == len(vmids), "the first state read every config ahead, later ones none"
        assert bao_seen == ["proxmox/creds/read"]
        assert run.cache[f"salt_proxmox.mints/{TARGET}"] == {"read": 1, "provision": 0}


def _faults(pve, vmid: int):
    return {
        # pve-container src/PVE/API2/LXC/Config.pm vm_config: VM.Audit on /vms/{vmid} first.
        "403": lambda: pve.fail(
            "GET", f"/lxc/{vmid}/pending", 403, "Permission check failed (/vms/150, VM.Audit)"
        ),
        "500": lambda: pve.fail("GET", f"/lxc/{vmid}/pending", 500, "got timeout", times=1),
        "malformed": lambda: pve.fail(
            "GET", f"/lxc/{vmid}/pending", 200, "<html><body>proxy</body></html>", html=True, times=1
        ),
        "missing": lambda: None,
    }


@pytest.mark.parametrize("fault", ["403", "500", "malformed", "missing"])
@pytest.mark.parametrize("test", [True, False], ids=["plan", "apply"])
def test_an_answer_read_ahead_is_judged_as_one_read_by_the_state(fresh_cluster, fault, test):
    """A 403, a generic 500, a malformed 200 and PVE's missing-config answer, read ahead, give the
    state exactly the return, and PVE exactly the requests, that the same answer read by the state
    itself gives. A missing config still needs the guest index read with the same credential before
    it counts as absent (docs/design.md §6 Read); 152 is never created here, so it is missing."""
    store = MemoryStore()
    _own(fresh_cluster, store, [150, 151])
    pve = fresh_cluster.pve
    broken = 152 if fault == "missing" else 150
    vmids = [150, 151, 152] if fault == "missing" else [150, 151]
    results = []
    for ahead in (False, True):
        run = Run(static_targets(fresh_cluster), MemoryStore(store.rows), [chunk(v) for v in vmids])
        _faults(pve, broken)[fault]()
        start = len(pve.requests)
        returns = [run.state(vmid, test, ahead=ahead).salt_return(f"ct{vmid}") for vmid in vmids]
        pve.failures.clear()
        if pve.ct(152) is not None:  # the apply created the missing one: undo it for the next run
            pve.cts.remove(pve.ct(152))
        # A create's task has its own UPID in each run; the rest of the path is what is compared.
        log = [(m, re.sub(r"UPID:[^/]+", "UPID", p)) for m, p, _ in requests_since(fresh_cluster, start)]
        results.append((returns, log, run.sent_ahead))
    (plain, plain_log, _), (ahead, ahead_log, sent) = results
    assert sent == len(vmids)
    assert ahead == plain, "the read ahead changes no state's return"
    broken_return = ahead[vmids.index(broken)]
    if fault == "missing":
        assert broken_return["result"] is (None if test else True), broken_return
        assert ("GET", "/cluster/resources") in ahead_log, "absence is still proven by the guest index"
    else:
        assert broken_return["result"] is False, broken_return
        others = [r for r in ahead if r is not broken_return]
        assert all(r["result"] is True for r in others), "one state's error is not the run's"
    assert sorted(ahead_log) == sorted(plain_log), "the same requests, sent earlier"


def test_apply_writes_with_the_digest_of_the_read_ahead_and_reads_back(fresh_cluster):
    """A drifted container: the PUT carries the digest of the config read ahead (the read the apply
    judged), and the read-back after the write is a fresh GET, not the answer read ahead."""
    store = MemoryStore()
    _own(fresh_cluster, store, [150, 151])
    pve = fresh_cluster.pve
    pve.ct(151).config["memory"] = 2048
    ahead_digest = _digest_of(fresh_cluster, 151)
    run = Run(static_targets(fresh_cluster), store, [chunk(150), chunk(151)])
    start = len(pve.requests)
    assert run.state(150, False).result is True
    outcome = run.state(151, False)
    assert outcome.result is True and "memory" in outcome.changes, outcome.comment
    log = requests_since(fresh_cluster, start)
    puts = [body for m, p, body in log if m == "PUT"]
    assert len(puts) == 1 and f"digest={ahead_digest}" in str(puts[0])
    gets_151 = [p for m, p, _ in log if m == "GET" and p == "/nodes/pve1/lxc/151/pending"]
    assert len(gets_151) == 2, "one read ahead, one read-back after the write"


def test_a_config_changed_after_the_read_ahead_is_not_overwritten(fresh_cluster):
    """Somebody edits a container between the read ahead and its state: PVE refuses the PUT (its
    digest is the one read ahead, now stale) and nothing is overwritten."""
    store = MemoryStore()
    _own(fresh_cluster, store, [150, 151])
    pve = fresh_cluster.pve
    pve.ct(151).config["memory"] = 2048
    run = Run(static_targets(fresh_cluster), store, [chunk(150), chunk(151)])
    assert run.state(150, False).result is True  # reads 150 and 151 ahead
    pve.ct(151).config["cores"] = 4  # the edit; fakepve's digest follows the config
    outcome = run.state(151, False)
    assert outcome.result is False, outcome.comment
    assert "modified configuration" in " ".join(outcome.comment)
    assert pve.ct(151).config["cores"] == 4 and pve.ct(151).config["memory"] == 2048


def test_no_read_ahead_outside_a_state_run_or_without_a_credential(fresh_cluster):
    """An execution-module call has no run: nothing is read ahead. A run whose read credential cannot
    be had reads nothing ahead either; each state meets that failure itself."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert run_config.enter_run(ctx, {}, {}) is None
    assert run_config.read_ahead(ctx, {}, LXC.state, TARGET, _lxc_ahead, {}) == 0
    targets = static_targets(fresh_cluster)
    targets[TARGET]["credentials"] = {"source": "openbao", "path": "proxmox/creds"}
    start = len(fresh_cluster.pve.requests)
    run = Run(targets, store, [chunk(150)], openbao=None)
    outcome = run.state(150, True)
    assert outcome.result is False and run.sent_ahead == 0
    assert requests_since(fresh_cluster, start) == []


def _digest_of(cluster, vmid: int) -> str:
    """The digest PVE hands out for ``vmid``'s config now (read with the seeded read token)."""
    ctx = make_context(static_targets(cluster))
    rows = ctx.client.request("GET", guest_lifecycle.config_path(LXC, "pve1", vmid), ctx.broker.read())
    return GuestConfig.from_rows(rows).digest


# ------------------------------------------------------------------- families behind one listing

FAMILIES = {
    "pool": (pool.SPEC, [{"name": f"team{i}", "comment": f"Team {i}"} for i in range(3)]),
    "role": (role.SPEC, [{"name": f"Ops{i}", "privs": ["VM.Audit", "Sys.Audit"]} for i in range(3)]),
    "firewall_alias": (
        alias.SPEC,
        [{"name": f"net{i}", "cidr": f"10.0.{i}.0/24", "comment": f"net {i}"} for i in range(3)],
    ),
    "acl": (
        acl.SPEC,
        [{"path": f"/vms/{100 + i}", "role": "PVEAuditor", "token": READ_TOKEN_ID} for i in range(3)],
    ),
}
LISTINGS = {
    "pool": "/pools",
    "role": "/access/roles",
    "firewall_alias": "/cluster/firewall/aliases",
    "acl": "/access/acl",
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_one_listing_per_run_serves_every_object_of_a_family(fresh_cluster, family):
    """Three objects of one family, all ours and as declared: a plan and a no-drift apply each read
    the family's listing once, and no object on its own; nothing is written. A run that writes
    reads the listing again after the write (the next object may have changed with it)."""
    spec, objects = FAMILIES[family]
    store = MemoryStore()
    targets = static_targets(fresh_cluster)
    for index, declared in enumerate(objects):
        made = simple.present(make_context(targets, store=store), spec, False, f"s{index}", **declared)
        assert made.result is True, made.comment
    for test in (True, False):
        cache: dict = {}
        start = len(fresh_cluster.pve.requests)
        for index, declared in enumerate(objects):
            ctx = make_context(targets, cache=cache, store=store)
            outcome = simple.present(ctx, spec, test, f"s{index}", **declared)
            assert (outcome.result, outcome.changes) == (True, {}), outcome.comment
        log = [(m, p) for m, p, _ in requests_since(fresh_cluster, start)]
        assert log == [("GET", LISTINGS[family])], log

    # An apply that writes: the second object drifted. Its write drops the run's listing, the
    # read-back is the object's own read, and the third object is judged on a fresh listing.
    drifted = dict(objects[1])
    key = {"pool": "comment", "role": "privs", "firewall_alias": "comment", "acl": "propagate"}[family]
    drifted[key] = {"comment": "other", "privs": ["VM.Audit"], "propagate": False}[key]
    cache = {}
    start = len(fresh_cluster.pve.requests)
    for index, declared in enumerate([objects[0], drifted, objects[2]]):
        ctx = make_context(targets, cache=cache, store=store)
        outcome = simple.present(ctx, spec, False, f"s{index}", **declared)
        assert outcome.result is True, outcome.comment
        assert bool(outcome.changes) == (index == 1), outcome.changes
    log = [(m, p) for m, p, _ in requests_since(fresh_cluster, start)]
    listing_reads = [i for i, (m, p) in enumerate(log) if (m, p) == ("GET", LISTINGS[family])]
    write = next(i for i, (m, _) in enumerate(log) if m != "GET")
    assert len([entry for entry in log if entry[0] != "GET"]) == 1
    assert listing_reads[0] == 0 and any(i > write for i in listing_reads), log


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_failed_listing_is_the_error_of_the_state_that_read_it(fresh_cluster, family):
    """The listing fails once (a cfs lock timeout): the state that read it fails with PVE's words,
    as it would have on its own read, and writes nothing; the next state reads the listing again
    and succeeds. A failure is never kept for the rest of the run."""
    spec, objects = FAMILIES[family]
    store = MemoryStore()
    targets = static_targets(fresh_cluster)
    for index, declared in enumerate(objects[:2]):
        assert simple.present(make_context(targets, store=store), spec, False, f"s{index}", **declared).result
    timeout = "cfs-lock 'file-user_cfg' error: got lock timeout"
    fresh_cluster.pve.fail("GET", LISTINGS[family], 500, timeout, times=1)
    cache: dict = {}
    start = len(fresh_cluster.pve.requests)
    first = simple.present(make_context(targets, cache=cache, store=store), spec, False, "s0", **objects[0])
    second = simple.present(make_context(targets, cache=cache, store=store), spec, False, "s1", **objects[1])
    assert first.result is False and "got lock timeout" in " ".join(first.comment), first.comment
    assert (second.result, second.changes) == (True, {}), second.comment
    assert writes(requests_since(fresh_cluster, start)) == []
