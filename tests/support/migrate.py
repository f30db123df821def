"""A FakePve whose VMs answer ``GET`` and ``POST /nodes/{node}/qemu/{vmid}/migrate`` as qemu-server does.

fakepve 0.5.0 has a VM migration only as a scenario method (``FakePve.migrate``) and answers both
requests from its generic handler: the ``GET`` returns no preconditions, the ``POST`` moves nothing.
``MigratePve`` serves them, written from qemu-server 8 (stable-bookworm) ``src/PVE/API2/Qemu.pm``:

- ``GET`` is ``migrate_vm_precondition``: ``running``; ``allowed_nodes``, the other nodes on which every
  storage of the VM's local volumes is enabled (``check_local_storage_availability``), the others in
  ``not_allowed_nodes`` with ``unavailable_storages``; ``local_disks``, each volume on a storage that is
  not ``shared`` (``$check_vm_disks_local``: ``volid``, ``size`` in bytes from the storage's volume or the
  drive's ``size=``, ``cdrom``, ``is_unused``, ``drivename``); ``local_resources``, a ``hostpciN``/``usbN``
  naming a host device (``check_local_resources``); ``mapped-resources`` and ``mapped-resource-info``
  for those naming a ``mapping=`` (``live-migration`` 0: fakepve keeps no mappings' flags);
- ``POST`` is ``migrate_vm``: ``target is local node.`` (400), ``no such cluster node '<node>'``,
  ``can't migrate running VM without --online``; an HA-managed VM is handed to the HA manager
  (``hamigrate``: ``Requesting HA migration for VM <vmid> to node <target>``); else a ``qmigrate`` task
  (``QemuMigrate.pm`` ``prepare``: ``can't migrate VM which uses local devices: …``, ``local cdrom
  image``) that holds the ``migrate`` lock and then lives on the target, running as before (online).

``migrate_failures`` (vmid → text) makes the task fail with that text, the VM left on its node
(``QemuMigrate.pm`` ``phase2_cleanup``/``final_cleanup`` leave a failed migration's guest on its
source). Differences from PVE: no volume is copied (a fakepve volume is cluster-wide), replication and
``force`` are not modelled.
"""

from __future__ import annotations

import re

from fakepve.model import PveError, TaskError
from fakepve.routing import die, param_error

from tests.support.qemu import QemuPve

_DRIVE = re.compile(r"(ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0|unused\d+")
_DEVICE = re.compile(r"hostpci\d+|usb\d+")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def _bytes(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMGT]?)", text or "")
    return int(match.group(1)) * _UNITS[match.group(2)] if match else 0


class MigratePve(QemuPve):
    """QemuPve whose VMs migrate as qemu-server's do (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.migrate_failures: dict[int, str] = {}

    def _routes_qemu_migrate(self):
        path = "/nodes/{node}/qemu/{vmid}/migrate"
        return [("GET", path, self._qm_migrate_check), ("POST", path, self._qm_migrate)]

    def _migrating_vm(self, v):
        vm = self.vm(int(v["vmid"]))
        if vm is None or vm.node != v["node"]:
            raise die(f"Configuration file 'nodes/{v['node']}/qemu-server/{v['vmid']}.conf' does not exist")
        if vm.lock:
            raise die(f"VM is locked ({vm.lock})")
        return vm

    def _local_disks(self, vm) -> list[dict]:
        disks = []
        for key, value in sorted(vm.config.items()):
            if not _DRIVE.fullmatch(key):
                continue
            volid, *options = str(value).split(",")
            opts = dict(option.partition("=")[::2] for option in options)
            storage = volid.partition(":")[0]
            store = self.storages.get(storage)
            if volid == "none" or store is None or store.get("shared") or opts.get("shared") == "1":
                continue
            record = store.get("volumes", {}).get(volid.partition(":")[2], {})
            disks.append({
                "volid": volid, "size": int(record.get("size") or _bytes(opts.get("size", ""))),
                "cdrom": 1 if opts.get("media") == "cdrom" else 0,
                "is_unused": 1 if key.startswith("unused") else 0, "drivename": key,
            })  # fmt: skip
        return disks

    def _devices(self, vm) -> tuple[list[str], dict]:
        local, mapped = [], {}
        for key, value in sorted(vm.config.items()):
            if not _DEVICE.fullmatch(key):
                continue
            opts = dict(o.partition("=")[::2] for o in str(value).split(","))
            if "mapping" in opts:
                mapped[key] = {"name": opts["mapping"], "live-migration": 0}
                local.append(key)
            elif not str(value).startswith("spice"):
                local.append(key)
        return local, mapped

    async def _qm_migrate_check(self, v, user):
        vm = self._migrating_vm(v)
        self.need_quorum()
        disks = self._local_disks(vm)
        allowed, refused = [], {}
        for node in sorted(self.nodes):
            if node == vm.node:
                continue
            missing = sorted(
                {d["volid"].partition(":")[0] for d in disks}
                - {s for s in self.storages if self._storage_enabled(s, node)}
            )
            if missing:
                refused[node] = {"unavailable_storages": missing}
            else:
                allowed.append(node)
        local, mapped = self._devices(vm)
        return {
            "running": 1 if vm.status == "running" else 0,
            "allowed_nodes": allowed,
            "not_allowed_nodes": refused,
            "local_disks": disks,
            "local_resources": local,
            "mapped-resources": sorted(mapped),
            "mapped-resource-info": mapped,
        }

    async def _qm_migrate(self, v, user):
        target = v["target"]
        if target == v["node"]:
            raise param_error(target="target is local node.")
        self.need_quorum()
        if target not in self.nodes:
            raise PveError(500, f"no such cluster node '{target}'")
        vm = self._migrating_vm(v)
        if vm.status == "running" and not v.get("online"):
            raise die("can't migrate running VM without --online")
        local, mapped = self._devices(vm)

        async def move():
            blocking = [r for r in local if r not in mapped]
            if blocking:
                raise TaskError(f"can't migrate VM which uses local devices: {', '.join(blocking)}")
            for disk in self._local_disks(vm):
                if disk["cdrom"] and not re.search(r"vm-\d+-cloudinit", disk["volid"]):
                    raise TaskError(f"can't migrate local disk '{disk['volid']}': local cdrom image")
            vm.lock = "migrate"
            try:
                await self.pause(2)
                failure = self.migrate_failures.get(vm.vmid)
                if failure:
                    raise TaskError(failure)
                vm.node = target
            finally:
                vm.lock = None
            return "migration finished successfully"

        if vm.ha_managed:
            log = [f"Requesting HA migration for VM {vm.vmid} to node {target}"]
            return await self.task(vm.node, "hamigrate", vm.vmid, user, move, vm=vm, lock=False, log=log)
        log = [f"starting migration of VM {vm.vmid} to node '{target}'"]
        return await self.task(vm.node, "qmigrate", vm.vmid, user, move, vm=vm, lock=False, log=log)
