"""A VM made from another: a clone of a template, or a restore of a backup (pure).

qemu-server ``PVE/API2/Qemu.pm`` ``clone_vm`` (templates only here; linked unless ``full``; the
template's storage must be able to clone its volumes, and those must be base volumes, pve-storage
``volume_has_feature``), ``clone_vm``/``clone_disk`` for the config a clone starts with, and
``restore_update_config_line`` for the config a restore makes.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.guest.change import live_text
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.props import QemuDeclaration, parse_drive, parse_net, print_net
from salt_proxmox.wire.propstring import flag
from salt_proxmox.wire.volumes import base_volume, volume_format


def clone_source_refusals(decl: QemuDeclaration, source: Mapping[str, object] | None) -> list[str]:
    """Why ``decl.clone`` cannot be cloned: it does not exist, or it is not a template (a clone of a
    running VM copies its disks while it writes to them; this state clones templates only)."""
    if decl.clone is None:
        return []
    if source is None:
        return [f"clone: VM {decl.clone} does not exist, so VM {decl.vmid} cannot be cloned from it."]
    if (live_text(source.get("template")) or "0") not in ("1", "true"):
        return [
            f"clone: VM {decl.clone} is not a template; this state clones templates only. Convert it with "
            f"`qm template {decl.clone}` on its node, or name a template."
        ]
    return []


#: pve-storage ``volume_has_feature(..., 'clone', ...)`` of a template's (base) volume, by storage
#: type: ``LvmThinPlugin``, ``ZFSPoolPlugin``, ``ZFSPlugin``, ``RBDPlugin`` (``clone => { base => 1 }``),
#: ``BTRFSPlugin`` and the file-based ``Plugin.pm`` types (``base => { qcow2, raw, vmdk }``: the
#: clone is a qcow2 backed by the base) can; ``LVMPlugin`` (thick: its ``clone`` table is commented
#: out), ``ISCSIPlugin`` and ``ISCSIDirectPlugin`` (``copy`` only) cannot.
LINKED_CLONE = {
    **dict.fromkeys(("lvmthin", "zfspool", "zfs", "rbd", "btrfs"), True),
    **dict.fromkeys(("dir", "nfs", "cifs", "glusterfs", "cephfs"), True),
    **dict.fromkeys(("lvm", "iscsi", "iscsidirect"), False),
}


def clones_linked(storage_type: str, volume: str) -> bool:
    """Whether pve-storage ``volume_has_feature($cfg, 'clone', $volid)`` holds for ``volume`` (no
    snapshot) on a storage of a ``LINKED_CLONE`` type that can clone: every plugin's ``clone`` table
    has ``base`` (``$isBase``, ``volumes.base_volume``), and ``BTRFSPlugin``'s also ``current => {
    raw => 1 }`` (a raw image is a subvolume, snapshotted whether or not it is a base volume)."""
    if base_volume(volume):
        return True
    return storage_type == "btrfs" and volume_format(volume) == "raw"


def linked_clone(decl: QemuDeclaration) -> bool:
    """Whether the clone of a template is linked: qemu-server ``clone_vm``: ``$param->{full} //
    !is_template($conf)`` (this state clones templates only)."""
    return decl.full is not True


def clone_storage_refusals(
    decl: QemuDeclaration, source_node: str, source: Mapping[str, object], stores: Mapping[str, Mapping]
) -> tuple[list[str], list[str]]:
    """``(refusals, notes)``: what qemu-server ``API2/Qemu.pm`` ``clone_vm`` refuses of a clone of the
    template ``source`` (its config, on ``source_node``) given the cluster's storages (``stores``:
    ``pve.facts.storages``). A storage the read credential cannot see is noted as not checked.

    - a linked clone needs every drive but a CD-ROM (``drive_is_cdrom($drive, 1)``), a cloud-init
      drive and ``tpmstate0`` (always copied), ``efidisk0`` included, on a storage that clones
      (``LINKED_CLONE``) and a volume it clones (``clones_linked``: a base volume; a template's disk
      ``qm template`` did not convert is none): ``Linked clone feature is not supported for
      '<volid>' (<key>)``;
    - a clone to another node (``target``) needs every volume the template names, its ISO CD-ROMs
      included, on shared storage (``$check_storage_access_clone``): ``can't clone VM to node
      '<node>' (VM uses local storage)``;
    - a full clone's ``storage`` on another node must be shared: ``can't clone to non-shared storage
      '<storage>'``."""
    refusals: list[str] = []
    unseen: set[str] = set()
    local: list[str] = []
    linked = linked_clone(decl)
    for key in sorted(source):
        if not schema.is_drive(key):
            continue
        try:
            drive = parse_drive(str(source[key]))
        except ValueError:
            continue
        if drive.storage is None or drive.volume in ("none", "cdrom"):
            continue
        store = stores.get(drive.storage)
        if store is None:
            unseen.add(drive.storage)
            continue
        if not store.get("shared"):
            local.append(f"{key} ({drive.volume})")
        if linked and drive.kind not in ("cdrom", "cloudinit") and key != "tpmstate0":
            kind = str(store.get("type"))
            if LINKED_CLONE.get(kind) is False:
                refusals.append(
                    f"clone: template VM {decl.clone}'s {key} is on storage {drive.storage} "
                    f"({kind}), which cannot make a linked clone (pve-storage "
                    f"volume_has_feature 'clone'; PVE: `Linked clone feature is not supported for "
                    f"'{drive.volume}' ({key})`). "
                    "Declare full: true (and storage: for the copy), or keep the template on a storage that "
                    "clones (lvmthin, zfspool, rbd, a qcow2/raw directory)."
                )
            elif kind not in LINKED_CLONE:
                unseen.add(drive.storage)
            elif not clones_linked(kind, drive.volume):
                refusals.append(
                    f"clone: template VM {decl.clone}'s {key} is {drive.volume}, not a base volume "
                    f"(base-<vmid>-disk-N, what `qm template` makes of a disk), and storage {drive.storage} "
                    f"({kind}) makes a linked clone of base volumes only (pve-storage volume_has_feature "
                    f"'clone'; PVE: `Linked clone feature is not supported for '{drive.volume}' ({key})`). "
                    f"Declare full: true (and storage: for the copy), or convert the disk on node "
                    f"{source_node}: `qm template {decl.clone} --disk {key}`."
                )
    if decl.node != source_node:
        if local:
            refusals.append(
                f"clone: template VM {decl.clone} is on node {source_node} and names volumes on storage that "
                f"is not shared: {', '.join(local)}. PVE refuses to clone it to node {decl.node} (`can't "
                f"clone VM to node '{decl.node}' (VM uses local storage)`). Declare node: {source_node} "
                "(and migrate the VM after), or keep the template's volumes on shared storage."
            )
        if decl.storage and decl.storage in stores and not stores[decl.storage].get("shared"):
            refusals.append(
                f"storage: {decl.storage} is not shared, and a clone to another node needs a shared target "
                f"storage (`can't clone to non-shared storage '{decl.storage}'`). Name a shared storage, or "
                f"declare node: {source_node}."
            )
        elif decl.storage and decl.storage not in stores:
            unseen.add(decl.storage)
    notes = [
        f"VM {decl.vmid} on {decl.node}: whether storage {sid} can take this clone was not checked (the read "
        "token does not see its type); PVE checks it when the clone is sent"
        for sid in sorted(unseen)
    ]
    return refusals, notes


def clone_form(decl: QemuDeclaration, source_node: str) -> dict[str, str]:
    """The ``POST /nodes/{source_node}/qemu/{clone}/clone`` form (qemu-server ``clone_vm``):
    ``newid``, ``name``, ``full`` and ``storage`` as declared (a template gives a linked clone
    unless ``full``), ``pool``, and ``target`` when the VM is declared on another node."""
    form = {"newid": str(decl.vmid)}
    if decl.config.get("name") or decl.default_name:
        form["name"] = decl.config.get("name") or str(decl.default_name)
    if decl.full is not None:
        form["full"] = "1" if decl.full else "0"
    if decl.storage:
        form["storage"] = decl.storage
    if decl.pool:
        form["pool"] = decl.pool
    if source_node != decl.node:
        form["target"] = decl.node
    return form


#: Keys ``clone_vm`` does not copy onto a clone (qemu-server ``API2/Qemu.pm``: snapshot state, and
#: ``template``, deleted); ``unusedN`` is left out too ("no need to copy unused images").
_NOT_CLONED = frozenset(
    {"snapshots", "parent", "snaptime", "vmstate", "snapstate", "runningcpu", "runningmachine"}
    | {"running-nets-host-mtu", "template", "lock", "digest"}
)


def cloned_config(decl: QemuDeclaration, source: Mapping[str, object]) -> dict[str, object]:
    """The config of the VM a clone of ``source`` (the template's config) as ``clone_form(decl)`` will
    make, as qemu-server ``API2/Qemu.pm`` ``clone_vm`` writes it: every key copied but ``_NOT_CLONED``
    and ``unusedN``; ``name`` the declared one or the state id (``default_name``; else
    ``Copy-of-VM-<name>``); each ``netN`` with a new MAC ("always change MAC! address": left out here,
    as PVE draws it); a CD-ROM copied as it is; every
    other drive (disks, the cloud-init drive, ``efidisk0``, ``tpmstate0``) on its own new volume, which
    a full clone with ``storage`` puts on that storage (``clone_disk``: ``$storage || $src_storeid``;
    its format is the target storage's, ``resolve_dst_disk_format``, so a ``format=`` is dropped) and a
    linked clone keeps on the template's. The new volume ids are pve-storage's default names
    (``vm-<vmid>-disk-N``, ``vm-<vmid>-cloudinit``); the judge compares a drive's storage and size, not
    its name. Pure."""
    full = bool(decl.full)  # clone_vm: full defaults to 0 for a template
    out: dict[str, object] = {}
    disks = 0
    for key, value in source.items():
        if key in _NOT_CLONED or schema.family_of(key) == "unused":
            continue
        text = live_text(value)
        if text and schema.family_of(key) == "net":
            out[key] = print_net({k: v for k, v in parse_net(text).items() if k != "macaddr"})
            continue
        if text and schema.is_drive(key):
            drive = parse_drive(text)
            if drive.kind != "cdrom" and drive.storage is not None:
                storage = decl.storage if full and decl.storage else drive.storage
                name = (
                    f"vm-{decl.vmid}-cloudinit"
                    if drive.kind == "cloudinit"
                    else f"vm-{decl.vmid}-disk-{disks}"
                )
                disks += drive.kind != "cloudinit"
                options = {
                    k: v for k, v in drive.options.items() if k != "format" or storage == drive.storage
                }
                out[key] = ",".join([f"{storage}:{name}", *(f"{k}={v}" for k, v in options.items())])
                continue
        out[key] = value
    name = decl.config.get("name") or decl.default_name
    out["name"] = name or f"Copy-of-VM-{live_text(source.get('name')) or decl.clone}"
    return out


def _not_backed_up(value: object) -> bool:
    """A drive's ``backup=0`` (any boolean spelling; one that does not parse counts as saved)."""
    try:
        return value is not None and flag(value) == "0"
    except ValueError:
        return False


def restored_config(
    decl: QemuDeclaration, archived: Mapping[str, str], saved: Mapping[str, str]
) -> dict[str, object]:
    """The config of the VM a restore of an archive holding ``archived`` will make (``saved``: each
    saved drive's storage by key, ``guest.restore.ArchivedConfig``), as qemu-server ``QemuServer.pm``
    writes it: ``restore_update_config_line`` drops ``lock``, ``unusedN`` and ``parent``, gives each
    ``netN`` a new MAC and ``smbios1`` a new uuid under ``unique`` and always a new ``vmgenid`` (left
    out here, as PVE draws them), keeps a drive with ``backup=0`` only as a comment, and puts every
    saved drive on a new volume (``$restore_allocate_devices``: on the declared ``storage``, else the
    one it was saved from, else ``local``, ``$parse_backup_hints``; its ``format`` dropped, its
    ``size`` kept); a cloud-init drive gets a new one on the same storage. The judge compares a
    drive's storage and size, not its name. Pure."""
    out: dict[str, object] = {}
    disks = 0
    for key, value in archived.items():
        if key in ("lock", "parent", "digest") or schema.family_of(key) == "unused":
            continue
        text = live_text(value)
        if text and schema.family_of(key) == "net" and decl.unique:
            out[key] = print_net({k: v for k, v in parse_net(text).items() if k != "macaddr"})
            continue
        if key == "vmgenid" and text != "0":
            continue
        if key == "smbios1" and decl.unique:
            kept = ",".join(part for part in text.split(",") if not part.startswith("uuid="))
            if kept:
                out[key] = kept
            continue
        if text and schema.is_drive(key):
            drive = parse_drive(text)
            if _not_backed_up(drive.options.get("backup")):
                continue
            if key in saved or drive.kind == "cloudinit":
                storage = decl.storage or (saved.get(key) if key in saved else drive.storage) or "local"
                name = (
                    f"vm-{decl.vmid}-cloudinit"
                    if drive.kind == "cloudinit"
                    else f"vm-{decl.vmid}-disk-{disks}"
                )
                disks += drive.kind != "cloudinit"
                options = {k: v for k, v in drive.options.items() if k != "format"}
                out[key] = ",".join([f"{storage}:{name}", *(f"{k}={v}" for k, v in options.items())])
                continue
        out[key] = value
    return out
