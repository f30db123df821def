"""Whether a live guest is the one an ownership row speaks for (docs/design.md §8), pure; shared by
guest families.

A row names a vmid; the guest at that vmid may have been destroyed by hand and created again by
somebody else. Its fingerprint (``salt_proxmox.guest.fingerprint``: for a container the MAC PVE drew
for each ``netN``, the volume id and size of ``rootfs``, each ``mpN`` and ``unusedN``, so the set of
mount points; for a VM its NICs, disks and the values qemu-server generates once) is recorded with
the row from the read-back of this minion's own writes, and at an adoption. A live guest that does
not carry it is not ours: plan and apply refuse it, naming what differs, unless the declaration says
``adopt: true``.

Rows written before fingerprints existed are never trusted silently: the guest must match the
declaration recorded with the row exactly, with no NIC or volume that declaration does not have;
then the plan says so and the fingerprint is recorded; otherwise it is refused like a foreign guest.

A fingerprint must hold something PVE generated for that guest alone (``generated_keys``): a
container without a ``netN`` has only volume ids and sizes, which PVE hands out again (pve-storage
names a new volume with the first free ``vm-<vmid>-disk-N``). Such a row vouches for no write and no
destroy (``indistinct``); ``adopt: true`` after checking the guest by hand takes it as ours for
that run.

A ``creating`` row (a create whose end this minion did not see) vouches for a guest only when the
node's task list ties it to that create (``creation_tie``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.guest.fingerprint import FIELD, differences, fingerprint
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle
from salt_proxmox.pve.tasks import warnings_of
from salt_proxmox.wire.propstring import pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Declaration, Family
    from salt_proxmox.guest.words import Words


def live_fingerprint(family: Family, live: Mapping[str, object]) -> dict[str, str]:
    """The fingerprint of a live config of ``family``."""
    return fingerprint(live, family.keys)


def recorded_declaration(
    family: Family, state_id: str, target: str, row: Mapping[str, object], vmid: int, node: str
) -> Declaration:
    """The declaration an ownership row recorded, parsed as a declaration of ``family`` (its vmid
    and node, else ``vmid``/``node``). Raises Refused when the row holds none that parses."""
    recorded = dict(row.get("declared") or {})
    try:
        return family.parse(
            state_id,
            vmid=recorded.pop("vmid", vmid),
            node=recorded.pop("node", node),
            target=target,
            config=recorded,
        )
    except (DeclarationError, TypeError, ValueError):
        raise Refused(
            f"{family.label} {vmid}: its ownership row does not hold a declaration that can be read, so the "
            "guest cannot be checked against it. Nothing was written."
        ) from None


@dataclass(frozen=True)
class Check:
    """A live guest against its ``owned`` row: ``differs`` says why it is not the guest the row
    speaks for (empty: it is); ``legacy`` marks a row with no fingerprint, checked against its
    recorded declaration instead."""

    differs: list[str] = field(default_factory=list)
    legacy: bool = False


def check(
    family: Family,
    row: Mapping[str, object],
    live: Mapping[str, object],
    recorded: Declaration,
    style: TagStyle = DEFAULT_TAG_STYLE,
) -> Check:
    """Whether ``live`` is the guest ``row`` (an ``owned`` row) speaks for; ``recorded`` is the
    row's declaration (``recorded_declaration``), judged with the datacenter's tag ``style`` (see
    the family's judge) when the row has no fingerprint."""
    prints = live_fingerprint(family, live)
    stored = row.get(FIELD)
    if isinstance(stored, Mapping):
        return Check(differences(stored, prints))
    drift = [f"{key} differs from it" for key in family.judge(recorded, live, style).drift]
    unknown = [f"{key} ({text}) is not in it" for key, text in prints.items() if key not in recorded.config]
    return Check(drift + unknown, legacy=True)


#: The way forward after a refusal: a plan or apply of ``present`` (``write``), a destroy (``delete``).
FORWARD = {
    "write": "To manage it as it is now, declare adopt: true (its fingerprint is then recorded anew).",
    "delete": (
        "If it should go, take it over first (its present state with adopt: true, applied once) or "
        "destroy it by hand."
    ),
}


def not_ours(what: str, result: Check, verb: str) -> str:
    """The refusal of a guest that does not carry its row's fingerprint; ``verb`` is ``write`` or
    ``delete``, what was not done."""
    done = f"nothing was {verb}{'ten' if verb == 'write' else 'd'}"
    if result.legacy:
        return (
            f"{what}: its ownership row was written before fingerprints existed, and the guest does not "
            f"match the declaration recorded with it: {'; '.join(result.differs)}. Nothing shows it is the "
            f"guest this minion made, so {done}. {FORWARD[verb]}"
        )
    return (
        f"{what} does not carry the fingerprint this minion recorded at its last write (MACs, volumes, "
        f"mount points): {'; '.join(result.differs)}. It may be another guest created at this vmid after "
        f"ours was destroyed, or ours changed by hand; {done}. {FORWARD[verb]}"
    )


def legacy_note(what: str) -> str:
    """What a plan says about a row without a fingerprint whose guest matches it exactly."""
    return (
        f"{what}: its ownership row was written before fingerprints existed; the guest matches the "
        "declaration recorded with it exactly, so its fingerprint (MACs, volumes, mount points) is "
        "recorded now"
    )


def unknown_volumes(family: Family, last: Declaration, live: Mapping[str, object]) -> list[str]:
    """The volumes of ``live`` its last declaration does not declare (``mp0 (local-lvm:… size=500G)``),
    ``unusedN`` included: a destroy deletes every volume the config names (pve-container
    ``src/PVE/LXC.pm`` ``destroy_lxc_container``; qemu-server ``PVE/QemuServer.pm``
    ``destroy_vm``, which removes every disk and ``unusedN`` the config names)."""
    prints = live_fingerprint(family, live)
    return [
        f"{key} ({text})"
        for key, text in prints.items()
        if family.keys.is_volume(key) and key not in last.config
    ]


#: A cloud-init drive's volume (qemu-server ``PVE/QemuServer/Drive.pm`` ``drive_is_cloudinit``).
CLOUDINIT = re.compile(r"[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow2|vmdk|subvol))?$")


def destroyed_volumes(family: Family, live: Mapping[str, object]) -> list[str]:
    """The volumes a destroy of the guest whose live config is ``live`` deletes, as a plan names them
    (``scsi0 local-lvm:vm-290-disk-0``), in key order: every volume key's volume, ``unusedN`` included,
    but not a CD-ROM's image nor ``none`` (qemu-server ``PVE/QemuServer.pm`` ``destroy_vm`` walks the
    config's drives and skips ``drive_is_cdrom($drive, 1)``, which counts a cloud-init drive as a
    volume: ``drive_is_cloudinit``, ``CLOUDINIT``); pve-container ``src/PVE/LXC.pm``
    ``destroy_lxc_container`` deletes the rootfs and every volume mount point, not a bind or device
    mount, whose source is a path)."""
    found = []
    for key in sorted(live):
        value = live[key]
        if not family.keys.is_volume(key) or not isinstance(value, str):
            continue
        try:
            options = dict(pairs(value, "volume"))
        except ValueError:
            options = {"volume": value.split(",", 1)[0]}
        volume = options.get("volume") or options.get("file") or ""
        cdrom = options.get("media") == "cdrom" and not CLOUDINIT.search(volume)
        if cdrom or volume in ("", "none", "cdrom") or volume.startswith("/"):
            continue
        found.append(f"{key} {volume}")
    return found


def vmid_refusal(words: Words, vmid: int, recorded: Mapping[str, object] | None) -> list[str]:
    """The refusal of a state whose recorded vmid is not ``vmid``: another vmid is another guest.
    The family's ``words`` (``state``: ``proxmox_lxc``, ``command``: ``pct``) name the remedies."""
    was = (recorded or {}).get("vmid")
    if was is None or int(str(was)) == vmid:
        return []
    return [
        f"vmid: {was} -> {vmid} is a different guest. Declare it under a new state id; the old "
        f"guest is retained (run `{words.state}.absent` on it, or `{words.command} destroy {was}` by hand)."
    ]


def generated_keys(family: Family, prints: Mapping[str, str], declared: Mapping[str, object]) -> list[str]:
    """The keys of fingerprint ``prints`` whose text PVE generated for this one guest: a ``netN``'s
    MAC PVE drew (pve-container ``src/PVE/LXC/Config.pm`` ``parse_lxc_network``,
    ``random_ether_addr``; qemu-server likewise) and a value qemu-server generates once per VM
    (``vmgenid``, ``smbios1``'s ``uuid``, ``meta``'s ``ctime``: ``create_vm``, ``clone_vm``), each
    only when ``declared`` (the recorded declaration's config) does not spell it: a declared MAC is
    the operator's and a guest made again from the same declaration has it too. Volume ids and sizes
    never count: pve-storage names a new volume with the first free ``vm-<vmid>-disk-N``
    (``PVE/Storage/Plugin.pm`` ``find_free_diskname``), so a guest made again at the vmid with the
    same size carries the same text."""
    keys = family.keys
    out = []
    for key, text in prints.items():
        if not (keys.nic.fullmatch(key) or key in keys.generated):
            continue
        if text.lower() in str(declared.get(key) or "").lower():
            continue
        out.append(key)
    return out


def indistinct(what: str, verb: str) -> str:
    """The refusal of a write (``verb`` ``write``) or destroy (``delete``) on a row whose fingerprint
    holds nothing PVE generated for the guest alone (``generated_keys`` empty)."""
    done = f"nothing was {verb}{'ten' if verb == 'write' else 'd'}"
    forward = (
        "Check by hand that it is the guest this state made (`pct config`/`qm config`), then declare "
        "adopt: true to write to it; or give it a NIC whose MAC PVE draws, which tells it apart."
        if verb == "write"
        else "Check it by hand and destroy it by hand if it should go."
    )
    return (
        f"{what}: its fingerprint holds only volume ids and sizes (no MAC PVE drew, no generated id), "
        "which PVE hands out again: a guest somebody made at this vmid with the same disks would carry "
        f"the same fingerprint, so the row cannot vouch that it is ours and {done}. {forward}"
    )


#: How far a node's clock may be behind this minion's when a create task is searched from the time
#: its ``creating`` row was written, in seconds.
CLOCK_SKEW = 300

#: Task types that make or unmake a guest at a vmid, whose UPID id is that vmid (pve-container
#: ``src/PVE/API2/LXC.pm`` ``create_vm`` (``vzcreate``, ``vzrestore``), ``destroy_vm``; qemu-server
#: ``PVE/API2/Qemu.pm`` likewise). A clone's task (``qmclone``, ``clone_vm``) carries the source
#: vmid instead.
MAKES = {"lxc": ("vzcreate", "vzrestore"), "qemu": ("qmcreate", "qmrestore")}
UNMAKES = {"lxc": ("vzdestroy",), "qemu": ("qmdestroy",)}
CLONE = "qmclone"


def _task_user(task: Mapping[str, object]) -> str:
    """``user@realm!token`` of a task-list entry: pve-manager ``PVE/API2/Tasks.pm`` ``node_tasks``
    splits a token's UPID user into ``user`` and ``tokenid`` (a ``user`` that holds the ``!`` already
    is taken whole)."""
    user, token = str(task.get("user") or ""), task.get("tokenid")
    return f"{user}!{token}" if token and "!" not in user else user


def _succeeded(task: Mapping[str, object]) -> bool:
    status = task.get("status")
    return status in (None, "RUNNING", "running") or warnings_of(status) is not None


def creation_tie(
    family: Family,
    vmid: int,
    row: Mapping[str, object],
    tasks: Iterable[Mapping[str, object]],
    prints: Mapping[str, str],
    clone_of: int | None = None,
) -> str | None:
    """None when the guest at ``vmid`` is the one the create of ``row`` (a ``creating`` row) made,
    else why it cannot be tied to it.

    ``tasks``: entries of the node task lists (``GET /nodes/{node}/tasks?vmid=…&source=all``,
    pve-manager ``PVE/API2/Tasks.pm`` ``node_tasks``) of the node the create ran on and the
    guest's node, from ``row['started']`` minus ``CLOCK_SKEW``; ``prints`` the guest's live
    fingerprint; ``clone_of`` the template of a clone. Tied when:

    - our create task is listed: the row's ``upid`` (when PVE's answer came back), else a create
      task of the family (``MAKES``; ``qmclone`` of ``clone_of``) sent by the row's ``token``
      since the row was written (a lost answer: the UPID holds the token as ``user@realm!token``);
    - it did not fail (``OK``, ``WARNINGS: N`` or still running);
    - no task made or destroyed a guest at ``vmid`` after it (``MAKES``, ``UNMAKES``): the guest
      there may be another one;
    - a VM's ``meta`` ``ctime`` (set by qemu-server ``create_vm``/``clone_vm``) is not older than
      the row.

    PVE lists another user's tasks only to a caller with Sys.Audit on ``/nodes/{node}``; a token
    sees its own tasks only (``node_tasks``), so the read credential needs that privilege.
    """
    listed = list(tasks)
    started = row.get("started")
    upid, token = row.get("upid"), row.get("token")
    if not isinstance(started, int) or not (upid or token):
        return "its creating row records no create task (it was written by an earlier version)"
    ctime = prints.get("meta")
    if ctime and ctime.isdigit() and int(ctime) < started - CLOCK_SKEW:
        return f"its meta ctime {ctime} is older than our create (started {started})"
    if upid:
        ours = [task for task in listed if task.get("upid") == upid]
        what = f"our create task {upid}"
    else:
        makes = MAKES[family.kind]
        ours = [
            task
            for task in listed
            if _task_user(task) == token
            and int(task.get("starttime") or 0) >= started - CLOCK_SKEW
            and (
                (task.get("type") in makes and str(task.get("id")) == str(vmid))
                or (task.get("type") == CLONE and str(task.get("id")) == str(clone_of))
            )
        ]
        what = f"a create task of {token} for {family.label} {vmid} since {started}"
    if not ours:
        return (
            f"the node's task list does not show {what} (the read credential sees another user's tasks "
            "only with Sys.Audit on /nodes/<node>: pve-manager PVE/API2/Tasks.pm node_tasks)"
        )
    task = max(ours, key=lambda found: int(found.get("starttime") or 0))
    if not _succeeded(task):
        return f"our create task {task.get('upid')} ended {task.get('status')!r}, so it made no guest"
    since = int(task.get("starttime") or 0)
    later = [
        found
        for found in listed
        if found.get("upid") != task.get("upid")
        and str(found.get("id")) == str(vmid)
        and found.get("type") in (*MAKES[family.kind], *UNMAKES[family.kind])
        and int(found.get("starttime") or 0) >= since
    ]
    if later:
        names = ", ".join(f"{task.get('type')} by {_task_user(task)} ({task.get('upid')})" for task in later)
        return f"after our create task the node ran {names}: the guest there may be another one"
    return None


def not_tied(what: str, why: str) -> str:
    """The refusal of a guest found under a ``creating`` row that ``creation_tie`` cannot tie to
    our create."""
    return (
        f"{what} exists with a create of ours recorded as unfinished, but nothing ties it to that create: "
        f"{why}. It may be a guest somebody else made at this vmid; nothing was written. Check it by hand, "
        "then declare adopt: true to take it over as it is."
    )
