"""What every way of running the formula (tests/functional) shares: an estate to run it against, the
plan → apply → plan sequence with its checks, the secret check, and the wall times.

- ``Estate``: a served cluster and the OpenBao token that may read its PVE tokens; its
  ``proxmox_config()`` and ``openbao_config()`` are the blocks a minion config (or a pillar) needs.
- ``plan_apply_plan(estate, way, run)`` runs ``state.apply proxmox test=True``, ``state.apply proxmox``,
  ``test=True`` again through ``run`` and checks what every way must show (see its docstring).
- ``assert_no_secret(texts, secrets)`` fails naming the text, never printing the secret.
- ``WALL_TIMES``: what ``timed``/``started`` measured; tests/functional/conftest.py prints it at the end.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.cluster import ServedCluster
from tests.support.openbao import CREDS_PATH
from tests.support.saltrun import FORMULA, PILLAR, state_rows, summary

TARGET = "demo"
STATE_IDS = {"proxmox-lxc-web", "proxmox-lxc-db", "proxmox-lxc-dns", "proxmox-lxc-web2"}
OWNED_ROWS = {f"{TARGET}/lxc/120", f"{TARGET}/lxc/150", f"{TARGET}/lxc/151", f"{TARGET}/lxc/152"}
#: The guests pillar_examples declares ``status: running``, by state id: (type, node, vmid). Both are
#: created, so stopped; each is started by its own ``POST …/status/start`` task after the create
#: (salt_proxmox/guest/power.py), and every later run reads ``GET …/status/current`` only.
STARTED = {"proxmox-lxc-web": ("lxc", "pve1", 150), "proxmox-qemu-app": ("qemu", "pve1", 210)}
#: The guest pillar_examples declares on another node than the one the seeded cluster has it on, with
#: ``migrate: true``, by state id: (type, live node, declared node, vmid). It is stopped, so one offline
#: migrate task moves it; the plan and the apply read its ``status/current`` once on its live node
#: (guest/migrate.py ``plan_move``: an HA-managed guest is refused), the second plan none (no status).
MIGRATED = {"proxmox-qemu-build": ("qemu", "pve2", "pve1", 220)}
#: The UPID type of a start task: pve-container ``vzstart``, qemu-server ``qmstart``.
START_TASK = {"lxc": "vzstart", "qemu": "qmstart"}
#: The UPID types of every power task (start, shutdown, stop, reboot) of both guest types.
POWER_TASKS = {
    f"{prefix}{action}" for prefix in ("vz", "qm") for action in ("start", "shutdown", "stop", "reboot")
}


def power_requests(log: list[tuple[str, str, Any]]) -> list[tuple[str, str]]:
    """The power requests of a fakepve request log, in order, as (method, path under /api2/json): the
    ``…/status/current`` reads and ``…/status/<action>`` posts of guests, and each poll of a power
    task's status shown as ``task <type>:<vmid>`` (its UPID's type and id)."""
    shown = []
    for method, path, _ in log:
        path = path.removeprefix("/api2/json")
        if "/tasks/UPID:" in path:
            fields = path.split("/tasks/", 1)[1].split(":")
            if fields[5] in POWER_TASKS:
                shown.append((method, f"task {fields[5]}:{fields[6]}"))
        elif ("/lxc/" in path or "/qemu/" in path) and "/status/" in path:
            shown.append((method, path))
    return shown


def expected_power(log_of: str) -> list[tuple[str, str]]:
    """What ``power_requests`` shows of pillar_examples' STARTED and MIGRATED guests on the seeded
    cluster: for the ``plan`` only the MIGRATED guest's ``GET …/status/current`` on its live node (the
    STARTED ones are created: stopped, not read); for the ``apply`` one ``POST …/status/start`` of each
    STARTED guest, then its task polled until it ended (fakepve ends it at once: one poll), then its
    status read back (``guest.power.verify_power``: a task's OK is no proof), and the MIGRATED guest's
    read as in the plan; for a ``replan`` one ``GET …/status/current`` of each STARTED guest and no power
    write."""
    moved = [
        ("GET", f"/nodes/{live}/{kind}/{vmid}/status/current") for kind, live, _, vmid in MIGRATED.values()
    ]
    if log_of == "plan":
        return moved
    if log_of == "apply":
        return [
            step
            for kind, node, vmid in STARTED.values()
            for step in (
                ("POST", f"/nodes/{node}/{kind}/{vmid}/status/start"),
                ("GET", f"task {START_TASK[kind]}:{vmid}"),
                ("GET", f"/nodes/{node}/{kind}/{vmid}/status/current"),
            )
        ] + moved
    return [("GET", f"/nodes/{node}/{kind}/{vmid}/status/current") for kind, node, vmid in STARTED.values()]


# (way, what was timed, seconds), printed by tests/functional/conftest.py at the end of the session.
WALL_TIMES: list[tuple[str, str, float]] = []


@dataclass(repr=False)
class Estate:
    """A served cluster and the OpenBao token that may read its PVE tokens. The repr shows no secret."""

    cluster: ServedCluster
    bao_url: str
    bao_token: str
    secrets: list[str] = field(default_factory=list)

    def proxmox_config(self, **extra: Any) -> dict[str, Any]:
        """The ``proxmox:`` block of a minion config: one target, credentials from OpenBao."""
        target = {
            "members": [self.cluster.url],
            "verify": self.cluster.cafile,
            "credentials": {"source": "openbao", "path": CREDS_PATH},
        }
        return {"targets": {TARGET: target}, **extra}

    def openbao_config(self) -> dict[str, Any]:
        """The ``openbao:`` block: the dev server, token auth."""
        return {"url": self.bao_url, "verify": True, "auth": {"method": "token", "token": self.bao_token}}

    def __repr__(self) -> str:
        return f"Estate({self.cluster!r}, bao_url={self.bao_url!r})"


def assert_no_secret(texts: Mapping[str, str], secrets: list[str]) -> None:
    """Fail when any secret occurs in any text; the message names the text and the secret's index only."""
    leaks = [
        (name, index)
        for name, text in texts.items()
        for index, secret in enumerate(secrets)
        if secret in text
    ]
    assert not leaks, f"secrets (by index) found in: {leaks}"


RunResult = tuple[Any, str]

# Files a secret scan skips: compressed or compiled, so a substring search could not see into them.
OPAQUE_SUFFIXES = (".tgz", ".gz", ".zip", ".pyc", ".so", ".whl")


def text_files(root: str | Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """``{path: text}`` of every file under root (logs, caches, grains, job returns), minus ``skip``
    (a config that holds a secret by design) and the opaque ones, for ``assert_no_secret``."""
    found = {}
    for path in sorted(Path(root).rglob("*")):
        if path.is_file() and path not in skip and not path.name.endswith(OPAQUE_SUFFIXES):
            found[str(path)] = path.read_text(errors="replace")
    return found


def plan_apply_plan(estate: Estate, way: str, run: Callable[[bool], RunResult]) -> list[str]:
    """Plan, apply and plan again through ``run(test) -> (state return, raw output)``; returns the raw
    outputs (for the secret check) after checking, on the fresh seeded cluster:

    - the plan would create web (150) and db (151) and adopt dns (120), refuses nothing, and sends PVE
      only GETs; the apply changes exactly what the plan showed, state by state and key by key;
    - the second plan is clean (every state True, no changes) and sends only GETs;
    - the containers exist where they were declared;
    - the guests declared ``status: running`` (STARTED): the plan says it would start each, the apply
      starts each by one awaited start task, the second plan only reads their ``status/current``, and
      after it fakepve holds them running while the guests that declare no status stay stopped.

    Records the wall time of the three runs as ``way``.
    """
    pve = estate.cluster.pve
    assert pve is not None
    runs, outputs = [], []
    started = time.monotonic()
    for test in (True, False, True):
        first = len(pve.requests)
        ret, raw = run(test)
        outputs.append(raw)
        runs.append((state_rows(ret), pve.requests[first:]))
    WALL_TIMES.append((way, "plan → apply → plan", time.monotonic() - started))

    (plan, plan_log), (apply, apply_log), (replan, replan_log) = runs
    plan_methods = [method for method, _, _ in plan_log]
    replan_methods = [method for method, _, _ in replan_log]
    shown = "\n".join(
        summary(title, rows)
        for title, rows in zip(("plan", "apply", "replan"), (plan, apply, replan), strict=True)
    )
    assert {row["id"] for row in plan} >= STATE_IDS, shown
    every = plan + apply + replan
    assert all(row["result"] is not False for row in every), shown
    assert all(row["result"] is None for row in plan if row["id"] in STATE_IDS), shown
    assert set(plan_methods) == {"GET"} and set(replan_methods) == {"GET"}, "a plan never writes"
    assert {r["id"]: sorted(r["changes"]) for r in plan} == {r["id"]: sorted(r["changes"]) for r in apply}, (
        shown
    )
    assert all(row["result"] is True and not row["changes"] for row in replan), shown
    assert (pve.ct(150).node, pve.ct(151).node) == ("pve1", "pve2")
    planned = {row["id"]: row["changes"].get("status") for row in plan if row["id"] in STARTED}
    assert planned == {key: {"old": None, "new": "running"} for key in STARTED}, shown
    # A guest being created is not read (it is stopped); the one to migrate is, on its live node.
    assert power_requests(plan_log) == expected_power("plan")
    assert power_requests(apply_log) == expected_power("apply")
    assert power_requests(replan_log) == expected_power("replan")
    assert (pve.ct(150).status, pve.vm(210).status) == ("running", "running")
    assert (pve.ct(151).status, pve.vm(211).status) == ("stopped", "stopped"), "no status: left alone"
    return outputs


def owned_phases(owned: Mapping[str, Any]) -> dict[str, str]:
    """``{row key: phase}`` of the container rows of an ownership mapping (grain or file)."""
    return {key: row["phase"] for key, row in owned.items() if "/lxc/" in key}


@contextlib.contextmanager
def timed(way: str, what: str) -> Iterator[None]:
    """Record the wall time of the with block as ``what`` of ``way``."""
    started = time.monotonic()
    try:
        yield
    finally:
        WALL_TIMES.append((way, what, time.monotonic() - started))


@contextlib.contextmanager
def started(way: str, what: str, daemon: Any) -> Iterator[Any]:
    """``with daemon.started()``, its start recorded as ``what`` of ``way``."""
    with timed(way, what):
        context = daemon.started()
        running = context.__enter__()
    try:
        yield running
    finally:
        context.__exit__(None, None, None)


#: What a minion daemon logs (at debug, salt-factories' file level) each time it reloads its grains
#: and modules: Salt 3008 ``salt/minion.py`` ``Minion.module_refresh``.
MODULE_RELOAD = "Refreshing modules. Notify="


def module_reloads(minion: Any) -> int:
    """How many times the minion daemon ``minion`` (a salt-factories one) reloaded its modules and
    grains so far, as its log file says."""
    return Path(minion.config["log_file"]).read_text(errors="replace").count(MODULE_RELOAD)


@contextlib.contextmanager
def formula_master(salt_factories: Any, way: str) -> Iterator[Any]:
    """A salt-master on 127.0.0.1 serving the formula (``formula/``) and the example pillar
    (``pillar_examples/``), its start recorded as ``way``."""
    from saltfactories.utils import random_string

    factory = salt_factories.salt_master_daemon(
        random_string("pve-master-"),
        overrides={
            "interface": "127.0.0.1",
            "file_roots": {"base": [str(FORMULA)]},
            "pillar_roots": {"base": [str(PILLAR)]},
        },
    )
    with started(way, "start salt-master", factory) as running:
        yield running
