"""Restore as a way to create a guest: ``restore: <backup volume id>`` in a container or VM
declaration, in place of a container's ``ostemplate`` or a VM's from-scratch or ``clone`` create.

PVE's rules, each from its source:

- The archive is a vzdump backup volume, ``<storage>:backup/vzdump-<lxc|openvz|qemu>-<vmid>-<time>.
  <tar|vma>[.<gz|lzo|zst>]`` on a file storage (pve-storage ``PVE/Storage/Plugin.pm``
  ``parse_volname`` and ``PVE/Storage.pm`` ``archive_info``): its name says which guest type it
  holds and which guest it was (``$ownervm``). A container restores only a ``lxc``/``openvz``
  archive, a VM only a ``qemu`` one (pve-container ``API2/LXC.pm`` ``create_vm`` restores through
  ``PVE::LXC::Create::restore_archive``; qemu-server ``API2/Qemu.pm`` ``create_vm`` through
  ``restore_file_archive``, each refusing the other's format).
- Reading it: ``PVE/Storage.pm`` ``check_volume_access``: a backup volume needs
  ``Datastore.AllocateSpace`` on ``/storage/<storage>`` and ``VM.Backup`` on ``/vms/<archived
  vmid>`` (or ``Datastore.Allocate`` on the storage). pve-storage ``API2/Storage/Content.pm``
  ``index`` leaves out of its answer every volume the caller may not access, with HTTP 200: an
  archive the ``read`` token does not see is missing or hidden, never proven either. So the plan
  reads ``GET /nodes/{node}/storage/{storage}/content?content=backup`` with the ``read`` token,
  which needs those two privileges for each archive a declaration restores; the listing carries
  the archive's ``size`` (bytes) and ``ctime`` (the volume info at ``…/content/{volume}`` has no
  time). The restore itself is sent by the ``provision`` token, which ``create_vm`` checks the
  same way (``check_volume_access`` on the archive), beside ``VM.Allocate``.
- A storage the node cannot read: ``Content.pm`` ``index`` activates the storage on the node and
  dies (HTTP 500) when it is not configured, disabled, not available on that node (``nodes``) or
  offline; that answer is PVE's reason, named in the refusal.
- ``unique=1`` (``create_vm``, both families) gives each NIC of the archive a new MAC (and a VM a
  new ``vmgenid`` and ``smbios1`` uuid), so the restored guest never clashes with the original;
  sent unless the declaration says ``unique: false`` (then ``unique=0``: the archive's MACs are
  kept, for a guest restored in place of its lost original). ``force`` is never sent: a present
  guest is never overwritten (``create_vm`` without ``force`` dies ``CT/VM <vmid> already
  exists``).
- A container restore allocates its volumes on the target storage, which must hold containers
  (content ``rootdir``): the declared ``rootfs`` (``storage:GiB``) is sent with the restore
  (``create_vm``'s ``$mp_param``; without one, every volume goes to ``storage``, default
  ``local``). Its plan reads the archive's config (``archived_config``) and judges the declaration
  against the container the restore will make by pve-container's merge (``lxc.restored``).
- A VM restore refuses drive keys beside ``archive`` (``create_vm``: ``option conflicts with option
  'archive'``): they are written after the restore, as every other declared key. So the plan reads
  the archive's config (``archived_config``: pve-manager ``API2/VZDump.pm`` ``extractconfig``, the
  same ``check_volume_access`` as the listing, read token) and judges the declaration against the VM
  the restore will make, as a clone's plan judges it against the template's config: what the write
  after the restore changes, and what it cannot (a disk smaller than the archive's, on another
  storage), is said at plan, before anything is restored.
- A failed VM restore can leave the config ``create_vm`` locked at the vmid (``restore_vma_archive``
  and ``restore_file_archive`` die after ``create_and_lock_config``): the guest is then neither
  proven absent nor ours, so the apply reports it uncertain and its ownership row stays
  ``creating`` (``guest.report.write_failed``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import unquote

from salt_proxmox.guest.family import CreatePlan
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError, PveMalformed

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

#: ``PVE/Storage.pm`` ``archive_info`` / ``Plugin.pm`` ``parse_volname`` (backup): the archive's
#: file name, its guest type and the vmid it was taken from.
ARCHIVE = re.compile(
    r"(?P<storage>[a-z][a-z0-9\-_.]*[a-z0-9]):backup/"
    r"vzdump-(?P<type>lxc|openvz|qemu)-(?P<vmid>[1-9][0-9]*)-[^/]+\.(?:tar|vma)(?:\.(?:gz|lzo|zst))?",
    re.IGNORECASE | re.ASCII,
)
#: The archive types each family restores (``create_vm`` of pve-container, qemu-server).
TYPES = {"lxc": ("lxc", "openvz"), "qemu": ("qemu",)}
#: ``Content.pm`` ``index``'s storage activation failures: the node cannot read the storage.
_UNREADABLE = re.compile(
    r"does not exist|is disabled|not available on node|not online|activat|unable to", re.IGNORECASE
)


@dataclass(frozen=True)
class Archive:
    """One backup volume as the storage's content listing shows it: ``volid``, ``storage``,
    ``size`` (bytes), ``ctime`` (seconds since the epoch), ``vmid`` (the guest it was taken from)."""

    volid: str
    storage: str
    size: int
    ctime: int
    vmid: int

    def shown(self) -> str:
        """``local:backup/… (512.0 MiB, made 2026-11-30 02:00:00 UTC)``: how a plan names it."""
        made = datetime.fromtimestamp(self.ctime, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{self.volid} ({_size(self.size)}, made {made})"


def _size(size: int) -> str:
    value, unit = float(size), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"


def archive_problem(kind: str, value: str) -> str | None:
    """Why ``value`` is not a backup volume a guest of ``kind`` (``lxc``/``qemu``) restores, or
    None (``ARCHIVE``, ``TYPES``)."""
    found = ARCHIVE.fullmatch(value)
    if not found:
        return (
            f"{value!r} is not a vzdump backup volume (<storage>:backup/vzdump-<type>-<vmid>-<time>.<tar|vma>"
            "[.gz|.lzo|.zst], pve-storage Plugin.pm parse_volname); name the archive as "
            "`pvesm list <storage> --content backup` shows it"
        )
    if found["type"].lower() not in TYPES[kind]:
        other = "a VM" if kind == "lxc" else "a container"
        return (
            f"{value} is the backup of {other} (vzdump-{found['type']}); this state restores only its own "
            "type"
        )
    return None


def archived_vmid(volid: str) -> int:
    """The vmid the archive ``volid`` was taken from (its name; ``archive_problem`` checked it)."""
    found = ARCHIVE.fullmatch(volid)
    assert found is not None
    return int(found["vmid"])


def find_archive(ctx: PveContext, node: str, volid: str) -> tuple[Archive | None, str]:
    """The archive ``volid`` as node ``node`` lists it (``GET /nodes/{node}/storage/{storage}/content
    ?content=backup``, the ``read`` credential, once per node, storage and run), or ``(None,
    refusal)``: the storage the node cannot read (PVE's answer named), or an archive it does not list
    (missing, or hidden from the read token: see the module text).

    Raises PveError for another failure (a 403, a 5xx that is not a storage activation failure),
    PveMalformed, PveUnreachable, CredentialError."""
    storage = volid.partition(":")[0]
    path = f"{api_path('nodes', node, 'storage', storage, 'content')}"
    key = f"salt_proxmox.backups/{ctx.target.name}/{node}/{storage}"
    listed = ctx.memo.get(key)
    if listed is None:
        try:
            listed = ctx.client.request("GET", path, ctx.broker.read(), params={"content": "backup"}) or []
        except PveError as exc:
            if exc.status == 500 and _UNREADABLE.search(exc.message):
                return None, (
                    f"restore: {volid} is on storage {storage}, which {node} cannot read (GET {path}: "
                    f"{exc.message}; pve-storage Content.pm index). Restore from an archive on a storage "
                    f"{node} reads, or copy the archive there."
                )
            raise
        ctx.memo[key] = listed
    for row in listed if isinstance(listed, list) else []:
        if isinstance(row, dict) and row.get("volid") == volid:
            return Archive(
                volid, storage, int(row.get("size") or 0), int(row.get("ctime") or 0), archived_vmid(volid)
            ), ""
    owner = archived_vmid(volid)
    return None, (
        f"restore: {storage} on {node} lists no archive {volid} for the read token: it does not exist, or "
        f"the read token may not see it (PVE lists a backup only to a caller with Datastore.AllocateSpace on "
        f"/storage/{storage} and VM.Backup on /vms/{owner}, or Datastore.Allocate: pve-storage Storage.pm "
        f"check_volume_access). Name an archive `pvesm list {storage} --content backup` shows, or grant the "
        "read token those privileges."
    )


@dataclass(frozen=True)
class ArchivedConfig:
    """The config file a vzdump archive holds, as ``extractconfig`` answers it: ``config`` the main
    section's keys (``description`` from its ``#`` lines), ``disks`` each saved drive's storage by
    its key (the ``#qmdump#map:<virtdev>:<device>:<storage>:<format>:`` lines qemu-server
    ``VZDump/QemuServer.pm`` writes; ``''`` when none was recorded)."""

    config: dict[str, str]
    disks: dict[str, str]


#: qemu-server ``QemuServer.pm`` ``$parse_backup_hints``: a saved drive's map line.
_MAP = re.compile(r"^#qmdump#map:(\S+):(\S+):(\S*):(\S*):$")


def parse_archived_config(text: str) -> ArchivedConfig:
    """``extractconfig``'s text as ``ArchivedConfig``: the lines before the first ``[section]`` (a
    snapshot's, ``[PENDING]``), ``key: value`` each (qemu-server ``parse_vm_config``), ``#`` lines
    the description (``decode_text``: URI-escaped), ``#qmdump#``/``#vzdump#`` lines vzdump's own."""
    config: dict[str, str] = {}
    disks: dict[str, str] = {}
    description: list[str] = []
    for line in text.splitlines():
        if line.startswith("["):
            break
        found = _MAP.match(line)
        if found:
            disks[found[1]] = found[3]
        elif line.startswith(("#qmdump#", "#vzdump#")):
            continue
        elif line.startswith("#"):
            description.append(unquote(line[1:]))
        elif ":" in line:
            key, _, value = line.partition(":")
            config[key.strip()] = value.strip()
    if description:
        config["description"] = "\n".join(description)
    return ArchivedConfig(config, disks)


def archived_config(ctx: PveContext, node: str, volid: str) -> ArchivedConfig:
    """The config archive ``volid`` holds, read on ``node`` with the read credential (``GET
    /nodes/{node}/vzdump/extractconfig?volume=<volid>``: pve-manager ``API2/VZDump.pm``
    ``extractconfig``, ``check_volume_access`` as for the content listing, so ``find_archive``'s
    privileges serve), once per archive and run. Raises PveMalformed for an answer that is not text or
    holds no ``key: value`` line (pve-storage ``PVE/Storage.pm`` ``extract_vzdump_config_tar``/``_vma``
    die ``ERROR: archive contains no configuration file`` rather than answer nothing), and what the
    client raises."""
    key = f"salt_proxmox.archived/{ctx.target.name}/{volid}"
    found = ctx.memo.get(key)
    if found is None:
        path = f"{api_path('nodes', node, 'vzdump', 'extractconfig')}"
        text = ctx.client.request("GET", path, ctx.broker.read(), params={"volume": volid})
        if not isinstance(text, str):
            raise PveMalformed("GET", f"{path}?volume={volid}", "expected the archive's config as text")
        found = parse_archived_config(text)
        if not found.config:
            raise PveMalformed("GET", f"{path}?volume={volid}", "the archive's config holds no configuration")
        ctx.memo[key] = found
    return found


def create_plan(
    what: str,
    archive: Archive,
    config: Mapping[str, str],
    key_change: Callable[[str, str | None, str | None], dict],
    written: Iterable[str],
    unique: bool = True,
    changes: Mapping[str, object] | None = None,
) -> CreatePlan:
    """What a plan says of a create by restore of guest ``what`` from ``archive``: the archive with its
    size and time, the return's changes (``changes`` when the restored config was judged, else the
    declared ``config`` keys, ``key_change``: the family's), and a note naming ``written``, the keys
    then written onto the restored guest where they differ; ``unique``: whether the restore draws new
    MACs."""
    shown: dict[str, object] = {"restore": {"old": None, "new": archive.shown()}}
    if changes is None:
        shown.update({key: key_change(key, None, value) for key, value in config.items()})
    else:
        shown.update(changes)
    rest = sorted(written)
    return CreatePlan(
        source=f"by restoring {archive.shown()} "
        + ("with new MACs (unique=1)" if unique else "keeping the archive's MACs (unique: false)"),
        again=f"by restoring {archive.volid} again",
        notes=[f"{what}: then written onto the restored guest where it differs: {', '.join(rest)}"]
        if rest
        else [],
        changes=shown,
    )


def ignored_note(what: str, volid: str) -> str:
    """The plan's note for ``restore:`` on a guest that exists: never restored over (``force`` is never
    sent)."""
    return (
        f"{what}: restore: {volid} is ignored, the guest exists (a restore creates only; this state never "
        "sends PVE's force, so nothing is overwritten)"
    )
