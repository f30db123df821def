"""``update_vm_api``'s privilege checks that fakepve 0.5.0 does not make, as qemu-server 9.2 makes them
(``src/PVE/API2/Qemu.pm``), for ``tests.support.qemu.QemuPve``'s config writes.

fakepve checks one privilege per key from its own guess (``FakePve._config_priv``: a drive
VM.Config.Disk, an ``ide`` drive with ``media=cdrom`` VM.Config.CDROM, cloud-init keys
VM.Config.HWType), so a cloud-init drive written as ``local-lvm:cloudinit`` passes with VM.Config.Disk
and ``ciuser`` never asks for VM.Config.Cloudinit. qemu-server asks, before it writes anything:

- ``$check_vm_modify_config_perm`` over the keys deleted and the keys written: ``$cloudinitoptions`` and
  ``ipconfigN`` VM.Config.Cloudinit or VM.Config.Network (``check_vm_perm`` with ``any``: PVE names
  both, ``Permission check failed (/vms/<vmid>, VM.Config.Cloudinit|VM.Config.Network)``);
- ``$check_drive_perms`` for a deleted drive's value and for a written drive's old value and new one:
  a cloud-init drive (``QemuServer/Drive.pm`` ``drive_is_cloudinit``) VM.Config.Cloudinit then
  VM.Config.CDROM, another ``media=cdrom`` drive VM.Config.CDROM, any other VM.Config.Disk; the first
  privilege missing is the one PVE names.

fakepve's own per-key check still runs after these (it asks more than PVE in places, never less for
the keys above). Its create (``_qm_create``) asks its per-key guess too, a drive's VM.Config.Disk or
VM.Config.CDROM included, where qemu-server's ``create_vm`` asks none for a drive (it calls
``$check_storage_access`` and ``$check_vm_modify_config_perm``, which skips drive keys): the fake's create
is stricter than PVE there, and ``tests/unit/test_access.py`` pins PVE's rule for the plan.

fakepve lets a token with VM.Config.HWType set ``args``, a ``usbN`` with a host device and a ``hostpciN``
with ``host=``; qemu-server lets only root@pam (``check_root_only``, at create and update alike).
"""

from __future__ import annotations

import re

from fakepve.model import PveError
from fakepve.routing import split_list

#: ``$cloudinitoptions`` (qemu-server 8 and 9).
CLOUDINIT_OPTIONS = frozenset(
    {"cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain", "sshkeys"}
)
_DRIVE = re.compile(r"(?:ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0")
#: ``drive_is_cloudinit``: ``[:/](?:vm-\d+-)?cloudinit(?:\.$QEMU_FORMAT_RE)?$`` on the volume.
_CLOUDINIT = re.compile(r"[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow|qcow2|qed|vmdk|cloop))?$")
_NOT_CONFIG = frozenset(
    {"node", "vmid", "digest", "delete", "skiplock", "force", "revert", "background_delay"}
)


def _drive_privileges(value: str) -> tuple[str, ...]:
    parts = str(value).split(",")
    volume = next((p.partition("=")[2] for p in parts if p.startswith(("file=", "volume="))), parts[0])
    if _CLOUDINIT.search(volume):
        return ("VM.Config.Cloudinit", "VM.Config.CDROM")
    if "media=cdrom" in parts:
        return ("VM.Config.CDROM",)
    return ("VM.Config.Disk",)


def check_update_perms(pve, user: str, vm, p: dict) -> None:
    """Raise PVE's 403 for the first privilege ``update_vm_api`` finds ``user`` lacks for the write
    ``p`` (its form: keys, ``delete``) to ``vm``; root@pam passes (``return 1 if $authuser eq
    'root@pam'``)."""
    if user == "root@pam":
        return
    path = f"/vms/{vm.vmid}"
    old = {**{k: v for k, v in vm.pending.items() if v is not None}, **vm.config}
    deletes = split_list(p.get("delete"))
    written = [key for key in p if key not in _NOT_CONFIG]

    def need(*privileges: str) -> None:
        for privilege in privileges:
            pve.require(user, path, privilege)

    for key in [*deletes, *written]:
        if key in CLOUDINIT_OPTIONS or re.fullmatch(r"ipconfig\d+", key):
            either = ("VM.Config.Cloudinit", "VM.Config.Network")
            if not any(pve.allowed(user, path, privilege) for privilege in either):
                raise PveError(403, f"Permission check failed ({path}, {'|'.join(either)})")
    for key in deletes:
        if _DRIVE.fullmatch(key) and old.get(key):
            need(*_drive_privileges(old[key]))
    for key in written:
        if _DRIVE.fullmatch(key):
            if old.get(key):
                need(*_drive_privileges(old[key]))
            need(*_drive_privileges(p[key]))


def check_root_only(user: str, p: dict, old: dict | None = None) -> None:
    """Die as qemu-server does when ``user`` is not root@pam and the create or update form ``p``
    (``old``: the VM's values before an update) sets or deletes what only root@pam may: ``args``
    (``$check_vm_modify_config_perm``: "only root can set '<key>' config"), a ``usbN`` with a
    ``host=`` other than ``spice`` (``check_usb_perm``: "only root can set '<key>' config for real
    devices") or a ``hostpciN`` with ``host=`` (``check_hostpci_perm``: "... for non-mapped devices");
    an update checks the old value of a device too. Each is a bare ``die``: HTTP 500."""
    if user == "root@pam":
        return
    old = old or {}
    deletes = split_list(p.get("delete"))
    for key in sorted({*[k for k in p if k not in _NOT_CONFIG], *deletes}):
        if key == "args":
            raise PveError(500, f"only root can set '{key}' config\n")
        for value in (old.get(key), p.get(key)):
            parts = dict(part.partition("=")[::2] for part in str(value or "").split(",") if part)
            if "host" not in parts and value and "=" not in str(value).split(",")[0]:
                parts["host"] = str(value).split(",")[0]  # host is the default key
            host = parts.get("host")
            if re.fullmatch(r"usb\d+", key) and host and host.lower() != "spice":
                raise PveError(500, f"only root can set '{key}' config for real devices\n")
            if re.fullmatch(r"hostpci\d+", key) and host:
                raise PveError(500, f"only root can set '{key}' config for non-mapped devices\n")
