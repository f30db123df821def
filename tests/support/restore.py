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
  it; the archive's volumes are not restored when ``rootfs`` is given (its ``mpN`` dropped), and
  ``unique=1`` drops every ``hwaddr`` so each NIC gets a new MAC. The ``ostype`` and ``arch`` stay
  the archive's. A restore without ``force`` onto a taken vmid is refused as fakepve refuses a create.
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


def _owner(volid: str) -> int:
    return int(re.search(r"vzdump-(?:lxc|openvz|qemu)-(\d+)-", volid).group(1))


class RestorePve(CephPve):
    """CephPve whose backup archives hold a config and restore it (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.archives: dict[str, dict] = {}
        self.failing_restores: set[str] = set()
        #: vmid -> the archive config a container restore under way keeps its ``ostype``/``arch`` from.
        self._restoring: dict[int, dict] = {}

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
        if not v.get("restore"):
            return await super()._lxc_create(user, v)
        archive = self._archive(user, v["ostemplate"])
        given = dict(v)
        made = {k: x for k, x in archive.items() if not _MOUNT.fullmatch(k) and k not in ("digest", "lock")}
        if str(v.get("unique") or "0") == "1":
            for key in [k for k in made if _NET.fullmatch(k)]:
                made[key] = re.sub(r"(^|,)hwaddr=[^,]*", "", str(made[key])).lstrip(",")
        if "rootfs" not in given:
            given["rootfs"] = str(archive.get("rootfs", "local:4")).split(",")[0]
        self._restoring[int(v["vmid"])] = archive
        return await super()._lxc_create(user, {**made, **given})

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        archive = self._restoring.pop(int(tid), None) if ttype == "vzrestore" and tid else None
        if archive is None:
            return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)

        async def restored():
            note = await body()
            for key in ("ostype", "arch"):
                if key in archive:
                    vm.config[key] = archive[key]
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
