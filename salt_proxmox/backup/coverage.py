"""Which guests an enabled backup job covers, computed here rather than asked of PVE.

PVE's own answer, ``GET /cluster/backup-info/not-backed-up`` (pve-manager
``PVE/API2/Cluster/BackupInfo.pm`` ``get_included_vmids``), counts every job, disabled ones
included, as covering its guests; so the product computes coverage from the ENABLED jobs itself:

- the jobs are the cluster's (``GET /cluster/backup``, pve-manager ``PVE/API2/Backup.pm`` ``index``,
  Sys.Audit on ``/``) with this run's declarations laid over them: a declared job counts as
  declared (its selection, its ``enabled``), a job declared absent with ``removal: destroy``
  counts as gone, a job whose declaration its own state refuses counts as it is live;
- a job covers a guest as vzdump chooses its guests (pve-manager ``PVE/VZDump.pm``
  ``get_included_guests``): ``pool`` its pool's members, ``vmid`` the listed ones, ``all`` every
  guest but those in ``exclude``; with ``node`` only the guests on that node;
- a guest's pool is its declared ``pool:``, else the guest index's (``GET cluster/resources``).

Every plan notes, once per run (``run.memo.note_once``), the guests the run declares and which of
them no enabled job covers (``run_note``); a guest declaring ``backup: required`` that no enabled
job covers is refused at plan (``guest_guard``). ``report`` answers ``proxmox.backup_coverage``
for every guest of the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from salt_proxmox.backup import declared
from salt_proxmox.backup import job as backup_job
from salt_proxmox.errors import DeclarationError, SaltProxmoxError, shown
from salt_proxmox.guest.absence import INDEX, index_rows
from salt_proxmox.pve.constraints import vmid_number
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import get_rows, rows_of
from salt_proxmox.run.memo import note_once

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

#: What a guest declaration's ``backup:`` may say: ``required`` (an uncovered guest is refused at
#: plan) or ``optional`` (the default: an uncovered guest is noted).
LEVELS = ("required", "optional")
LABELS = {"lxc": "CT", "qemu": "VM"}


@dataclass(frozen=True)
class Job:
    """A backup job as coverage reads it: ``id``, ``enabled``, and its selection (``vmids``, ``pool``,
    ``all`` with ``exclude``, ``node``)."""

    id: str
    enabled: bool = True
    vmids: frozenset[int] = frozenset()
    pool: str = ""
    all: bool = False
    exclude: frozenset[int] = frozenset()
    node: str = ""

    def covers(self, vmid: int, node: str, pool: str | None) -> bool:
        """Whether this job, when enabled, backs up guest ``vmid`` on ``node`` in ``pool``
        (``get_included_guests``)."""
        if self.node and node and self.node != node:
            return False
        if self.pool:
            return pool == self.pool
        if self.vmids:
            return vmid in self.vmids
        return self.all and vmid not in self.exclude


def _vmids(text: object) -> frozenset[int]:
    return frozenset(int(item) for item in str(text or "").split(",") if item.strip().isdigit())


def job_of(job_id: str, values: Mapping[str, object]) -> Job:
    """A Job from a job's canonical options (``backup.job.parse``'s, or a declaration's values)."""
    return Job(
        id=job_id,
        enabled=values.get("enabled", 1) not in (0, "0", False),
        vmids=_vmids(values.get("vmid")),
        pool=str(values.get("pool") or ""),
        all=values.get("all") in (1, "1", True),
        exclude=_vmids(values.get("exclude")),
        node=str(values.get("node") or ""),
    )


def live_jobs(ctx: PveContext) -> dict[str, Job]:
    """The cluster's backup jobs by id (``GET /cluster/backup``, once per run). Raises PveError (a
    read credential without Sys.Audit on ``/``: 403), PveMalformed, PveUnreachable."""
    rows = get_rows(ctx.client, "cluster/backup", ctx.broker.read(), what="backup jobs", reads=ctx.reads)
    found = {}
    for row in rows:
        if row.get("id") is None:
            continue
        probe = backup_job.identify("coverage", ctx.target.name, str(row["id"]))
        found[str(row["id"])] = job_of(probe.identity, backup_job.parse(row, probe))
    return found


def run_jobs(ctx: PveContext) -> dict[str, Job]:
    """The jobs as this run leaves them: the live ones with the run's declarations laid over them."""
    jobs = live_jobs(ctx)
    for chunk in declared.jobs(ctx):
        if chunk.fun == "absent":
            if chunk.args.get("removal") == "destroy":
                jobs.pop(chunk.name, None)
            continue
        try:
            decl = backup_job.declare(chunk.state_id, ctx.target.name, chunk.name, **_options(chunk.args))
        except (DeclarationError, TypeError):
            continue
        jobs[decl.identity] = job_of(decl.identity, {"enabled": 1, **decl.values})
    return jobs


def _options(args: Mapping[str, object]) -> dict[str, object]:
    """A job chunk's options (its requisites, target and adopt left out)."""
    return {key: value for key, value in args.items() if key in backup_job.FIELDS}


@dataclass
class Coverage:
    """``covering``: each guest label and the enabled jobs covering it (empty: uncovered)."""

    covering: dict[str, list[str]] = field(default_factory=dict)

    @property
    def uncovered(self) -> list[str]:
        return [guest for guest, jobs in self.covering.items() if not jobs]


def _label(kind: str, vmid: int) -> str:
    return f"{LABELS.get(kind, kind)} {vmid}"


def judge(jobs: Mapping[str, Job], guests: Iterable[tuple[str, int, str, str | None]]) -> Coverage:
    """Which enabled ``jobs`` cover each of ``guests`` (``(kind, vmid, node, pool)``), a pure judgement."""
    result = Coverage()
    for kind, vmid, node, pool in guests:
        result.covering[_label(kind, vmid)] = sorted(
            job.id for job in jobs.values() if job.enabled and job.covers(vmid, node, pool)
        )
    return result


def _declared_coverage(ctx: PveContext, guests: Sequence[declared.Guest]) -> Coverage:
    """Coverage of the run's ``guests`` by the run's jobs. The guest index (the run's shared read) is
    asked only for the pools of guests that declare none, and only while an enabled job selects a
    pool: a run costs one read of the jobs, not more."""
    jobs = run_jobs(ctx)
    index = {}
    if any(job.enabled and job.pool for job in jobs.values()) and any(g.pool is None for g in guests):
        data = ctx.reads.shared(ctx.client, INDEX, ctx.broker.read(), params={"type": "vm"})
        try:
            index = {
                int(row["vmid"]): row for row in rows_of(data, "guests") if str(row.get("vmid")).isdigit()
            }
        except ValueError as why:
            raise PveMalformed("GET", f"{INDEX}?type=vm", str(why)) from None
    rows = []
    for guest in sorted(guests, key=lambda guest: guest.vmid):
        pool = guest.pool if guest.pool is not None else index.get(guest.vmid, {}).get("pool")
        rows.append((guest.kind, guest.vmid, guest.node, pool))
    return judge(jobs, rows)


def note_text(result: Coverage) -> str:
    """The run's coverage note: the uncovered guests first, then who covers the others."""
    covered = [f"{guest} by {', '.join(jobs)}" for guest, jobs in result.covering.items() if jobs]
    parts = []
    if result.uncovered:
        parts.append(f"no enabled backup job covers {', '.join(result.uncovered)}")
    if covered:
        parts.append(f"covered: {'; '.join(covered)}")
    return "backup coverage: " + ("; ".join(parts) if parts else "no guest declared")


def run_note(ctx: PveContext) -> list[str]:
    """The run's coverage note, the first time a state of this run asks (else []): the guests this run
    declares, and which no enabled job covers. Never raises: a read that fails says so in the note."""
    guests = declared.guests(ctx)
    if not guests or not note_once(ctx.memo, ctx.target.name, "backup-coverage"):
        return []
    try:
        return [note_text(_declared_coverage(ctx, guests))]
    except SaltProxmoxError as exc:
        return [f"backup coverage is unknown: {exc}"]


def guest_guard(
    ctx: PveContext, kind: str, vmid: object, node: object, pool: object, value: object
) -> tuple[list[str], list[str]]:
    """``(refusals, run notes)`` for one guest declaration's ``backup:`` (``registry.GUEST_KEYS``):
    a value that is not one of ``LEVELS`` is refused; ``required`` with no enabled job covering the
    guest is refused, naming the remedy; the run's coverage note comes with the first guest of the
    run. Never raises for a known failure (a failed read refuses ``required``)."""
    notes = run_note(ctx)
    if value is None or value == "optional":
        return [], notes
    if value not in LEVELS:
        return [f"backup: {shown(value)} is not one of {', '.join(LEVELS)}"], notes
    try:
        number = vmid_number(vmid)
    except DeclarationError:
        return [], notes  # the declaration refuses its vmid itself
    label = _label(kind, number)
    try:
        guest = declared.guest(ctx, number) or declared.Guest(
            kind, number, str(node or ""), pool if isinstance(pool, str) else None, value, ""
        )
        result = _declared_coverage(ctx, [guest])
    except SaltProxmoxError as exc:
        return [f"backup: required, and whether a job covers {label} cannot be read: {exc}"], notes
    if result.covering.get(label):
        return [], notes
    return [
        f"backup: required, and no enabled backup job covers {label} (PVE's not-backed-up list counts "
        "disabled jobs; this counts the enabled ones, this run's declarations included). Declare a job "
        "whose vmid, pool or all covers it (proxmox:backup_jobs), or enable the one that should."
    ], notes


def report(ctx: PveContext) -> dict[str, object]:
    """``proxmox.backup_coverage``: ``{uncovered: [guest], covered: {guest: [job ids]}, disabled:
    [job ids]}`` for every guest of the cluster's index, by the cluster's enabled jobs. Raises what
    the reads raise."""
    jobs = live_jobs(ctx)
    rows = [(row["type"], int(row["vmid"]), row["node"], row.get("pool")) for row in index_rows(ctx)]
    result = judge(jobs, sorted(rows, key=lambda row: row[1]))
    return {
        "uncovered": result.uncovered,
        "covered": {guest: jobs for guest, jobs in result.covering.items() if jobs},
        "disabled": sorted(job.id for job in jobs.values() if not job.enabled),
    }
