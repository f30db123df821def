"""The container a restore will make, from the config its archive holds and the restore's form, as
pve-container makes it (pure): the plan judges the declaration against it, as the apply judges it
against the restored container it reads back, so both list the same writes.

PVE's rules, each from its source (pve-container ``src/PVE/API2/LXC.pm`` ``create_vm``, restore
branch; ``src/PVE/LXC/Create.pm`` ``sanitize_and_merge_config``):

- Mount points: the restore's form always sends ``rootfs`` (and every declared volume ``mpN``), so
  ``create_vm`` is not in its storage-only mode: ``$mp_param`` holds only the mount points sent, each
  allocated on its own storage (``PVE::LXC::create_disks``) before the archive is extracted into
  them. The archive's ``rootfs``, ``mpN`` and ``unusedN`` are never taken over
  (``sanitize_and_merge_config`` skips them), and its bind and device mount points come back only in
  storage-only mode (``$delayed_mp_param``). The files the archive holds of an ``mpN`` not sent
  (vzdump saves a volume mount point with ``backup=1``: ``Config.pm`` ``mountpoint_backup_enabled``)
  are extracted into the mount points that are (``restore_archive`` into ``mount_all``'s tree), under
  that mount point's path.
- Keys: every other archived key is kept unless the form gave it (``$conf->{$key} //=``), except
  ``digest``, ``snapshots``, ``parent``, ``template`` (set again after the restore: ``$was_template``,
  ``template_create``) and the raw ``lxc.*`` keys, kept only for root@pam (``$restricted``; an API
  token never is). ``unprivileged`` is the archive's unless the form gives it (``create_vm``:
  ``$conf->{unprivileged} = $orig_conf->{unprivileged} if !defined($unprivileged)``).
- ``unique``: each ``netN`` gets a new ``hwaddr`` (``PVE::Tools::random_ether_addr``), left out here
  since PVE draws it; the judge never counts an undeclared MAC as drift.
- Defaults after the merge: ``hostname`` ``CT<vmid>``, ``memory`` 512, ``swap`` 512.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from salt_proxmox.lxc import schema
from salt_proxmox.lxc.schema import parse_mountpoint
from salt_proxmox.wire.propstring import flag, pairs, print_pairs

#: ``sanitize_and_merge_config``: archived keys never taken over (and ``lock``: the restored
#: config's is ``create_vm``'s own ``create``, removed when the task ends).
_SKIPPED = frozenset({"digest", "rootfs", "snapshots", "unprivileged", "parent", "template", "lock"})
_MOUNT = re.compile(r"mp\d+|unused\d+", re.ASCII)


def _allocated(vmid: int, value: str, disk: int) -> str:
    """A sent ``storage:GiB[,options]`` as ``create_disks`` writes it: a new volume on that storage
    with its ``size`` (the judge compares storage and size, not the volume's name)."""
    volume = parse_mountpoint(value)
    if volume.kind != "new":
        return value
    gib = float(volume.new_gib or 0)
    size = f"{int(gib)}G" if gib.is_integer() else f"{round(gib * 1024)}M"
    options = {key: option for key, option in volume.options.items() if key != "size"}
    return ",".join(
        [f"{volume.storage}:vm-{vmid}-disk-{disk}", *(f"{k}={v}" for k, v in options.items())]
    ) + (f",size={size}")


def restored_config(
    vmid: int, archived: Mapping[str, str], form: Mapping[str, str], unique: bool
) -> dict[str, str]:
    """The config of CT ``vmid`` restored from an archive holding ``archived`` (``guest.restore.
    ArchivedConfig.config``) with the restore's ``form`` (``lxc.family._restore_form``): the mount
    points sent, allocated; the archived keys by the module's rules; ``unique``: new MACs. Pure."""
    out: dict[str, str] = {}
    mounts = sorted(
        (key for key in form if key == "rootfs" or _MOUNT.fullmatch(key)), key=lambda k: k != "rootfs"
    )
    for disk, key in enumerate(mounts):
        out[key] = _allocated(vmid, form[key], disk)
    for key, value in archived.items():
        if key in _SKIPPED or _MOUNT.fullmatch(key) or key == "lxc" or key.startswith("lxc."):
            continue
        if key in out or key in form:
            continue
        if unique and (schema.indexed(key) or ("", 0))[0] == "net":
            value = print_pairs(
                {name: option for name, option in pairs(value, "name") if name != "hwaddr"}, schema.NET.lead
            )
        out[key] = value
    unprivileged = form.get("unprivileged", archived.get("unprivileged"))
    if unprivileged is not None:
        out["unprivileged"] = str(unprivileged)
    if str(archived.get("template") or "0") == "1":
        out["template"] = "1"
    out.setdefault("hostname", f"CT{vmid}")
    out.setdefault("memory", "512")
    out.setdefault("swap", "512")
    return out


def _backed_up(value: str | None) -> bool:
    """A mount point's ``backup=1`` (any boolean spelling): vzdump saved its files
    (pve-container ``LXC/Config.pm`` ``mountpoint_backup_enabled``: an ``mpN`` volume only with
    ``backup``; ``VZDump/LXC.pm`` excludes the others)."""
    try:
        return value is not None and flag(value) == "1"
    except ValueError:
        return False


def dropped_mount_notes(what: str, archived: Mapping[str, str], form: Mapping[str, str]) -> list[str]:
    """One plan note per archived ``mpN`` the restore does not make (see the module text): a volume
    saved with ``backup=1`` has its files extracted under its path into the mount points sent; one
    without ``backup=1`` has none in the archive; a bind or device mount point is not restored."""
    notes = []
    for key in sorted(
        (k for k in archived if re.fullmatch(r"mp\d+", k) and k not in form), key=schema.indexed
    ):
        try:
            volume = parse_mountpoint(str(archived[key]))
        except ValueError:
            volume = None
        path = volume.options.get("mp", "?") if volume else "?"
        if volume is not None and volume.host_path:
            fate = (
                f"a {volume.kind} mount point, not restored (pve-container create_vm restores one only "
                "when no rootfs is sent, and only for root@pam)"
            )
        elif volume is not None and _backed_up(volume.options.get("backup")):
            fate = (
                f"not restored as a volume; the files the archive holds of it are extracted under {path} "
                "into the mount points sent"
            )
        else:
            fate = "not restored; the archive holds none of its files (it was not backed up: no backup=1)"
        notes.append(
            f"{what}: the archive's {key} ({archived[key]}) is {fate}: rootfs is sent with the restore, so "
            f"pve-container create_vm allocates only the mount points sent. Declare {key} to restore its "
            "files into a volume of their own."
        )
    return notes


def rootfs_note(what: str, archived: Mapping[str, str], form: Mapping[str, str]) -> str | None:
    """The plan's note of where ``rootfs`` is restored when it is not where, or not the size, the
    archive's was (``create_vm`` allocates the ``rootfs`` sent, never the archive's), or None."""
    try:
        old, new = parse_mountpoint(str(archived.get("rootfs") or "")), parse_mountpoint(form["rootfs"])
    except ValueError:
        return None
    was_storage = old.volume.partition(":")[0] if old.kind == "volume" else old.storage
    was = f"{was_storage}, {old.options.get('size', '?')}"
    if (was_storage, old.options.get("size")) == (new.storage, f"{new.new_gib}G"):
        return None
    return (
        f"{what}: rootfs is restored onto a new volume on {new.storage} of {new.new_gib}G (the archive's: "
        f"{was}); pve-container create_vm allocates the rootfs sent with the restore."
    )
