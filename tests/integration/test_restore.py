"""Restore as a way to create, against the fake cluster's backup archives (tests.support.restore):
a container and a VM restored with new MACs, the rest of the declaration written after, then
re-planned clean; a missing archive and an unreadable storage refused at plan; ``restore:`` on a
present guest noted as ignored; a failed VM restore reported uncertain."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from salt_proxmox.guest import lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import CREATING, OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.qemu.props import parse_net
from tests.support.cluster import CT_ARCHIVE, CT_ARCHIVE_CONFIG, VM_ARCHIVE, VM_ARCHIVE_CONFIG
from tests.support.guests import TARGET, make_context, requests_since, static_targets, writes


def _ct(**over: Any) -> dict[str, Any]:
    declared = {
        "vmid": 160,
        "node": "pve1",
        "restore": CT_ARCHIVE,
        "rootfs": "local-lvm:8",
        "hostname": "web-restored",
        # The archive's NIC takes DHCP: this address is written after the restore.
        "net0": "name=eth0,bridge=vmbr0,ip=10.0.0.60/24,gw=10.0.0.1",
        **over,
    }
    return {key: value for key, value in declared.items() if value is not None}


def _vm(**over: Any) -> dict[str, Any]:
    declared = {"vmid": 260, "node": "pve1", "restore": VM_ARCHIVE, "name": "app-restored", "memory": 4096}
    declared.update(over)
    return {key: value for key, value in declared.items() if value is not None}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode()).items()}


def _hwaddr(value: str) -> str:
    return dict(part.split("=", 1) for part in value.split(","))["hwaddr"]


def test_a_container_is_restored_with_a_new_mac_then_written_as_declared_and_replanned_clean(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = lifecycle.present(ctx, LXC, "restored", True, **_ct())
    assert plan.result is None, plan.comment
    # The plan names the archive with its size and time from the content listing.
    assert (
        f"would be created by restoring {CT_ARCHIVE} (412.0 MiB, made 2026-11-30 02:00:00 UTC) with new MACs"
        in plan.comment[0]
    ), plan.comment
    assert plan.changes["restore"]["new"].startswith(CT_ARCHIVE)
    assert writes(requests_since(fresh_cluster, 0)) == []

    start = len(fresh_cluster.pve.requests)
    done = lifecycle.present(ctx, LXC, "restored", False, **_ct())
    assert done.result is True, done.comment
    sent = writes(requests_since(fresh_cluster, start))
    assert [(m, p) for m, p, _ in sent] == [
        ("POST", "/nodes/pve1/lxc"),
        ("PUT", "/nodes/pve1/lxc/160/config"),
    ]
    restore_form = _form(sent[0][2])
    # pve-container create_vm: the archive as ostemplate, restore=1, unique=1 (new MACs), never force.
    assert restore_form["ostemplate"] == CT_ARCHIVE and restore_form["restore"] == "1"
    assert "force" not in restore_form and restore_form["unique"] == "1"
    live = fresh_cluster.pve.ct(160).config
    assert live["hostname"] == "web-restored" and live["ostype"] == "debian"
    mac = _hwaddr(live["net0"])
    assert mac != _hwaddr(CT_ARCHIVE_CONFIG["net0"]), "unique=1 gives the restored NIC a new MAC"
    assert f"hwaddr={mac}" in _form(sent[1][2])["net0"], "the declared net0 is written keeping the new MAC"
    assert _hwaddr(live["net0"]) == mac
    assert store.rows[row_key(TARGET, "lxc", 160)]["phase"] == OWNED

    again = lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "restored", True, **_ct()
    )
    assert again.result is True and again.changes == {}, again.comment
    # restore: on a present guest is said to be ignored, never silent.
    assert any("restore: " + CT_ARCHIVE + " is ignored, the guest exists" in line for line in again.comment)


def test_a_container_restore_is_judged_at_plan_against_the_container_the_archive_makes(fresh_cluster):
    """pve-container ``API2/LXC.pm`` ``create_vm`` restores the archive's config (pve-manager
    ``API2/VZDump.pm`` ``extractconfig`` shows it to the read token) merged by ``LXC/Create.pm``
    ``sanitize_and_merge_config``: keys the archive holds equal are not written after the restore,
    keys that differ are, the MAC ``unique`` draws is no drift, and an archived mount point is dropped
    when ``rootfs`` is sent (only the mount points sent are allocated), which the plan says. A
    declared ``unprivileged`` other than the archive's is refused at plan (read-only)."""
    archive = fresh_cluster.pve.archives[CT_ARCHIVE]
    archive["mp0"] = "local-lvm:vm-150-disk-1,mp=/srv/data,backup=1,size=4G"
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    # memory 1024 and swap 512 are the archive's; cores and the address differ.
    declared = _ct(memory=1024, swap=512, cores=4)
    plan = lifecycle.present(ctx, LXC, "restored", True, **declared)
    assert plan.result is None, plan.comment
    assert "CT 160 on pve1: then written onto the restored guest where it differs: cores, hostname, net0" in (
        plan.comment
    ), plan.comment
    assert plan.changes["hostname"] == {"old": "web-old", "new": "web-restored"}
    assert plan.changes["cores"] == {"old": "2", "new": "4"}
    assert plan.changes["net0"] == {"old": "ip=dhcp", "new": "gw=10.0.0.1,ip=10.0.0.60/24"}
    assert {"memory", "swap", "rootfs"}.isdisjoint(plan.changes), plan.changes
    dropped = [line for line in plan.comment if "the archive's mp0" in line]
    assert dropped and "extracted under /srv/data into the mount points sent" in dropped[0], plan.comment
    start = len(fresh_cluster.pve.requests)
    done = lifecycle.present(ctx, LXC, "restored", False, **declared)
    assert done.result is True, done.comment
    sent = writes(requests_since(fresh_cluster, start))
    assert [(m, p) for m, p, _ in sent] == [
        ("POST", "/nodes/pve1/lxc"),
        ("PUT", "/nodes/pve1/lxc/160/config"),
    ]
    assert sorted(set(_form(sent[1][2])) - {"digest"}) == ["cores", "hostname", "net0"], (
        "the apply writes the plan"
    )
    live = fresh_cluster.pve.ct(160).config
    assert "mp0" not in live and live["unprivileged"] == 1 and live["memory"] == 1024
    again = lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "restored", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment

    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
        privileged = lifecycle.present(ctx, LXC, "priv", test, **_ct(vmid=161, unprivileged=0))
        assert privileged.result is False, privileged.comment
        assert "unprivileged: live 1, declared 0" in " ".join(privileged.comment), privileged.comment
    assert writes(requests_since(fresh_cluster, start)) == [] and fresh_cluster.pve.ct(161) is None


def test_a_declared_mount_point_is_restored_with_the_container_and_the_rootfs_move_is_said(fresh_cluster):
    """``create_vm`` allocates each mount point sent (``$mp_param``) before ``restore_archive``
    extracts into them, so a declared volume ``mpN`` goes with the restore and its files land in it;
    the plan says where ``rootfs`` moves from the archive's storage and size."""
    fresh_cluster.pve.archives[CT_ARCHIVE]["mp0"] = "local-lvm:vm-150-disk-1,mp=/srv/data,backup=1,size=4G"
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    declared = _ct(rootfs="local-lvm:10", mp0="local-lvm:4,mp=/srv/data,backup=1")
    plan = lifecycle.present(ctx, LXC, "restored", True, **declared)
    assert plan.result is None, plan.comment
    assert (
        "CT 160 on pve1: rootfs is restored onto a new volume on local-lvm of 10G (the archive's: local-lvm, "
        "8G); pve-container create_vm allocates the rootfs sent with the restore."
    ) in plan.comment, plan.comment
    assert not any("the archive's mp0" in line for line in plan.comment), plan.comment
    assert "mp0" not in plan.changes, plan.changes
    start = len(fresh_cluster.pve.requests)
    done = lifecycle.present(ctx, LXC, "restored", False, **declared)
    assert done.result is True, done.comment
    sent = writes(requests_since(fresh_cluster, start))
    assert _form(sent[0][2])["mp0"] == "local-lvm:4,mp=/srv/data,backup=1"
    assert "mp0" not in _form(sent[1][2])
    assert "mp=/srv/data" in fresh_cluster.pve.ct(160).config["mp0"]
    again = lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "restored", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment


def test_a_vm_is_restored_with_new_macs_and_ids_then_written_as_declared_and_replanned_clean(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = lifecycle.present(ctx, QEMU, "app", True, **_vm())
    assert plan.result is None and f"by restoring {VM_ARCHIVE} (412.0 MiB" in plan.comment[0], plan.comment

    start = len(fresh_cluster.pve.requests)
    done = lifecycle.present(ctx, QEMU, "app", False, **_vm())
    assert done.result is True, done.comment
    sent = writes(requests_since(fresh_cluster, start))
    assert [(m, p) for m, p, _ in sent] == [
        ("POST", "/nodes/pve1/qemu"),
        ("POST", "/nodes/pve1/qemu/260/config"),
    ]
    # qemu-server create_vm: archive and unique=1 only, no drive key beside the archive.
    assert set(_form(sent[0][2])) <= {"vmid", "archive", "unique", "storage", "pool"}, sent[0][2]
    live = fresh_cluster.pve.vm(260).config
    assert live["name"] == "app-restored" and int(live["memory"]) == 4096
    assert parse_net(live["net0"])["macaddr"] != parse_net(VM_ARCHIVE_CONFIG["net0"])["macaddr"]
    assert live["vmgenid"] != VM_ARCHIVE_CONFIG["vmgenid"]
    assert store.rows[row_key(TARGET, "qemu", 260)]["phase"] == OWNED

    again = lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), QEMU, "app", True, **_vm()
    )
    assert again.result is True and again.changes == {}, again.comment


def test_a_missing_archive_is_refused_at_plan_and_nothing_is_written(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    missing = "local:backup/vzdump-lxc-150-2026_01_01-00_00_00.tar.zst"
    plan = lifecycle.present(ctx, LXC, "restored", True, **_ct(restore=missing))
    assert plan.result is False, plan.comment
    text = " ".join(plan.comment)
    assert f"lists no archive {missing}" in text and "check_volume_access" in text
    assert writes(requests_since(fresh_cluster, 0)) == []


def test_an_archive_on_a_storage_the_node_cannot_read_is_refused_with_pve_s_reason(fresh_cluster):
    fresh_cluster.pve.storages["local"]["nodes"] = "pve2"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = lifecycle.present(ctx, LXC, "restored", True, **_ct())
    assert plan.result is False
    assert "which pve1 cannot read" in " ".join(plan.comment), plan.comment


def test_a_container_restore_onto_a_storage_without_containers_is_refused_at_plan(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = lifecycle.present(ctx, LXC, "restored", True, **_ct(rootfs="local:8"))
    assert plan.result is False
    assert "not containers (content rootdir)" in " ".join(plan.comment), plan.comment


def test_a_failed_vm_restore_is_uncertain_and_its_row_stays_creating(fresh_cluster):
    fresh_cluster.pve.failing_restores.add(VM_ARCHIVE)
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    done = lifecycle.present(ctx, QEMU, "app", False, **_vm())
    assert done.result is False
    text = " ".join(done.comment)
    assert "can leave" in text and "neither absent nor ours" in text, done.comment
    assert store.rows[row_key(TARGET, "qemu", 260)]["phase"] == CREATING
    # The next plan does not call it absent, nor ours.
    again = lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), QEMU, "app", True, **_vm()
    )
    assert again.result is False, again.comment
    assert "would be created" not in " ".join(again.comment)


def test_unique_false_keeps_the_archive_s_macs(fresh_cluster):
    # pve-container create_vm: without unique the restored NICs keep the archive's hwaddr.
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = lifecycle.present(ctx, LXC, "restored", True, **_ct(unique=False))
    assert "keeping the archive's MACs (unique: false)" in plan.comment[0], plan.comment
    done = lifecycle.present(ctx, LXC, "restored", False, **_ct(unique=False))
    assert done.result is True, done.comment
    assert _hwaddr(fresh_cluster.pve.ct(160).config["net0"]) == _hwaddr(CT_ARCHIVE_CONFIG["net0"])


def test_a_vm_restore_is_judged_at_plan_against_the_config_the_archive_holds(fresh_cluster):
    """qemu-server ``API2/Qemu.pm`` ``create_vm`` refuses drive keys beside ``archive`` (``option
    conflicts with option 'archive'``), so the declaration is written onto the restored VM. The plan
    reads the archive's config (pve-manager ``API2/VZDump.pm`` ``extractconfig``) and judges the
    declaration against the VM the restore makes (``QemuServer.pm`` ``restore_update_config_line``):
    only what differs is written, a disk that grows is resized, one smaller than the archive's is
    refused before anything is restored, as is a ``storage`` without content images
    (``$parse_backup_hints``: ``Content type 'images' is not available on storage``)."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    # memory 2048 is the archive's: nothing to write; name differs; scsi0 grows 8G -> 16G.
    declared = _vm(memory=2048, scsi0="local-lvm:16,iothread=1")
    plan = lifecycle.present(ctx, QEMU, "app", True, **declared)
    assert plan.result is None, plan.comment
    assert (
        "VM 260 on pve1: then written onto the restored guest where it differs: name, scsi0" in plan.comment
    )
    assert plan.changes["name"] == {"old": "app-old", "new": "app-restored"}
    assert plan.changes["disks"] == {"scsi0": {"old": "8G", "new": "16G"}}
    assert "memory" not in plan.changes
    start = len(fresh_cluster.pve.requests)
    done = lifecycle.present(ctx, QEMU, "app", False, **declared)
    assert done.result is True, done.comment
    sent = writes(requests_since(fresh_cluster, start))
    assert [(m, p) for m, p, _ in sent] == [
        ("POST", "/nodes/pve1/qemu"),
        ("POST", "/nodes/pve1/qemu/260/config"),
        ("PUT", "/nodes/pve1/qemu/260/resize"),
    ]
    assert "memory" not in _form(sent[1][2])
    again = lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), QEMU, "app", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment

    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
        smaller = lifecycle.present(ctx, QEMU, "app2", test, **_vm(vmid=261, scsi0="local-lvm:4,iothread=1"))
        assert smaller.result is False, smaller.comment
        assert "shrinking disks is not supported" in " ".join(smaller.comment), smaller.comment
        onto_dir = lifecycle.present(ctx, QEMU, "app3", test, **_vm(vmid=262, storage="local"))
        assert onto_dir.result is False, onto_dir.comment
        text = " ".join(onto_dir.comment)
        assert "scsi0 would be restored onto storage local, which holds iso,vztmpl,backup" in text
        assert "`Content type 'images' is not available on storage 'local'`" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.vm(261) is None and fresh_cluster.pve.vm(262) is None


def test_an_archive_config_read_empty_is_malformed_not_an_empty_guest(fresh_cluster):
    """pve-storage ``PVE/Storage.pm`` ``extract_vzdump_config_tar``/``extract_vzdump_config_vma`` die
    ``ERROR: archive contains no configuration file`` rather than answer nothing, and every guest
    config vzdump saves holds keys: an ``extractconfig`` answer with no ``key: value`` line is no
    config PVE would give. Judging the VM the restore makes against it would plan writes the apply
    then could not match, so it is a malformed answer, refused at plan and apply, nothing written."""
    fresh_cluster.pve.archives[VM_ARCHIVE] = {}
    for test in (True, False):
        ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
        outcome = lifecycle.present(ctx, QEMU, "app", test, **_vm())
        assert outcome.result is False, outcome.comment
        text = " ".join(outcome.comment)
        assert "extractconfig" in text and "malformed answer" in text and "no configuration" in text, text
    assert writes(requests_since(fresh_cluster, 0)) == []


def test_a_privileged_archive_restored_as_a_new_container_needs_sys_modify_on_pve9(fresh_cluster):
    """pve-container 6 (PVE 9) ``API2/LXC.pm`` ``create_vm``: once the archive's ``unprivileged`` is
    taken, "creating a new privileged container is checked here": Sys.Modify on /. PVE 8's
    ``create_vm`` does not ask it."""
    from tests.support.cluster import PROVISION_TOKEN_ID

    pve = fresh_cluster.pve
    pve.archives[CT_ARCHIVE]["unprivileged"] = 0
    pve.acl[PROVISION_TOKEN_ID] = [
        (path, privs - {"Sys.Modify"}) for path, privs in pve.acl[PROVISION_TOKEN_ID]
    ]
    start = len(pve.requests)
    plan = lifecycle.present(
        make_context(static_targets(fresh_cluster), cache={}), LXC, "restored", True, **_ct()
    )
    said = "\n".join(plan.comment)
    assert plan.result is False and "Sys.Modify on /" in said and PROVISION_TOKEN_ID in said, said
    assert writes(requests_since(fresh_cluster, start)) == []
    pve.archives[CT_ARCHIVE]["unprivileged"] = 1
    unprivileged = lifecycle.present(
        make_context(static_targets(fresh_cluster)), LXC, "restored", True, **_ct()
    )
    assert unprivileged.result is None, unprivileged.comment
    pve.archives[CT_ARCHIVE]["unprivileged"] = 0
    pve.version, pve.release_version = "8.4.14", "8.4"
    on_8 = lifecycle.present(make_context(static_targets(fresh_cluster)), LXC, "restored", True, **_ct())
    assert on_8.result is None, on_8.comment
