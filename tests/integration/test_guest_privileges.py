"""A change to an existing guest that the provision token may not make is refused at plan with the
privilege, the path and the ``pveum`` lines that grant it, and PVE (``tests.support.qemu.QemuPve``, which
checks ``update_vm_api``'s privileges as qemu-server does) refuses the same write with the same
privilege; granted, the plan is a write (``salt_proxmox/access/guest_keys.py``)."""

from __future__ import annotations

from typing import Any

from salt_proxmox.guest import lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from tests.support.cluster import PROVISION_TOKEN_ID
from tests.support.guests import declaration, make_context, requests_since, static_targets, vm, writes


def _without(pve, privilege: str) -> None:
    pve.acl[PROVISION_TOKEN_ID] = [(path, privs - {privilege}) for path, privs in pve.acl[PROVISION_TOKEN_ID]]


def _grant(pve, privilege: str) -> None:
    pve.grant(PROVISION_TOKEN_ID, "/", privilege)


def _run(served, family, store, state: str, test: bool, declared: dict[str, Any]):
    ctx = make_context(static_targets(served), store=store, cache={})
    return lifecycle.present(ctx, family, state, test, **declared)


#: A VM without cloud-init; the change adds a cloud-init drive and cloud-init keys.
_PLAIN = {key: None for key in ("ide0", "ide2", "ciuser", "sshkeys", "ipconfig0")}
_CLOUD_INIT = {"ide2": "local-lvm:cloudinit", "ciuser": "ops", "ipconfig0": "ip=dhcp"}


def test_a_cloud_init_drive_added_to_a_vm_without_cloudinit_is_refused_at_plan_as_pve_refuses_it(
    fresh_cluster,
):
    """qemu-server API2/Qemu.pm update_vm_api: ciuser and ipconfig0 pass with VM.Config.Network
    ($check_vm_modify_config_perm: Cloudinit or Network); the drive ``local-lvm:cloudinit``
    (drive_is_cloudinit, no media=cdrom) needs VM.Config.Cloudinit and VM.Config.CDROM
    ($check_drive_perms)."""
    pve, store = fresh_cluster.pve, MemoryStore()
    plain = {k: v for k, v in vm(**_PLAIN).items() if v is not None}
    assert _run(fresh_cluster, QEMU, store, "web", False, plain).result is True
    _without(pve, "VM.Config.Cloudinit")
    declared = {**plain, **_CLOUD_INIT}
    start = len(pve.requests)
    plan = _run(fresh_cluster, QEMU, store, "web", True, declared)
    said = "\n".join(plan.comment)
    assert plan.result is False, said
    assert "lacks VM.Config.Cloudinit on /vms/150" in said, said
    assert "ide2 of VM 150" in said and "$check_drive_perms" in said, said
    assert f"pveum acl modify /vms/150 --tokens '{PROVISION_TOKEN_ID}'" in said, said
    assert "Permission check failed (/vms/150, VM.Config.Cloudinit)" in said, said
    assert writes(requests_since(fresh_cluster, start)) == []
    # The apply leaves the check to PVE, which refuses the write for the same privilege.
    applied = _run(fresh_cluster, QEMU, store, "web", False, declared)
    assert applied.result is False, applied.comment
    assert "Permission check failed (/vms/150, VM.Config.Cloudinit)" in "\n".join(applied.comment)
    assert "ide2" not in pve.vm(150).config and "ciuser" not in pve.vm(150).config
    _grant(pve, "VM.Config.Cloudinit")
    granted = _run(fresh_cluster, QEMU, store, "web", True, declared)
    assert granted.result is None, granted.comment
    assert _run(fresh_cluster, QEMU, store, "web", False, declared).result is True
    assert pve.vm(150).config["ide2"].endswith("media=cdrom") and pve.vm(150).config["ciuser"] == "ops"


def test_a_container_disk_grown_without_vm_config_disk_is_refused_at_plan_as_pve_refuses_it(fresh_cluster):
    """pve-container API2/LXC.pm resize_vm: VM.Config.Disk on /vms/<vmid> (its ``permissions``), and
    check_ct_modify_config_perm of disk and size (VM.Config.Options)."""
    pve, store = fresh_cluster.pve, MemoryStore()
    declared = declaration(151, mp0=None)
    assert _run(fresh_cluster, LXC, store, "db", False, declared).result is True
    _without(pve, "VM.Config.Disk")
    grown = {**declared, "rootfs": "local-zfs:10"}
    start = len(pve.requests)
    plan = _run(fresh_cluster, LXC, store, "db", True, grown)
    said = "\n".join(plan.comment)
    assert plan.result is False, said
    assert "lacks VM.Config.Disk on /vms/151" in said and "resize rootfs of CT 151" in said, said
    assert f"pveum acl modify /vms/151 --tokens '{PROVISION_TOKEN_ID}'" in said, said
    assert writes(requests_since(fresh_cluster, start)) == []
    applied = _run(fresh_cluster, LXC, store, "db", False, grown)
    assert applied.result is False, applied.comment
    assert "Permission check failed (/vms/151, VM.Config.Disk)" in "\n".join(applied.comment)
    assert "size=8G" in pve.guest(151).config["rootfs"]
    _grant(pve, "VM.Config.Disk")
    assert _run(fresh_cluster, LXC, store, "db", True, grown).result is None
