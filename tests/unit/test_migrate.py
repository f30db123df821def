"""The rules of a declared migration (``salt_proxmox.guest.migrate``), each with PVE's reason: what
qemu-server's preflight answer refuses, how a container's move is formed (pve-container
``LXC/Migrate.pm`` ``prepare``), the opt-in and its refusal by name."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from salt_proxmox.access.estate import chunk_needs
from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest import migrate
from salt_proxmox.guest.power import Power
from salt_proxmox.lxc.family import LXC
from salt_proxmox.pve.client import parse_target
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.run.lowstate import Chunk

DECL = SimpleNamespace(vmid=150, node="pve2")
DISK = {"volid": "local-lvm:vm-150-disk-0", "size": 16 * 1024**3, "cdrom": 0, "is_unused": 0}


@dataclass
class Client:
    """Answers each GET path (without its query) from ``answers``; records what was asked."""

    answers: dict[str, Any]
    asked: list[tuple[str, dict | None]] = field(default_factory=list)

    def request(self, method: str, path: str, credential: object, params: dict | None = None) -> Any:
        assert method == "GET"
        self.asked.append((path, params))
        return self.answers[path]


def context(answers: dict[str, Any]) -> SimpleNamespace:
    broker = SimpleNamespace(read=lambda: "read", provision=lambda: "provision")
    return SimpleNamespace(client=Client(answers), broker=broker, target=SimpleNamespace(name="lab"))


def preflight(answer: dict[str, Any]) -> tuple[dict, str, list[str]]:
    ctx = context({"nodes/pve1/qemu/150/migrate": answer})
    result = migrate._vm_preflight(ctx, QEMU, DECL, "pve1")
    # migrate_vm_precondition needs VM.Migrate: asked with the provision credential, for the target.
    assert ctx.client.asked == [("nodes/pve1/qemu/150/migrate", {"target": "pve2"})]
    return result


def test_a_stopped_vm_moves_offline_with_its_local_disks_counted() -> None:
    # migrate_vm: a stopped VM is migrated offline; local_disks carry their size in bytes.
    form, mode, refused = preflight({"running": 0, "allowed_nodes": ["pve2"], "local_disks": [DISK]})
    assert (form, mode, refused) == ({"target": "pve2"}, "offline, 1 disk of 16 GiB copied", [])


def test_a_running_vm_moves_online_with_local_disks() -> None:
    # migrate_vm: `can't migrate running VM without --online`; local disks go with with-local-disks.
    form, mode, _ = preflight({"running": 1, "allowed_nodes": ["pve2"], "local_disks": [DISK]})
    assert form == {"target": "pve2", "online": "1", "with-local-disks": "1"}
    assert mode.startswith("online, the VM keeps running")


def test_a_target_pve_does_not_allow_is_refused_with_its_reason() -> None:
    answer = {
        "running": 0,
        "allowed_nodes": [],
        "not_allowed_nodes": {"pve2": {"unavailable_storages": ["zfs"]}},
    }
    (refusal,) = preflight(answer)[2]
    assert "PVE does not allow a migration to pve2 (unavailable_storages: zfs;" in refusal


def test_a_target_that_is_no_other_node_is_refused_naming_the_allowed_ones() -> None:
    (refusal,) = preflight({"running": 0, "allowed_nodes": ["pve3"]})[2]
    assert "pve2 is not among the nodes PVE allows a migration to (pve3;" in refusal


def test_a_local_device_is_refused_a_mapped_one_is_not() -> None:
    # QemuMigrate.pm prepare: local resources that are not mapped block the move.
    answer = {
        "running": 0,
        "allowed_nodes": ["pve2"],
        "local_resources": ["hostpci0", "usb0"],
        "mapped-resource-info": {"usb0": {"name": "key", "live-migration": 0}},
    }
    (refusal,) = preflight(answer)[2]
    assert "`can't migrate VM which uses local devices: hostpci0`" in refusal


def test_a_running_vm_with_a_mapped_device_not_live_migratable_is_refused() -> None:
    # QemuMigrate.pm prepare: `can't live migrate running VM which uses following mapped devices`.
    answer = {"running": 1, "allowed_nodes": ["pve2"], "mapped-resource-info": {"usb0": {"name": "key"}}}
    (refusal,) = preflight(answer)[2]
    assert "following mapped devices: usb0:key`" in refusal


def test_a_local_cdrom_is_refused_a_cloudinit_drive_is_regenerated() -> None:
    # QemuMigrate.pm scan_local_volumes: `local cdrom image`, but a cloud-init drive is `generated`.
    iso = {"volid": "local:iso/debian.iso", "size": 1, "cdrom": 1}
    cloudinit = {"volid": "local-lvm:vm-150-cloudinit", "size": 4 * 1024**2, "cdrom": 1}
    _, mode, refused = preflight({"running": 0, "allowed_nodes": ["pve2"], "local_disks": [iso, cloudinit]})
    assert len(refused) == 1 and "its CD-ROM local:iso/debian.iso is a local image" in refused[0]
    assert mode == "offline, no local disk copied"


#: No shutdown_timeout declared (guest.power.parse_power).
UNDECLARED = Power(timeout_declared=False)


def container(live: dict[str, str], status: str, power: Power = UNDECLARED) -> tuple[dict, str, list[str]]:
    storages = [{"storage": "local-zfs", "enabled": 1, "shared": 0}, {"storage": "off", "enabled": 0}]
    ctx = context({"nodes/pve2/storage": storages, "nodes/pve1/lxc/150/status/current": {"status": status}})
    return migrate._ct_preflight(ctx, LXC, DECL, "pve1", live, power)


def test_a_running_container_moves_in_restart_mode_with_pves_timeout() -> None:
    # LXC/Migrate.pm prepare: `running container can only be migrated in restart mode`; API2/LXC.pm
    # migrate_vm: timeout defaults to 180 s.
    live = {
        "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
        "mp0": "local-zfs:subvol-150-disk-1,mp=/d,size=512M",
    }
    form, mode, refused = container(live, "running")
    assert form == {"target": "pve2", "restart": "1", "timeout": "180"} and refused == []
    assert mode == (
        "restart mode: it is shut down on pve1 (timeout 180 s), moved, and started on pve2, "
        "2 disks of 8.5 GiB copied"
    )
    form, _, _ = container(live, "running", Power(shutdown_timeout=30))
    assert form["timeout"] == "30"


def test_a_container_bind_mount_or_a_storage_the_target_lacks_is_refused() -> None:
    live = {
        "rootfs": "off:subvol-150-disk-0,size=8G",
        "mp0": "/srv/data,mp=/data",
        "mp1": "/srv/shared,mp=/shared,shared=1",
    }
    _, mode, refused = container(live, "stopped")
    assert mode == "offline, no local disk copied"
    assert any("`cannot migrate local bind mount point 'mp0'`" in r for r in refused)
    # pve-storage storage_check_enabled: a storage listed disabled there is not available.
    assert any("`storage 'off' is not available on node 'pve2'`" in r for r in refused)
    assert len(refused) == 2


def test_the_opt_in_is_the_guests_else_the_targets() -> None:
    ctx = SimpleNamespace(target=SimpleNamespace(migrate=True))
    assert migrate.opted_in(ctx, None) is True and migrate.opted_in(ctx, False) is False
    assert migrate.opted_in(SimpleNamespace(target=SimpleNamespace(migrate=False)), True) is True


def test_without_the_opt_in_the_refusal_names_it_and_the_node() -> None:
    text = migrate.not_opted_in(QEMU, DECL, "pve1", "lab")
    assert "lives on node pve1, not pve2" in text
    assert "migrate: true on this guest (or proxmox:targets:lab:migrate: true)" in text


@pytest.mark.parametrize("value", ["true", 1, None, "yes"])
def test_a_migrate_that_is_not_a_boolean_is_refused_by_name(value: object) -> None:
    assert migrate.option_problem("migrate", value).startswith("migrate: expected true or false")
    raw = {"members": ["https://pve1:8006"], "credentials": {}, "migrate": value}
    with pytest.raises(DeclarationError, match="proxmox:targets:lab:migrate: expected true or false"):
        parse_target("lab", raw)


def test_a_target_may_opt_every_guest_in() -> None:
    raw = {"members": ["https://pve1:8006"], "credentials": {}, "migrate": True}
    assert parse_target("lab", raw).migrate is True
    assert parse_target("lab", {**raw, "migrate": False}).migrate is False


@pytest.mark.parametrize(("text", "size"), [("8G", 8 * 1024**3), ("512M", 512 * 1024**2), ("1024", 1024)])
def test_sizes_are_read_as_pve_common_parse_size(text: str, size: int) -> None:
    assert migrate.size_bytes(text) == size


def test_a_declared_move_needs_vm_migrate_in_the_least_roles() -> None:
    # qemu-server API2/Qemu.pm migrate_vm and migrate_vm_precondition check VM.Migrate on /vms/<vmid>.
    args = {"vmid": 150, "node": "pve2", "memory": 2048}
    moved = chunk_needs(Chunk("web", "web", "proxmox_qemu", "present", {**args, "migrate": True}), "lab")
    assert any(n.privileges == ("VM.Migrate",) and n.path == "/vms/150" for n in moved)
    kept = chunk_needs(Chunk("web", "web", "proxmox_qemu", "present", args), "lab")
    assert kept and not any("VM.Migrate" in n.privileges for n in kept)
