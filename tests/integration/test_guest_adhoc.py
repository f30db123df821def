"""The ad-hoc guest calls of the ``proxmox`` execution module, loaded as Salt loads it, against the
fake PVE: ``proxmox.qemu_create``, ``qemu_update`` and ``qemu_resize`` obey ownership and the
row's fingerprint exactly as their container twins (``lxc_create``, ``lxc_update``, ``lxc_resize``)
do, through the same code (``_modules/proxmox.py`` ``_adhoc``/``_resize``, ``salt_proxmox.guest.adhoc``).

qemu-server ``PVE/API2/Qemu.pm``: ``create_vm`` (``POST /nodes/{node}/qemu``), ``update_vm_api``
(``POST …/config``, digest-guarded), ``resize_vm`` (``PUT …/resize``)."""

from __future__ import annotations

import pytest
from salt.exceptions import CommandExecutionError

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.rows import OWNED, row_key
from tests.support.cluster import ROUTER_VMID
from tests.support.guests import TARGET, requests_since, static_targets, writes
from tests.support.salt_modules import execution_module

KEY = row_key(TARGET, "qemu", 160)
VM = {"name": "app", "memory": 1024, "ostype": "l26", "scsi0": "local-lvm:4", "net0": "virtio,bridge=vmbr0"}


def _module(cluster, rows_file):
    """``_modules/proxmox.py`` with the cluster as its one target and its rows in ``rows_file``."""
    return execution_module(
        {"proxmox:targets": static_targets(cluster), "proxmox:ownership_file": str(rows_file)}
    )


def _rows(rows_file) -> dict:
    return FileStore(str(rows_file)).load()


def test_qemu_create_update_and_resize_write_and_record_a_vm_as_ours(fresh_cluster, tmp_path):
    rows_file = tmp_path / "owned.json"
    proxmox = _module(fresh_cluster, rows_file)
    made = proxmox.qemu_create(node="pve1", vmid=160, **VM)
    assert made["result"] is True and "created" in made["changes"], made
    live = fresh_cluster.pve.vm(160).config
    assert live["name"] == "app" and str(live["memory"]) == "1024"
    assert _rows(rows_file)[KEY]["phase"] == OWNED

    updated = proxmox.qemu_update(node="pve1", vmid=160, memory=2048)
    assert updated["result"] is True and updated["changes"]["memory"] == {"old": "1024", "new": "2048"}
    # The keys merge over the recorded declaration: the name and the disk stay as declared.
    assert fresh_cluster.pve.vm(160).config["name"] == "app"
    assert _rows(rows_file)[KEY]["declared"]["memory"] == "2048"

    before = _rows(rows_file)[KEY]["fingerprint"]["scsi0"]
    grown = proxmox.qemu_resize(node="pve1", vmid=160, disk="scsi0", size="+1G")
    assert grown["upid"].startswith("UPID:pve1:") and grown["disk"] == "scsi0"
    assert "size=5G" in fresh_cluster.pve.vm(160).config["scsi0"]
    after = _rows(rows_file)[KEY]["fingerprint"]["scsi0"]
    assert after != before and after.endswith("size=5G"), after


@pytest.mark.parametrize(
    "call",
    [
        lambda proxmox: proxmox.qemu_update(node="pve2", vmid=ROUTER_VMID, memory=4096),
        lambda proxmox: proxmox.qemu_resize(node="pve2", vmid=ROUTER_VMID, disk="scsi0", size="+1G"),
    ],
    ids=["update", "resize"],
)
def test_qemu_writes_to_a_vm_this_minion_did_not_create_are_refused(fresh_cluster, tmp_path, call):
    """VM 300 was made by hand: no ``owned`` row, so no ad-hoc write touches it (as ``lxc_update``
    and ``lxc_resize`` refuse a container), and nothing is sent."""
    proxmox = _module(fresh_cluster, tmp_path / "owned.json")
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(CommandExecutionError, match="adopt: true"):
        call(proxmox)
    assert writes(requests_since(fresh_cluster, start)) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda proxmox: proxmox.qemu_update(node="pve1", vmid=160, memory=4096),
        lambda proxmox: proxmox.qemu_resize(node="pve1", vmid=160, disk="scsi0", size="+1G"),
    ],
    ids=["update", "resize"],
)
def test_qemu_writes_to_a_recycled_vmid_are_refused_by_the_fingerprint(fresh_cluster, tmp_path, call):
    """Our VM 160 destroyed by hand and another VM 160 made: it does not carry the row's
    fingerprint (its disk is another volume), so the row authorizes no write to it."""
    proxmox = _module(fresh_cluster, tmp_path / "owned.json")
    assert proxmox.qemu_create(node="pve1", vmid=160, **VM)["result"] is True
    pve = fresh_cluster.pve
    pve.vms.remove(pve.vm(160))
    pve.add_vm(
        160,
        "app",
        node="pve1",
        config={"name": "app", "memory": 1024, "scsi0": "local-lvm:vm-160-disk-7,size=32G"},
    )
    theirs = dict(pve.vm(160).config)
    start = len(pve.requests)
    with pytest.raises(CommandExecutionError, match="fingerprint"):
        call(proxmox)
    assert writes(requests_since(fresh_cluster, start)) == []
    assert pve.vm(160).config == theirs
