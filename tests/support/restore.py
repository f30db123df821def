"""A FakePve whose backup archives hold a guest's config, and whose creates restore them as PVE does.

fakepve 0.5.0 lists backup volumes (pve-storage ``API2/Storage/Content.pm`` ``index``, filtered by
``PVE/Storage.pm`` ``check_volume_access``) but a container restore makes a container from the
request alone (with the ``ostype`` guessed from the archive's file name), and a VM restore dies
``restoring an archive is not supported``. ``RestorePve`` adds:

- ``archives``: volid -> the guest config the archive holds; ``add_archive(volid, config, size,
  ctime)`` stores the backup volume on its storage (owned by the archived vmid, as
  ``parse_volname`` reads it from the file name, so the content listing shows it only to a caller
  ``check_volume_access`` lets read it) with the ``ctime`` the listing shows.
- A container restore (``POST /nodes/{node}/lxc`` with ``restore=1``; pve-container ``API2/LXC.pm``
  ``create_vm``, ``PVE::LXC::Create::restore_configuration``): ``check_volume_access`` on the
  archive for the caller (``Datastore.AllocateSpace`` on its storage and ``VM.Backup`` on the
  archived vmid, or ``Datastore.Allocate``), then the archive's config with the request's keys over
  it, merged when the task ends as ``PVE::LXC::Create::sanitize_and_merge_config`` does (``_merge``):
  the archive's ``rootfs``/``mpN``/``unusedN`` never (only the mount points sent are allocated),
  ``unprivileged`` the archive's unless sent, ``lxc.*`` raw keys for root@pam only, ``template`` set
  again, ``unique=1`` a new ``hwaddr`` for each NIC; the archive's ``hostname``, ``memory``, ``swap``,
  ``ostype`` and ``arch`` over fakepve's defaults. A restore without ``force`` onto a taken vmid is
  refused as fakepve refuses a create.
- A VM restore (``POST /nodes/{node}/qemu`` with ``archive``; qemu-server ``API2/Qemu.pm``
  ``create_vm``): a drive key beside ``archive`` is the 400 ``option conflicts with option
  'archive'``; ``check_volume_access`` on the archive; then the archive's config, each disk a new
  volume of its size on ``storage`` (default: the disk's own storage), ``unique=1`` giving each NIC
  a new MAC and the VM a new ``vmgenid`` and ``smbios1`` uuid (``restore_update_config_line``). A
  volid in ``failing_restores`` makes the restore task fail after ``create_and_lock_config``,
  leaving a config holding only ``lock: create`` at the vmid, as a failed ``restore_file_archive``
  can.

- ``GET /nodes/{node}/vzdump/extractconfig`` (pve-manager ``API2/VZDump.pm`` ``extractconfig``):
  ``check_volume_access``, then the archive's config as the text file vzdump wrote, a VM's with its
  ``#qmdump#map`` lines.

Differences from PVE: the restore's task type is the create's (``qmcreate``; PVE's is ``qmrestore``),
no data is read from the archive, and a VM restore's other keys (``name``, ``memory``) are not
merged over the archive's (this product never sends them with ``archive``).
"""

from __future__ import annotations

import re

from fakepve.lxc import random_mac
from fakepve.model import FakeVm, TaskError
from fakepve.routing import die, param_error

from tests.support.ceph import CephPve

_DRIVE = re.compile(r"(?:ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0")
_NET = re.compile(r"net\d+")
_MOUNT = re.compile(r"rootfs|mp\d+|unused\d+")
_SIZE = re.compile(r"(?:^|,)size=(\d+(?:\.\d+)?)([KMGT]?)")
_UNITS = {"": 1 / 1024**3, "K": 1 / 1024**2, "M": 1 / 1024, "G": 1, "T": 1024}


def _gib(value: str) -> int:
    """The GiB a drive's ``size=`` holds, at least 1."""
    found = _SIZE.search(value)
    return max(1, round(float(found.group(1)) * _UNITS[found.group(2)])) if found else 1


#: pve-container ``Create.pm`` ``sanitize_and_merge_config``: archived keys never merged.
_SKIPPED = ("digest", "rootfs", "snapshots", "unprivileged", "parent", "template", "lock")


def _merge(config: dict, archive: dict, given: dict, user: str) -> None:
    """``sanitize_and_merge_config`` onto the restored ``config``: each archived key not skipped and
    not given, ``lxc.*`` raw keys only for root@pam, each ``netN`` with a new ``hwaddr`` under
    ``unique``; then ``template`` again for a template's archive (``$was_template``). The defaults
    fakepve set (``hostname``, ``memory``, ``swap``) and the ``ostype``/``arch`` it guessed from the
    file name give way to the archive's, as PVE sets them only after the merge."""
    unique = str(given.get("unique") or "0") == "1"
    for key, value in archive.items():
        if key in _SKIPPED or _MOUNT.fullmatch(key) or (key.startswith("lxc") and user != "root@pam"):
            continue
        if unique and _NET.fullmatch(key):
            kept = re.sub(r"(^|,)hwaddr=[^,]*", "", str(value)).lstrip(",")
            config[key] = f"{kept},hwaddr={random_mac()}"
        elif key not in given:
            config[key] = value
    if str(archive.get("template") or "0") == "1":
        config["template"] = 1


def _owner(volid: str) -> int:
    return int(re.search(r"vzdump-(?:lxc|openvz|qemu)-(\d+)-", volid).group(1))


class RestorePve(CephPve):
    """CephPve whose backup archives hold a config and restore it (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.archives: dict[str, dict] = {}
        self.failing_restores: set[str] = set()
        #: vmid -> (the archive config, the request) of a container restore under way, merged by its task.
        self._restoring: dict[int, tuple[dict, dict]] = {}

    def add_archive(self, volid: str, config: dict, size: int, ctime: int) -> None:
        """Store a vzdump archive ``volid`` (``<storage>:backup/vzdump-<type>-<vmid>-….<ext>``) holding
        ``config``, ``size`` bytes, made at ``ctime``."""
        storage, _, volname = volid.partition(":")
        self.store_file(storage, volname.partition("/")[2], size, content="backup")
        volume = self.storages[storage]["volumes"][volname]
        volume.update({"ctime": ctime, "vmid": _owner(volid)})
        self.archives[volid] = dict(config)

    def _archive(self, user, volid: str) -> dict:
        """``check_volume_access`` on a backup volume, then the config it holds."""
        storage = volid.partition(":")[0]
        self._check_access(user, storage, "backup", _owner(volid), volid)
        if volid not in self.archives:
            raise TaskError(f"volume '{volid}' does not exist")
        return dict(self.archives[volid])

    def _routes_restore(self):
        return [("GET", "/nodes/{node}/vzdump/extractconfig", self._extract_config)]

    async def _extract_config(self, v, user):
        """pve-manager ``API2/VZDump.pm`` ``extractconfig``: ``check_volume_access`` on the archive, then
        the config file it holds as text (pve-storage ``extract_vzdump_config``). A VM's carries the
        ``#qmdump#map:<virtdev>:drive-<virtdev>:<storage>:<format>:`` line vzdump writes for each disk
        it saved (qemu-server ``VZDump/QemuServer.pm``): every drive but a CD-ROM, a cloud-init drive
        and one with ``backup=0``."""
        volid = v["volume"]
        try:
            archive = self._archive(user, volid)
        except TaskError as exc:
            raise die(str(exc)) from None
        lines = [f"{key}: {value}" for key, value in archive.items() if key != "description"]
        lines[:0] = [f"#{line}" for line in str(archive.get("description") or "").splitlines()]
        if "-qemu-" in volid:
            for key, value in archive.items():
                text = str(value)
                if not _DRIVE.fullmatch(key) or "media=cdrom" in text or "cloudinit" in text:
                    continue
                if re.search(r"(?:^|,)backup=(?:0|no|off|false)(?:,|$)", text):
                    continue
                volume = text.split(",", 1)[0]
                fmt = "qcow2" if volume.endswith(".qcow2") else ""
                lines.append(f"#qmdump#map:{key}:drive-{key}:{volume.split(':', 1)[0]}:{fmt}:")
        return "\n".join(lines) + "\n"

    async def _lxc_create(self, user, v):
        """pve-container ``create_vm``'s restore branch: the request's own keys and mount points (the
        archive's never: ``rootfs`` is given), ``unprivileged`` the archive's unless given; the
        archive's config is merged in by the task (``task``)."""
        if not v.get("restore"):
            return await super()._lxc_create(user, v)
        archive = self._archive(user, v["ostemplate"])
        given = dict(v)
        if "unprivileged" not in given and "unprivileged" in archive:
            # As an int: fakepve's create tests it for truth, and "0" is a privileged archive.
            given["unprivileged"] = int(str(archive["unprivileged"]) in ("1", "yes", "on", "true"))
        if "rootfs" not in given:
            # Storage-only mode (no rootfs sent): the archive's rootfs at its size on ``storage``.
            given["rootfs"] = f"{v.get('storage') or 'local'}:{_gib(str(archive.get('rootfs', 'size=4G')))}"
        self._restoring[int(v["vmid"])] = (archive, given)
        return await super()._lxc_create(user, given)

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        restoring = self._restoring.pop(int(tid), None) if ttype == "vzrestore" and tid else None
        if restoring is None:
            return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)
        archive, given = restoring

        async def restored():
            note = await body()
            _merge(vm.config, archive, given, user)
            return note

        return await super().task(node, ttype, tid, user, restored, vm=vm, lock=lock, log=log)

    async def _qm_create(self, v, user):
        volid = v.get("archive")
        if not volid:
            return await super()._qm_create(v, user)
        for key in sorted(v):
            if _DRIVE.fullmatch(key):
                raise param_error(**{key: "option conflicts with option 'archive'"})
        archive = self._archive(user, volid)
        unique = str(v.get("unique") or "0") == "1"
        if volid in self.failing_restores:
            return await self._failed_restore(v, user, volid)
        made: dict[str, object] = {}
        for key, value in archive.items():
            if key in ("digest", "lock", "meta") or key.startswith("unused"):
                continue
            text = str(value)
            if _DRIVE.fullmatch(key) and "media=cdrom" not in text:
                storage = v.get("storage") or text.split(":", 1)[0]
                rest = ",".join(p for p in text.split(",")[1:] if not p.startswith("size="))
                made[key] = f"{storage}:{_gib(text)}" + (f",{rest}" if rest else "")
            elif _NET.fullmatch(key) and unique:
                made[key] = re.sub(r"^(\w+)=[0-9A-Fa-f:]{17}", r"\1", text)
            elif key == "smbios1" and unique:
                kept = ",".join(p for p in text.split(",") if not p.startswith("uuid="))
                if kept:
                    made[key] = kept
            elif key == "vmgenid" and unique:
                made[key] = "1"
            else:
                made[key] = value
        given = {k: x for k, x in v.items() if k not in ("archive", "unique", "storage", "force")}
        return await super()._qm_create({**made, **given}, user)

    async def _failed_restore(self, v, user, volid):
        """``restore_file_archive`` dying after ``create_and_lock_config``: the task fails and a config
        holding only ``lock: create`` stays at the vmid."""
        node, vmid = v["node"], int(v["vmid"])
        if self._qm_taken(vmid):
            raise TaskError(f"unable to restore VM {vmid} - VM {vmid} already exists")
        vm = FakeVm(vmid, f"VM {vmid}", node=node)
        vm.config = {"lock": "create"}
        vm.lock = "create"
        self.vms.append(vm)

        async def body():
            raise TaskError(f"command 'vma extract' failed: got signal 5 (restoring {volid})")

        return await self.task(node, "qmrestore", vmid, user, body, vm=vm, lock=False)
