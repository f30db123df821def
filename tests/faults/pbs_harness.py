"""What a PBS fault scenario runs in: a freshly seeded staging PBS fake (``tests.support.pbs``), the
ownership store, the ``proxmox:pbs_targets`` entry, and the checks every PBS row gets.

Faults come from ``Faults`` (``tests.faults.harness``: ``before`` hooks, lost answers, dead members),
from the fake's own state (a token's ACL entries, its secret, ``hold_tasks``, a datastore put there
by somebody else) and from ``fail``/``answer`` below, which answer one matching request in place of
the fake, as a failing daemon or a proxy in front of proxmox-backup-proxy would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from salt_proxmox.ownership.rows import CREATING, OWNED
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pbs.context import pbs_context_for
from salt_proxmox.pbs.datastore import FAMILY
from salt_proxmox.run.context import PveContext
from tests.faults.harness import Faults, Hook
from tests.support.pbs import FakePbs, PbsError, ServedPbs

#: The ``proxmox:pbs_targets`` entry every PBS row runs against.
PBS_TARGET = "backup1"


@dataclass
class PbsRun(Faults):
    """One PBS scenario's world. ``foreign``: datastores a setup or hook put on PBS (somebody
    else's); ``secrets``: every token secret in play. The repr leaves out what holds a secret."""

    served: ServedPbs
    store: MemoryStore
    targets: dict[str, Any] = field(repr=False)
    secrets: list[str] = field(default_factory=list, repr=False)
    hooks: list[Hook] = field(default_factory=list)
    lost: list[tuple[str, str, str]] = field(default_factory=list)
    foreign: set[str] = field(default_factory=set)
    _closers: list[Callable[[], None]] = field(default_factory=list)

    @property
    def pbs(self) -> FakePbs:
        """The fake's state: ``datastores``, ``acl``, ``token_secrets``, ``requests``, ``hold_tasks``."""
        assert self.served.pbs is not None
        return self.served.pbs

    @property
    def target(self) -> dict[str, Any]:
        """The one ``proxmox:pbs_targets`` entry, to change members or credentials."""
        return self.targets[PBS_TARGET]

    def context(self, cache: dict | None = None) -> PveContext:
        """The PBS context the execution module builds, task polls without sleeping."""
        ctx = pbs_context_for(self.targets, PBS_TARGET, None, {} if cache is None else cache, self.store)
        ctx.sleep = lambda _seconds: None
        return ctx

    def fail(self, method: str, suffix: str, status: int, message: str) -> None:
        """Answer the first ``method`` request to a path ending in ``suffix`` with HTTP ``status`` and
        ``message`` as the plain body (PBS's error shape), without the fake acting on it."""

        def reply() -> tuple[Any, dict]:
            raise PbsError(status, message)

        self._instead(method, suffix, reply)

    def answer(self, method: str, suffix: str, data: object) -> None:
        """Answer the first matching request with HTTP 200 and ``{"data": data}``, the fake not acting."""
        self._instead(method, suffix, lambda: (data, {}))

    def _instead(self, method: str, suffix: str, reply: Callable[[], tuple[Any, dict]]) -> None:
        pbs = self.pbs
        original = pbs.handle
        pending = [True]

        def handle(verb: str, path: str, params: dict, auth: str | None) -> tuple[Any, dict]:
            if pending and verb == method and ("/" + path.strip("/")).endswith(suffix):
                pending.clear()
                with pbs.lock:
                    pbs.requests.append((verb, path, dict(params)))
                return reply()
            return original(verb, path, params, auth)

        pbs.handle = handle  # type: ignore[method-assign]

    def add_datastore(self, name: str, path: str) -> None:
        """Somebody else's datastore on PBS (recorded in ``foreign``)."""
        self.pbs.datastores[name] = {"name": name, "path": path}
        self.pbs.data.add(path)
        self.foreign.add(name)


def datastores(run: PbsRun) -> dict[str, str]:
    """name → path of every datastore PBS has."""
    return {name: str(cfg.get("path")) for name, cfg in run.pbs.datastores.items()}


def creates(log: list[tuple[str, str, Any]]) -> list[str]:
    """The names of the datastore creates (``POST /config/datastore``) in a request log."""
    return [
        parse_qs(body.decode("utf-8", "replace")).get("name", [""])[0]
        for method, path, body in log
        if method == "POST" and path.rstrip("/") == "/config/datastore"
    ]


def forbidden_writes(run: PbsRun, before: dict[str, str], log: list[tuple[str, str, Any]]) -> list[str]:
    """Writes the rules never allow: a create of a datastore PBS had when the run began, or a second
    create in one run (never repeated, least of all after an uncertain one)."""
    made = creates(log)
    problems = [
        f"POST create of datastore {name}, which existed before the run" for name in made if name in before
    ]
    if len(made) > 1:
        problems.append(f"{len(made)} create POSTs in one run: {made}")
    return problems


def disagreements(
    run: PbsRun, before: dict[str, str], log: list[tuple[str, str, Any]], seeded: dict[str, dict]
) -> list[str]:
    """Where the datastore rows and PBS disagree after a run: an ``owned`` row for a datastore PBS does
    not have, a ``creating`` row with no create behind it (in this run, or seeded so), another phase,
    a datastore this run made with no row."""
    problems = []
    now = datastores(run)
    posted = set(creates(log))
    rows = run.store.rows
    for key, row in rows.items():
        if not isinstance(row, dict) or key.split("/", 2)[1] != FAMILY:
            continue
        name = key.rsplit("/", 1)[1]
        if row.get("phase") == OWNED and name not in now:
            problems.append(f"{key} is owned but PBS has no datastore {name}")
        if (
            row.get("phase") == CREATING
            and name not in posted
            and seeded.get(key, {}).get("phase") != CREATING
        ):
            problems.append(f"{key} is creating but no create of datastore {name} was sent")
        if row.get("phase") not in (OWNED, CREATING):
            problems.append(f"{key} has phase {row.get('phase')!r}")
    for name in set(now) - set(before) - run.foreign:
        if f"{PBS_TARGET}/{FAMILY}/{name}" not in rows:
            problems.append(f"datastore {name} was made by this run but no row records it")
    return problems
