"""One row of the fault matrix (``tests/faults/matrix.py`` holds the table, ``pbs_matrix.py`` the rows
of a Proxmox Backup Server target)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Scenario:
    """One row of the matrix.

    ``setup(run)`` injects the fault (see ``tests.faults.harness.Run``, and ``PbsRun`` of
    ``tests.faults.pbs_harness`` for a ``pbs_*`` state); ``declaration`` is the
    state's keyword arguments (``present``: the container; ``absent``: vmid, node, removal);
    ``result`` the state's expected result; ``comment`` fragments its comment must contain (the
    cause, then the remedy); ``writes`` the exact non-GET requests fakepve must see, in order;
    ``rows`` the ownership rows afterwards (row key → phase), ``seed_rows`` those before; ``never``
    paths that must not be requested at all. ``creds`` is ``static``, ``openbao`` or ``sealed``;
    ``via`` is ``lifecycle`` or ``salt-call`` (then ``pillar`` is the proxmox.sls pillar text).
    ``polls`` lowers the task poll bound; ``time_scale`` is fakepve's (0: tasks end at once).
    ``uncertain`` marks a run whose outcome is unknown on purpose: an ``owned`` row may then
    outlive a guest an unconfirmed destroy removed. ``state`` ``network_applied`` and
    ``sdn_applied`` run ``proxmox_network.applied`` (``declaration``: node) and
    ``proxmox_sdn.applied`` instead of a container state; ``qemu_present``/``qemu_absent`` run
    ``proxmox_qemu.present``/``absent`` (``declaration``: the VM); ``pbs_present``/``pbs_absent``
    run ``pbs_datastore.present``/``absent`` against the staging PBS fake (``declaration``: the
    datastore). ``leaves(run)`` checks what the run must leave that fakepve's log does not show (a
    container's config file on the root lane's node), raising AssertionError; ``writes`` of a lane
    row end ``as root@pam`` for what went through ``pvesh``.
    """

    id: str
    group: str
    fault: str
    promise: str
    result: bool | None
    comment: tuple[str, ...]
    setup: Callable[[Any], None] | None = None
    declaration: Mapping[str, Any] = field(default_factory=dict, repr=False)
    name: str = "web"
    state: str = "present"
    test: bool = False
    writes: tuple[str, ...] = ()
    rows: Mapping[str, str] = field(default_factory=dict)
    seed_rows: Mapping[str, dict] = field(default_factory=dict)
    never: tuple[str, ...] = ()
    creds: str = "static"
    via: str = "lifecycle"
    pillar: str | None = None
    polls: int | None = None
    time_scale: float = 0.0
    uncertain: bool = False
    leaves: Callable[[Any], None] | None = None

    def outcome(self) -> str:
        """The expected outcome in one line, for the documentation."""
        verdict = {True: "succeeds", None: "plans changes", False: "fails"}[self.result]
        writes = ", ".join(f"`{line}`" for line in self.writes) or "none"
        rows = ", ".join(f"`{key}` {phase}" for key, phase in self.rows.items()) or "none"
        said = " · ".join(f"“{fragment}”" for fragment in self.comment)
        return f"{verdict}; says {said}; writes: {writes}; rows: {rows}"
