"""The fault matrix, driven from ``tests/faults/matrix.py``: one parametrized test per scenario, run
in-process through the library or through a real ``salt-call``, and a check that
``docs/reliability.md`` is the table's current rendering."""

from __future__ import annotations

import secrets
import traceback
from pathlib import Path

import pytest

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.firewall import ipset as firewall_ipset
from salt_proxmox.firewall import options as firewall_options
from salt_proxmox.firewall import rules as firewall_rules
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.network.apply import applied as network_applied
from salt_proxmox.network.apply import present as network_present
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.stores import ROWS_FILE, MemoryStore
from salt_proxmox.pbs import datastore as pbs_datastore
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.run.config import refused_return
from salt_proxmox.sdn import objects
from salt_proxmox.sdn.apply import applied as sdn_applied
from salt_proxmox.simple import lifecycle as simple
from salt_proxmox.simple.lifecycle import present as simple_present
from tests.faults import pbs_harness
from tests.faults.harness import (
    Run,
    debug_log,
    disagreements,
    dump,
    forbidden_writes,
    guests,
    install_hooks,
    leaks,
    pve_log,
    senders_of,
    with_lease_ids,
    write_lines,
)
from tests.faults.matrix import SCENARIOS, Scenario, markdown
from tests.faults.pbs_harness import PBS_TARGET, PbsRun
from tests.support.cluster import ServedCluster
from tests.support.guests import TARGET, bao_targets, make_context, static_targets
from tests.support.openbao import CREDS_PATH, creds_token, publish_cluster
from tests.support.pbs import ServedPbs, pbs_targets, requests_of
from tests.support.saltrun import REPO, salt_call, state_rows, write_minion_config

#: The state each ``Scenario.state`` runs: ``(ctx, name, test, **declaration) -> Outcome``.
STATES = {
    "present": lambda ctx, state_id, test, /, **kw: guest_lifecycle.present(ctx, LXC, state_id, test, **kw),
    "absent": lambda ctx, state_id, test, /, **kw: guest_lifecycle.absent(ctx, LXC, state_id, test, **kw),
    "network_applied": lambda ctx, name, test, **kw: network_applied(ctx, test, name, **kw),
    "sdn_applied": lambda ctx, name, test, **kw: _sdn_run(ctx, name, test, **kw),
    # Positional-only: a VM declaration holds its own ``name``.
    "qemu_present": lambda ctx, state_id, test, /, **kw: guest_lifecycle.present(
        ctx, QEMU, state_id, test, **kw
    ),
    "qemu_absent": lambda ctx, state_id, test, /, **kw: guest_lifecycle.absent(
        ctx, QEMU, state_id, test, **kw
    ),
    "firewall_rules": lambda ctx, state_id, test, /, **kw: firewall_rules.present(ctx, test, state_id, **kw),
    "firewall_ipset": lambda ctx, state_id, test, /, **kw: firewall_ipset.present(ctx, test, state_id, **kw),
    "firewall_options": lambda ctx, state_id, test, /, **kw: simple.present(
        ctx, firewall_options.SPEC, test, state_id, **kw
    ),
}

#: The PBS states a ``pbs`` row runs, on a PBS context (``tests.faults.pbs_matrix``).
PBS_STATES = {
    "pbs_present": lambda ctx, state_id, test, /, **kw: simple_present(
        ctx, pbs_datastore.SPEC, test, state_id, **kw
    ),
    "pbs_absent": lambda ctx, state_id, test, /, **kw: pbs_datastore.absent(ctx, test, state_id, **kw),
}

#: A comment longer than this echoes too much input (the longest real ones name two UPIDs).
COMMENT_LIMIT = 4000

#: Every row of the table; the salt-call ones are marked functional, as the other salt-call tests are.
ROWS = [
    pytest.param(s, id=s.id, marks=[pytest.mark.functional] if s.via == "salt-call" else [])
    for s in SCENARIOS
]


def _world(cluster: ServedCluster, scenario: Scenario, request: pytest.FixtureRequest, monkeypatch) -> Run:
    """The scenario's Run: its store, targets and OpenBao block, and every secret in play."""
    seeded = cluster.seeded
    run = Run(cluster=cluster, store=MemoryStore(scenario.seed_rows), targets=static_targets(cluster))
    run.secrets += [seeded.read_token[1], seeded.provision_token[1]]
    if scenario.creds == "openbao":
        bao = request.getfixturevalue("openbao")
        root = bao.client()
        publish_cluster(root, seeded.read_token, seeded.provision_token)
        token = creds_token(root, ttl="10m")
        run.targets, run.openbao = bao_targets(cluster, {"url": bao.url, "token": token, "path": CREDS_PATH})
        run.bao_root = root
        run.secrets += [token, bao.root_token]
        canary = f"lease-{secrets.token_hex(8)}"
        with_lease_ids(monkeypatch, canary)
        run.secrets.append(canary)
    elif scenario.creds == "sealed":
        sealed = request.getfixturevalue("sealed_openbao")
        run.targets, run.openbao = bao_targets(cluster, sealed)
        run.secrets += list(sealed["secrets"])
    return run


def _check_common(
    scenario: Scenario,
    run,
    before,
    log,
    seeded,
    result,
    comment: str,
    forbidden=forbidden_writes,
    disagree=disagreements,
    senders=(),
) -> None:
    """The promises of every row: result, comment, exact writes, rows, no forbidden write, agreement
    (``forbidden`` and ``disagree``: the server's own checks, a PVE cluster's unless told; ``senders``:
    who sent each request of ``log``, so a write through the root lane says so)."""
    assert result is scenario.result, comment
    for fragment in scenario.comment:
        assert fragment in comment, f"{fragment!r} not in the comment:\n{comment}"
    assert len(comment) <= COMMENT_LIMIT, f"the comment is {len(comment)} characters long"
    assert write_lines(log, senders) == list(scenario.writes), comment
    for path in scenario.never:
        assert not [p for _, p, _ in log if p.endswith(path)], f"{path} was requested"
    phases = {key: row.get("phase") for key, row in run.store.rows.items() if isinstance(row, dict)}
    assert phases == dict(scenario.rows), comment
    assert forbidden(run, before, log) == []
    problems = disagree(run, before, log, dict(seeded))
    if scenario.uncertain:
        problems = [p for p in problems if "is owned but" not in p]
    assert problems == [], comment


@pytest.mark.parametrize("scenario", ROWS)
def test_fault(scenario: Scenario, request: pytest.FixtureRequest, monkeypatch, tmp_path: Path) -> None:
    """One row of the matrix: its fault injected into a freshly seeded cluster, the state run, and
    every promise of the row checked."""
    if scenario.via == "salt-call":
        _through_salt_call(scenario, request, monkeypatch, tmp_path)
    elif scenario.state in PBS_STATES:
        _against_pbs(scenario)
    else:
        _in_process(scenario, request, monkeypatch)


def _sdn_run(ctx, name: str, test: bool, declares: tuple = (), **kw) -> Outcome:
    """``proxmox_sdn.applied`` after the zone states of the run before it (``declares``), as one
    Outcome (their comments first, as the run prints them): the commit makes live only what the run
    declares (``sdn.apply.foreign_changes``)."""
    earlier: list[str] = []
    for zone in declares:
        done = network_present(ctx, objects.ZONE, test, zone["name"], **zone)
        if done.result is False:
            return done
        earlier += done.comment
    outcome = sdn_applied(ctx, test, name, **kw)
    outcome.comment[:0] = earlier
    return outcome


def _in_process(scenario: Scenario, request: pytest.FixtureRequest, monkeypatch) -> None:
    """Through ``lifecycle.present``/``absent``, with a context built as the Salt module builds it."""
    with ServedCluster(time_scale=scenario.time_scale) as cluster:
        run = _world(cluster, scenario, request, monkeypatch)
        try:
            if scenario.setup is not None:
                scenario.setup(run)
            cache: dict = {}
            try:
                ctx = make_context(run.targets, run.openbao, cache=cache, store=run.store)
            except SaltProxmoxError as exc:
                # What the Salt module returns when the target's context cannot be built.
                ctx, refused = None, refused_return(scenario.name, exc)
            else:
                if scenario.polls is not None:
                    ctx.create_polls = ctx.task_polls = scenario.polls
                install_hooks(ctx, run)
            before = guests(run)
            start = len(cluster.pve.requests)
            saves = run.store.saves
            raised = ""
            with debug_log() as lines:
                try:
                    if ctx is None:
                        outcome = Outcome(result=refused["result"], comment=[refused["comment"]])
                    else:
                        state = STATES[scenario.state]
                        outcome = state(ctx, scenario.name, scenario.test, **scenario.declaration)
                except Exception as exc:  # a crash is a finding; reported below without its text
                    raised = "".join(traceback.format_exception(exc))
                    outcome = None
            places = {
                "comment": "\n".join(outcome.comment) if outcome else "",
                "changes": dump(outcome.changes) if outcome else "",
                "debug log": "\n".join(lines),
                "exception": raised,
                "grains": dump(run.store.rows),
                "run cache": repr(cache),
            }
            assert leaks(places, run.secrets) == []
            assert lines or not pve_log(run, start), "the debug log capture saw the HTTP requests"
            assert outcome is not None, f"the state raised {raised.strip().splitlines()[-1].split(':')[0]}"
            log = pve_log(run, start)
            if scenario.test:
                assert write_lines(log) == [] and run.store.saves == saves, "a plan writes nothing"
            _check_common(scenario, run, before, log, scenario.seed_rows, outcome.result, places["comment"],
                          senders=senders_of(run, log))  # fmt: skip
            if scenario.leaves is not None:
                scenario.leaves(run)
        finally:
            run.close()


def _against_pbs(scenario: Scenario) -> None:
    """A ``pbs`` row: ``pbs_datastore.present``/``absent`` on a PBS context built as the execution
    module builds it, against a freshly seeded staging PBS fake; the same promises as every row, with
    PBS's own create and agreement checks (``tests.faults.pbs_harness``)."""
    with ServedPbs() as served:
        run = PbsRun(
            served=served, store=MemoryStore(scenario.seed_rows), targets=pbs_targets(served, PBS_TARGET)
        )
        try:
            if scenario.setup is not None:
                scenario.setup(run)
            cache: dict = {}
            ctx = run.context(cache)
            if scenario.polls is not None:
                ctx.create_polls = ctx.task_polls = scenario.polls
            install_hooks(ctx, run)
            before = pbs_harness.datastores(run)
            # The rows as the run finds them: seeded, or left by an earlier apply of the setup.
            seeded = {key: dict(row) for key, row in run.store.rows.items() if isinstance(row, dict)}
            start = len(run.pbs.requests)
            saves = run.store.saves
            raised = ""
            with debug_log() as lines:
                try:
                    outcome = PBS_STATES[scenario.state](
                        ctx, scenario.name, scenario.test, **scenario.declaration
                    )
                except Exception as exc:  # a crash is a finding; reported below without its text
                    raised = "".join(traceback.format_exception(exc))
                    outcome = None
            places = {
                "comment": "\n".join(outcome.comment) if outcome else "",
                "changes": dump(outcome.changes) if outcome else "",
                "debug log": "\n".join(lines),
                "exception": raised,
                "grains": dump(run.store.rows),
                "run cache": repr(cache),
            }
            # Every token secret PBS holds: the seeded read and provision tokens, and any made meanwhile.
            in_play = [*served.read_token[1:], *served.provision_token[1:], *run.pbs.token_secrets.values()]
            assert leaks(places, in_play) == []
            assert outcome is not None, f"the state raised {raised.strip().splitlines()[-1].split(':')[0]}"
            log = requests_of(served, start)
            if scenario.test:
                assert write_lines(log) == [] and run.store.saves == saves, "a plan writes nothing"
            comment = places["comment"]
            _check_common(scenario, run, before, log, seeded, outcome.result, comment,
                          pbs_harness.forbidden_writes, pbs_harness.disagreements)  # fmt: skip
        finally:
            run.close()


def _grain_rows(config_dir: Path) -> dict:
    return FileStore(config_dir / ROWS_FILE).load()


def _through_salt_call(
    scenario: Scenario, request: pytest.FixtureRequest, monkeypatch, tmp_path: Path
) -> None:
    """Through ``salt-call --local state.apply proxmox`` with the row's pillar; the ownership rows are
    the rows file's beside the grains file, the log is the minion's (at debug level)."""
    with ServedCluster(time_scale=scenario.time_scale) as cluster:
        run = _world(cluster, scenario, request, monkeypatch)
        try:
            if scenario.setup is not None:
                scenario.setup(run)
            pillar = tmp_path / "pillar"
            pillar.mkdir()
            (pillar / "top.sls").write_text("base:\n  '*':\n    - proxmox\n")
            (pillar / "proxmox.sls").write_text(scenario.pillar or "")
            config_dir = tmp_path / "etc"
            if run.openbao is not None:
                bao = {"url": run.openbao["url"], "token": run.openbao["auth"]["token"]}
                write_minion_config(config_dir, cluster.url, cluster.cafile, openbao=bao, target=TARGET,
                                    pillar_roots=[str(pillar)])  # fmt: skip
            else:
                write_minion_config(config_dir, cluster.url, cluster.cafile, target=TARGET,
                                    static=run.target["credentials"], pillar_roots=[str(pillar)])  # fmt: skip
            before = guests(run)
            start = len(cluster.pve.requests)
            args = ["test=True"] if scenario.test else []
            ret, raw = salt_call(config_dir, "state.apply", "proxmox", *args, timeout=120)
            rows = state_rows(ret)
            minion_log = config_dir / "root" / "minion.log"
            rows_file = config_dir / ROWS_FILE
            places = {
                "salt-call output": raw,
                "minion log": minion_log.read_text() if minion_log.exists() else "",
                "rows file": rows_file.read_text() if rows_file.exists() else "",
            }
            assert leaks(places, run.secrets) == []
            assert rows, raw
            comment = "\n".join(str(row["comment"]) for row in rows)
            results = {row["result"] for row in rows}
            assert len(results) == 1, comment
            run.store = MemoryStore(_grain_rows(config_dir))
            log = pve_log(run, start)
            _check_common(scenario, run, before, log, scenario.seed_rows, results.pop(), comment)
        finally:
            run.close()


def test_matrix_is_large_and_ids_are_unique() -> None:
    """At least forty scenarios, each id once, each group documented."""
    ids = [s.id for s in SCENARIOS]
    assert len(ids) >= 40 and len(ids) == len(set(ids))
    assert all(s.comment for s in SCENARIOS), "every scenario names what its comment must say"


def test_reliability_doc_is_the_matrix() -> None:
    """docs/reliability.md is exactly ``python -m tests.faults.matrix --markdown``: it cannot drift."""
    assert (REPO / "docs" / "reliability.md").read_text(encoding="utf-8") == markdown(), (
        "regenerate it: python -m tests.faults.matrix --markdown > docs/reliability.md"
    )
