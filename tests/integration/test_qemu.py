"""VMs against a fake PVE (fakepve extended by ``tests.support.qemu.QemuPve`` where qemu-server differs):
create from scratch and by clone, the MAC kept across applies, disks grown in place, the password as a
secret, refusals that write nothing, and the request counts of a no-drift plan and apply.

Where fakepve differs from PVE (``memory`` read back as ``2048`` where PVE 9 prints ``current=2048``),
the unit tests (``tests/unit/test_qemu_judge.py``) pin PVE's spelling."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import pytest

from salt_proxmox.guest import lifecycle
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.qemu.props import parse_net
from tests.support.cluster import CLOUD_TEMPLATE_CONFIG, CLOUD_TEMPLATE_VMID, ISO, PROVISION_TOKEN_ID
from tests.support.guests import (
    TARGET,
    bao_targets,
    make_context,
    requests_since,
    static_targets,
    vm,
    writes,
)

PASSWORD = "correct-horse-battery-staple"


def present(ctx, state_id: str, test: bool, **declared: Any):
    return lifecycle.present(ctx, QEMU, state_id, test, **declared)


def config(served, vmid: int) -> dict[str, Any]:
    return dict(served.pve.vm(vmid).config)


def test_create_from_scratch_then_second_plan_is_clean(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = present(ctx, "web", True, **vm())
    assert plan.result is None and "would be created from scratch" in plan.comment[0], plan.comment
    assert writes(requests_since(fresh_cluster, 0)) == [] and store.saves == 0

    start = len(fresh_cluster.pve.requests)
    done = present(ctx, "web", False, **vm())
    assert done.result is True, done.comment
    # create_vm: one POST, a task; sshkeys URL-encoded as encodeURIComponent does (%20, never '+').
    ((method, path, form),) = writes(requests_since(fresh_cluster, start))
    assert (method, path) == ("POST", "/nodes/pve1/qemu")
    sent = str(form)
    assert "ssh-ed25519%2520AAAA" in sent or "ssh-ed25519%20AAAA" in sent
    live = config(fresh_cluster, 150)
    assert parse_net(live["net0"]).get("macaddr"), "PVE drew a MAC"
    assert live["ide0"].startswith("local-lvm:vm-150-cloudinit")
    assert store.rows[row_key(TARGET, "qemu", 150)]["phase"] == OWNED

    again = present(make_context(static_targets(fresh_cluster), store=store), "web", True, **vm())
    assert again.result is True and again.changes == {}, again.comment


def test_create_by_clone_writes_the_declaration_onto_the_clone(fresh_cluster):
    store = MemoryStore()
    declared = {
        "vmid": 151,
        "node": "pve1",
        "clone": CLOUD_TEMPLATE_VMID,
        "full": True,
        "storage": "local-lvm",
        "name": "app",
        "cores": 4,
        "scsi0": "local-lvm:10,discard=on,iothread=1",
        "ipconfig0": "ip=10.0.0.51/24,gw=10.0.0.1",
    }
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = present(ctx, "app", True, **declared)
    assert plan.result is None and "full clone of template VM 9000" in plan.comment[0], plan.comment
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, "app", False, **declared)
    assert done.result is True, done.comment
    steps = [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))]
    assert steps == [
        ("POST", "/nodes/pve1/qemu/9000/clone"),
        ("POST", "/nodes/pve1/qemu/151/config"),
        ("PUT", "/nodes/pve1/qemu/151/resize"),
    ]
    live = config(fresh_cluster, 151)
    assert live["cores"] == 4 and "size=10G" in live["scsi0"] and live["ipconfig0"].startswith("ip=10.0.0.51")
    # clone_vm draws a new MAC; it is the clone's, not drift.
    assert parse_net(live["net0"])["macaddr"] != parse_net(CLOUD_TEMPLATE_CONFIG["net0"])["macaddr"]
    again = present(make_context(static_targets(fresh_cluster), store=store), "app", True, **declared)
    assert again.result is True and again.changes == {}, again.comment


def test_a_clone_of_a_vm_that_is_not_a_template_is_refused_at_plan(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    assert present(ctx, "web", False, **vm()).result
    outcome = present(ctx, "app", True, vmid=152, node="pve1", clone=150)
    assert outcome.result is False and "VM 150 is not a template" in "\n".join(outcome.comment)


def test_the_mac_survives_ten_applies_that_change_tags_memory_and_disk_size(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, "web", False, **vm()).result
    mac = parse_net(config(fresh_cluster, 150)["net0"])["macaddr"]
    for run in range(1, 11):
        declared = vm(
            memory=2048 + 256 * run,
            tags=f"web;run{run}",
            net0=f"virtio,bridge=vmbr0,tag={20 + run}",
            scsi0=f"local-lvm:{8 + run},discard=on,iothread=1",
        )
        done = present(make_context(static_targets(fresh_cluster), store=store), "web", False, **declared)
        assert done.result is True, done.comment
        live = config(fresh_cluster, 150)
        assert parse_net(live["net0"])["macaddr"] == mac, f"apply {run} changed the MAC"
        assert f"tag={20 + run}" in live["net0"] and f"size={8 + run}G" in live["scsi0"]
        clean = present(make_context(static_targets(fresh_cluster), store=store), "web", True, **declared)
        assert clean.result is True and clean.changes == {}, clean.comment


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"scsi0": "local-lvm:4,discard=on,iothread=1"}, "shrinking disks is not supported"),
        ({"scsi0": "local:8,discard=on,iothread=1"}, "qm disk move"),
        ({"args": "-device foo"}, "qm set 150 --args '-device foo'"),
        ({"hostpci0": "0000:01:00.0"}, "qm set 150 --hostpci0"),
        ({"scsi1": "local-lvm:vm-9000-disk-0"}, "a volume of vmid 9000"),
        # update_vm_api: "invalid bootorder: device 'scsi5' does not exist".
        ({"boot": "order=scsi5;scsi0"}, "invalid bootorder: device 'scsi5' does not exist"),
        # Drive.pm parse_drive stores bps as mbps; verify_bootdev refuses efidisk0; no CD-ROM on virtio.
        ({"scsi0": "local-lvm:8,discard=on,iothread=1,bps=1048576"}, "stored by PVE as mbps="),
        ({"boot": "order=efidisk0;scsi0"}, "invalid boot device 'efidisk0'"),
        ({"virtio1": "none,media=cdrom"}, "a CD-ROM cannot be on virtio1"),
        # update_vm_api: balloon above memory; Memory.pm: memory hot-plug needs NUMA and aligned DIMMs.
        ({"balloon": 4096}, "balloon value too large (must be smaller than assigned memory)"),
        ({"hotplug": "network,disk,memory"}, "NUMA needs to be enabled for memory hotplug"),
        ({"hotplug": "network,disk,memory", "numa": 1, "memory": 1800}, "must be aligned to 512"),
    ],
)
def test_refusals_write_nothing(fresh_cluster, over, needle):
    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        outcome = present(make_context(static_targets(fresh_cluster), store=store), "web", test, **vm(**over))
        assert outcome.result is False and needle in "\n".join(outcome.comment), outcome.comment
        assert writes(requests_since(fresh_cluster, start)) == []


def test_a_cdrom_naming_a_missing_iso_is_refused_at_plan_for_a_create_and_for_a_change(fresh_cluster):
    """qemu-server refuses a write naming an ISO that is not there (create_disks: volume does not exist),
    so the plan reads GET …/storage/local/content/<volume> (pve-storage Content.pm info) once per
    volume and run, and refuses it. fakepve answers that read as PVE does for a file storage (HTTP 500
    "volume_size_info on '…' failed - no format"); tests/unit/test_qemu_iso.py pins PVE's other
    wordings and the 403."""
    missing = "local:iso/missing.iso"
    info = f"/nodes/pve1/storage/local/content/{missing}"
    store = MemoryStore()
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        ctx = make_context(static_targets(fresh_cluster), store=store)
        outcome = present(ctx, "web", test, **vm(ide2=f"{missing},media=cdrom"))
        said = "\n".join(outcome.comment)
        assert outcome.result is False, outcome.comment
        assert f"ide2: {missing} is not on storage local" in said and "Upload the ISO to local" in said
        log = requests_since(fresh_cluster, start)
        assert writes(log) == [] and [p for m, p, _ in log if p == info] == [info]
    assert 150 not in fresh_cluster.pve.vms and store.saves == 0

    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        ctx = make_context(static_targets(fresh_cluster), store=store)
        outcome = present(ctx, "web", test, **vm(ide2=f"{missing},media=cdrom"))
        assert outcome.result is False and f"ide2: {missing}" in "\n".join(outcome.comment), outcome.comment
        assert writes(requests_since(fresh_cluster, start)) == []
    assert config(fresh_cluster, 150)["ide2"].startswith(ISO)


@pytest.mark.parametrize(
    "volume",
    ["local-lvm:vm-300-disk-0", "local-lvm:base-9000-disk-0"],
    ids=["running-vm-300-disk", "template-9000-disk"],
)
def test_a_cdrom_naming_another_guest_s_disk_is_refused_at_plan_for_a_create_and_for_a_swap(
    fresh_cluster, volume
):
    """A CD-ROM names media (an ISO image, none, cdrom). qemu-server $check_storage_access takes an
    images volume on a CD-ROM and pve-storage check_volume_access lets through any volume the caller
    may access, so ``ide2: <another guest's disk>,media=cdrom`` would attach that guest's data to this
    VM (fakepve attaches it too): refused like the same volume on scsi1, at plan and apply."""
    cdrom = f"{volume},media=cdrom"
    store = MemoryStore()
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        outcome = present(
            make_context(static_targets(fresh_cluster), store=store), "web", test, **vm(ide2=cdrom)
        )
        said = "\n".join(outcome.comment)
        assert outcome.result is False, outcome.comment
        assert (
            f"ide2: {volume} is not an ISO image, a volume of vmid" in said and "a CD-ROM names media" in said
        )
        assert writes(requests_since(fresh_cluster, start)) == []
    assert 150 not in fresh_cluster.pve.vms and store.saves == 0

    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    own = config(fresh_cluster, 150)["scsi0"].split(",")[0]
    for swapped in (volume, own):
        for test in (True, False):
            start = len(fresh_cluster.pve.requests)
            ctx = make_context(static_targets(fresh_cluster), store=store)
            outcome = present(ctx, "web", test, **vm(ide2=f"{swapped},media=cdrom"))
            assert outcome.result is False, outcome.comment
            assert f"ide2: {swapped} is not an ISO image" in "\n".join(outcome.comment)
            assert writes(requests_since(fresh_cluster, start)) == []
    assert config(fresh_cluster, 150)["ide2"].startswith(ISO)


def test_cipassword_is_a_secret_written_when_unset_and_again_on_a_new_serial(fresh_cluster):
    store = MemoryStore()

    def run(test: bool, **over: Any):
        return present(make_context(static_targets(fresh_cluster), store=store), "web", test, **vm(**over))

    start = len(fresh_cluster.pve.requests)
    created = run(False, cipassword=PASSWORD, cipassword_serial=1)
    assert created.result is True, created.comment
    # qemu-server create_vm writes its form into /etc/pve as sent; only update_vm_api hashes
    # cipassword (PVE::Tools::encrypt_pw): the create form never carries it, the config write after it does.
    (create, (method, path, form)) = writes(requests_since(fresh_cluster, start))
    assert create[:2] == ("POST", "/nodes/pve1/qemu") and "cipassword" not in str(create[2])
    assert (method, path) == ("POST", "/nodes/pve1/qemu/150/config") and "cipassword" in str(form)
    stored = config(fresh_cluster, 150)["cipassword"]
    assert stored.startswith("$5$") and PASSWORD not in stored, "never in clear in /etc/pve"
    # The comment states the VM's rule, not the container's "create only; never compared".
    said = "\n".join(created.comment)
    assert "cipassword sent in the first config write after the create (PVE hashes it there" in said
    assert "again only when the VM shows none or cipassword_serial" in said
    assert "create only" not in said
    returns = [created.salt_return("web")]
    # Another password with the same serial: PVE shows only **********, nothing is compared or written.
    same = run(False, cipassword="another-password", cipassword_serial=1)
    assert same.result is True and same.changes == {}, same.comment
    # A new serial writes the declared password again, shown only as set.
    plan = run(True, cipassword="another-password", cipassword_serial=2)
    assert plan.changes["cipassword"] == {"old": "set", "new": "set (written again)"}
    bumped = run(False, cipassword="another-password", cipassword_serial=2)
    assert bumped.result is True, bumped.comment
    (_, (method, path, form)) = [w for w in writes(requests_since(fresh_cluster, start)) if "/config" in w[1]]
    assert (method, path) == ("PUT", "/nodes/pve1/qemu/150/config") and "cipassword" in str(form)
    returns += [same.salt_return("web"), plan.salt_return("web"), bumped.salt_return("web")]
    shown = repr([returns, store.rows])
    assert PASSWORD not in shown and "another-password" not in shown
    assert store.rows[row_key(TARGET, "qemu", 150)]["declared"]["cipassword_serial"] == 2
    assert "cipassword" not in store.rows[row_key(TARGET, "qemu", 150)]["declared"]


def test_no_drift_plan_and_apply_of_owned_vms_request_counts(fresh_cluster, bao_creds):
    """A no-drift plan and apply of N owned VMs: exactly N config reads (one ``GET …/pending`` per VM:
    values in effect, pending ones and the digest at once), the run's tag-style read, no writes."""
    targets, bao = bao_targets(fresh_cluster, bao_creds)
    store = MemoryStore()
    vmids = [150, 151, 152, 153]
    ctx = make_context(targets, bao, store=store)
    for vmid in vmids:
        assert present(ctx, f"vm{vmid}", False, **vm(vmid)).result
    for test in (True, False):
        cache: dict = {}
        start = len(fresh_cluster.pve.requests)
        run_ctx = make_context(targets, bao, cache=cache, store=store)
        for vmid in vmids:
            outcome = present(run_ctx, f"vm{vmid}", test, **vm(vmid))
            assert outcome.result is True and outcome.changes == {}, outcome.comment
        log = requests_since(fresh_cluster, start)
        config_gets = [p for m, p, _ in log if m == "GET" and p.endswith("/pending")]
        print(
            f"no-drift {'plan' if test else 'apply'} of {len(vmids)} owned VMs: {len(log)} PVE requests "
            f"({len(config_gets)} config GETs, {len(writes(log))} writes)"
        )
        per_run = [p for m, p, _ in log if m == "GET" and p in ("/version", "/cluster/options")]
        assert per_run == ["/cluster/options"]
        assert len(config_gets) == len(vmids) and len(log) == len(vmids) + len(per_run)
        assert writes(log) == []
        assert cache[f"salt_proxmox.mints/{TARGET}"] == {"read": 1, "provision": 0}


def test_absent_destroy_deletes_only_our_matching_vm(fresh_cluster):
    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    ctx = make_context(static_targets(fresh_cluster), store=store)
    done = lifecycle.absent(ctx, QEMU, "web", False, 150, "pve1", "destroy")
    assert done.result is True, done.comment
    assert fresh_cluster.pve.vm(150) is None
    assert row_key(TARGET, "qemu", 150) not in store.rows


def test_the_form_of_a_create_never_holds_what_pve_generates(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    assert present(ctx, "web", False, **vm()).result
    ((_, _, form),) = writes(requests_since(fresh_cluster, start))
    sent = parse_qs(form.decode() if isinstance(form, bytes) else str(form))
    assert not {"vmgenid", "smbios1", "meta", "digest"} & set(sent)


def test_a_running_vm_takes_nics_and_tags_at_once_and_keeps_cores_pending(fresh_cluster):
    # vmconfig_hotplug_pending with the default hotplug (network,disk,usb): a NIC's tag re-plugs the
    # tap, tags are fast-plug, cores wait for the next start; reported as for containers.
    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    fresh_cluster.pve.vm(150).status = "running"
    changed = vm(cores=4, tags="web;canary", net0="virtio,bridge=vmbr0,tag=30")

    def run(test: bool, **over: Any):
        return present(
            make_context(static_targets(fresh_cluster), store=store), "web", test, **changed, **over
        )

    plan = run(True)
    assert "net0, tags would take effect at once; cores would stay pending" in "\n".join(plan.comment)
    done = run(False)
    assert done.result is True and "cores is written but pending" in "\n".join(done.comment), done.comment
    assert fresh_cluster.pve.vm(150).pending == {"cores": 4}
    again = run(True)
    assert again.changes == {"pending": {"cores": {"old": "2", "new": "4"}}}, again.changes
    # reboot_for_pending: the apply reboots the VM as one task, and what it runs with is as declared.
    start = len(fresh_cluster.pve.requests)
    rebooted = run(False, reboot_for_pending=True)
    assert rebooted.result is True, rebooted.comment
    assert [p for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        "/nodes/pve1/qemu/150/status/reboot"
    ]
    assert config(fresh_cluster, 150)["cores"] == 4 and not fresh_cluster.pve.vm(150).pending


def test_a_vm_reboot_for_pending_waits_for_qmeventd_to_start_it_again(fresh_cluster):
    """qemu-server ``QemuServer.pm`` ``vm_reboot``: the ``qmreboot`` task ends once QEMU has exited,
    and ``qmeventd`` starts the VM again afterwards (the fake's ``qmeventd_rounds``): the apply waits,
    bounded, for ``running`` and only then reads what it runs with. A paused VM is not rebooted
    (``vm_reboot``: ``VM is paused - cannot shutdown``): said at plan and at apply, nothing sent."""
    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    served = fresh_cluster.pve.vm(150)
    served.status = served.qmpstatus = "running"

    def run(test: bool, **over: Any):
        return present(
            make_context(static_targets(fresh_cluster), store=store), "web", test, **vm(cores=4, **over)
        )

    assert run(False).result is True and served.pending == {"cores": 4}
    served.qmpstatus = "paused"
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        held = run(test, reboot_for_pending=True)
        text = "\n".join(held.comment)
        assert "VM 150 on pve1 is not rebooted: it is paused (qmpstatus paused)" in text, held.comment
        assert "`qm resume 150`" in text and writes(requests_since(fresh_cluster, start)) == []
    served.qmpstatus = "running"
    fresh_cluster.pve.qmeventd_rounds[150] = 3
    start = len(fresh_cluster.pve.requests)
    rebooted = run(False, reboot_for_pending=True)
    assert rebooted.result is True, rebooted.comment
    assert [p for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        "/nodes/pve1/qemu/150/status/reboot"
    ]
    assert served.status == "running" and config(fresh_cluster, 150)["cores"] == 4 and not served.pending
    assert run(True, reboot_for_pending=True).changes == {}


def test_a_mapped_device_goes_through_and_the_plan_names_mapping_use(fresh_cluster):
    # check_hostpci_perm / check_usb_perm: mapping= needs Mapping.Use on /mapping/<pci|usb>/<id>, not root.
    # The mappings exist with an entry for the VM's node (else the plan refuses it: find_on_current_node).
    fresh_cluster.pve.add_mapping("pci", "gpu1", ["node=pve1,path=0000:01:00.0,id=10de:1eb8"])
    fresh_cluster.pve.add_mapping("usb", "stick", ["node=pve1,id=0781:5583"])
    store = MemoryStore()
    create = present(
        make_context(static_targets(fresh_cluster), store=store), "web", True, **vm(hostpci0="mapping=gpu1")
    )
    assert (
        create.result is None
        and "VM 150 on pve1: the create needs Mapping.Use on /mapping/pci/gpu1" in create.comment
    )
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    update = present(
        make_context(static_targets(fresh_cluster), store=store), "web", True, **vm(usb0="mapping=stick")
    )
    assert (
        update.result is None
        and "VM 150 on pve1: the write needs Mapping.Use on /mapping/usb/stick" in update.comment
    )


def test_pool_at_create_from_scratch_and_by_clone_then_moved(fresh_cluster):
    # create_vm and clone_vm take pool= (qemu-server API2/Qemu.pm: PVE::Pool add_vm_to_pool); a move
    # is PUT /pools/{poolid} as for containers, compared as GET /cluster/resources lists membership.
    pve = fresh_cluster.pve
    for name in ("prod", "lab"):
        pve.pools[name] = set()
        pve.pool_info[name] = {"comment": None, "storage": set()}
    store = MemoryStore()

    def run(state_id: str, test: bool, **declared: Any):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        start = len(pve.requests)
        outcome = present(ctx, state_id, test, **declared)
        return outcome, writes(requests_since(fresh_cluster, start))

    done, sent = run("web", False, **vm(pool="prod"))
    assert done.result is True and parse_qs(sent[0][2].decode())["pool"] == ["prod"], done.comment
    cloned = {"vmid": 151, "node": "pve1", "clone": CLOUD_TEMPLATE_VMID, "name": "app", "pool": "prod"}
    done, sent = run("app", False, **cloned)
    assert done.result is True and parse_qs(sent[0][2].decode())["pool"] == ["prod"], done.comment
    assert {150, 151} <= set(pve.pools["prod"])
    assert run("web", True, **vm(pool="prod"))[0].changes == {}
    assert run("app", True, **cloned)[0].changes == {}
    done, sent = run("web", False, **vm(pool="lab"))
    assert done.result is True and [(m, p) for m, p, _ in sent] == [("PUT", "/pools/lab")], done.comment
    assert 150 in pve.pools["lab"] and run("web", True, **vm(pool="lab"))[0].changes == {}


def _clone_151(**over: Any) -> dict[str, Any]:
    """VM 151 declared as a full clone of the cloud template 9000 (scsi0 3G on local-lvm, a
    cloud-init drive on local-lvm, net0, serial0, ipconfig0)."""
    return {"vmid": 151, "node": "pve1", "clone": CLOUD_TEMPLATE_VMID, "full": True, "name": "app", **over}


def _configure_form(log) -> dict[str, str]:
    ((_, _, body),) = [(m, p, b) for m, p, b in writes(log) if p == "/nodes/pve1/qemu/151/config"]
    return {key: values[0] for key, values in parse_qs(body.decode()).items()}


def test_a_clone_s_plan_and_return_list_every_key_its_configure_step_writes_or_deletes(fresh_cluster):
    """The configure step after ``clone_vm`` writes the declaration onto the clone; a key the
    declaration clears (``net0: ''``, ``serial0: ''``) is a ``delete`` of that step, and shows in the
    plan and the return as one, beside the keys it puts."""
    store = MemoryStore()
    declared = _clone_151(net0="", serial0="", vga="std", cores=4)
    plan = present(make_context(static_targets(fresh_cluster), store=store), "app", True, **declared)
    assert plan.result is None, plan.comment
    # The clone's net0 gets a new MAC from clone_vm: the plan shows the template's NIC without one.
    assert plan.changes["net0"] == {"old": "virtio,bridge=vmbr0", "new": ""}, plan.changes
    assert plan.changes["serial0"] == {"old": "socket", "new": ""}
    assert plan.changes["vga"] == {"old": "serial0", "new": "std"} and plan.changes["cores"]["new"] == "4"
    assert "VM 151 on pve1: then written onto the clone: cores, net0, serial0, vga" in plan.comment
    start = len(fresh_cluster.pve.requests)
    done = present(make_context(static_targets(fresh_cluster), store=store), "app", False, **declared)
    assert done.result is True, done.comment
    form = _configure_form(requests_since(fresh_cluster, start))
    written = {key for key in form if key not in ("digest", "delete")}
    deleted = set(form.get("delete", "").split(","))
    assert deleted == {"net0", "serial0"}
    shown = {key for key in plan.changes if key not in ("created",)}
    assert shown == written | deleted, (shown, form)
    assert {key for key in done.changes if key != "created"} == shown
    live = config(fresh_cluster, 151)
    assert "net0" not in live and "serial0" not in live


def test_a_full_clone_to_another_storage_is_judged_as_the_clone_it_will_be(fresh_cluster):
    """qemu-server ``clone_vm``/``clone_disk``: a full clone with ``storage`` copies every disk (and
    the cloud-init drive) to that storage. The declaration naming the target storage plans clean
    for its disk and applies; one naming another storage is refused at plan, nothing cloned."""
    store = MemoryStore()
    right = _clone_151(storage="local-zfs", scsi0="local-zfs:3,discard=on,iothread=1")
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = present(ctx, "app", True, **right)
    assert plan.result is None, plan.comment
    assert "scsi0" not in plan.changes and "disks" not in plan.changes, plan.changes
    start = len(fresh_cluster.pve.requests)
    done = present(make_context(static_targets(fresh_cluster), store=store), "app", False, **right)
    assert done.result is True, done.comment
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", "/nodes/pve1/qemu/9000/clone")
    ], "the clone as planned needs no configure step"
    live = config(fresh_cluster, 151)
    assert live["scsi0"].startswith("local-zfs:") and live["ide2"].startswith("local-zfs:vm-151-cloudinit")
    again = present(make_context(static_targets(fresh_cluster), store=store), "app", True, **right)
    assert again.result is True and again.changes == {}, again.comment

    wrong = _clone_151(vmid=152, storage="local-zfs", scsi0="local-lvm:3,discard=on,iothread=1")
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        outcome = present(make_context(static_targets(fresh_cluster), store=store), "app2", test, **wrong)
        assert outcome.result is False and "qm disk move" in "\n".join(outcome.comment), outcome.comment
        assert writes(requests_since(fresh_cluster, start)) == []
    assert 152 not in fresh_cluster.pve.vms


def test_a_declared_cipassword_is_always_written_onto_a_clone_of_a_template_that_has_one(fresh_cluster):
    """``clone_vm`` copies the template's ``cipassword``; PVE shows it only as set, so judged against
    the clone it would count as written. The configure step always writes the declared one; without
    one, the plan says the clone keeps the template's."""
    template = fresh_cluster.pve.vm(CLOUD_TEMPLATE_VMID)
    template.config["cipassword"] = "$5$template$c2VjcmV0LW9mLXRoZS10ZW1wbGF0ZQ"
    store = MemoryStore()
    declared = _clone_151(cipassword=PASSWORD, cipassword_serial=1)
    plan = present(make_context(static_targets(fresh_cluster), store=store), "app", True, **declared)
    assert plan.result is None and plan.changes["cipassword"] == {
        "old": "set",
        "new": "set (written again)",
    }, plan.changes
    assert "VM 151 on pve1: then written onto the clone: cipassword" in plan.comment
    start = len(fresh_cluster.pve.requests)
    done = present(make_context(static_targets(fresh_cluster), store=store), "app", False, **declared)
    assert done.result is True, done.comment
    assert _configure_form(requests_since(fresh_cluster, start))["cipassword"] == PASSWORD
    # The configure step is update_vm_api: the clone's cipassword is stored hashed, never in clear.
    stored = fresh_cluster.pve.vm(151).config["cipassword"]
    assert stored != template.config["cipassword"] and stored.startswith("$5$") and PASSWORD not in stored
    assert PASSWORD not in repr(done.changes) + "\n".join(done.comment)

    keeps = present(
        make_context(static_targets(fresh_cluster), store=store), "app2", True, **_clone_151(vmid=152)
    )
    assert any("the clone keeps template VM 9000's cipassword" in line for line in keeps.comment), (
        keeps.comment
    )


def test_clones_pve_refuses_for_their_storage_are_refused_at_plan_and_the_plan_says_linked_or_full(
    fresh_cluster,
):
    """qemu-server ``API2/Qemu.pm`` ``clone_vm``: a template's clone is linked unless ``full``
    (``$param->{full} // !is_template``), and the plan says which; a clone to another node of a
    template with a volume on local storage (``$check_storage_access_clone``: ``can't clone VM to node
    … (VM uses local storage)``) and a linked clone of a disk on storage that cannot clone (pve-storage
    ``LVMPlugin`` ``volume_has_feature``: ``Linked clone feature is not supported``) are refused at
    plan and at apply, nothing cloned."""
    store = MemoryStore()

    def run(test: bool, **declared: Any):
        return present(make_context(static_targets(fresh_cluster), store=store), "app", test, **declared)

    linked = {"vmid": 151, "node": "pve1", "clone": CLOUD_TEMPLATE_VMID, "name": "app"}
    assert "would be created as a linked clone of template VM 9000" in run(True, **linked).comment[0]
    elsewhere = {**linked, "node": "pve2"}
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        refused = run(test, **elsewhere)
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert "names volumes on storage that is not shared: ide2 (local-lvm:vm-9000-cloudinit)" in text
        assert "(`can't clone VM to node 'pve2' (VM uses local storage)`). Declare node: pve1" in text
        assert writes(requests_since(fresh_cluster, start)) == []
    fresh_cluster.pve.storages["local-lvm"]["type"] = "lvm"  # thick LVM: no linked clones
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        refused = run(test, **linked)
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert (
            "template VM 9000's scsi0 is on storage local-lvm (lvm), which cannot make a linked clone" in text
        )
        assert "`Linked clone feature is not supported for 'local-lvm:base-9000-disk-0' (scsi0)`" in text
        assert "Declare full: true" in text and writes(requests_since(fresh_cluster, start)) == []
    full = {**linked, "full": True}
    plan = run(True, **full)
    assert plan.result is None and "as a full clone of template VM 9000" in plan.comment[0], plan.comment
    assert run(False, **full).result is True


def test_a_linked_clone_of_a_template_disk_that_is_no_base_volume_is_refused_at_plan(fresh_cluster):
    """A half-converted template (``template: 1``, its disk still ``vm-9000-disk-0``): qemu-server
    ``clone_vm`` asks pve-storage ``volume_has_feature(..., 'clone', ...)``, which an lvmthin volume
    has as a base volume only, and dies ``Linked clone feature is not supported for '<volid>'
    (<key>)``. Refused at plan and at apply, nothing written; ``full: true`` copies it."""
    store = MemoryStore()
    template = fresh_cluster.pve.vm(CLOUD_TEMPLATE_VMID)
    template.config["scsi0"] = template.config["scsi0"].replace("base-9000-disk-0", "vm-9000-disk-0")
    volumes = fresh_cluster.pve.storages["local-lvm"]["volumes"]
    volumes["vm-9000-disk-0"] = volumes.pop("base-9000-disk-0")

    def run(test: bool, **declared: Any):
        return present(make_context(static_targets(fresh_cluster), store=store), "app", test, **declared)

    linked = {"vmid": 151, "node": "pve1", "clone": CLOUD_TEMPLATE_VMID, "name": "app"}
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        refused = run(test, **linked)
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert "template VM 9000's scsi0 is local-lvm:vm-9000-disk-0, not a base volume" in text
        assert "`Linked clone feature is not supported for 'local-lvm:vm-9000-disk-0' (scsi0)`" in text
        assert "Declare full: true" in text and "`qm template 9000 --disk scsi0`" in text
        assert writes(requests_since(fresh_cluster, start)) == [], "nothing written"
        assert fresh_cluster.pve.vm(151) is None
    full = {**linked, "full": True}
    plan = run(True, **full)
    assert plan.result is None and "as a full clone of template VM 9000" in plan.comment[0], plan.comment
    assert run(False, **full).result is True


def test_a_secure_boot_vm_goes_plan_apply_plan_clean_and_its_efi_disk_rules_hold(fresh_cluster):
    """efidisk0 with pre-enrolled-keys: qemu-server 9.0.27+/8.4.6+ OVMF.pm create_efidisk marks it
    ms-cert=2023k, PVE's marker, not drift. A pre-enrolled-keys or efitype change on the existing disk
    (PVE would rewrite only the text) and a tpmstate0 version change (prohibit_tpm_version_change) are
    refused at plan and at apply with nothing written; a declared ms-cert=2023k on a disk without it is
    written and planned as the key enrollment PVE runs (OVMF.pm drive_change)."""
    store = MemoryStore()
    secure = vm(
        152,
        bios="ovmf",
        machine="q35",
        ostype="win11",
        efidisk0="local-lvm:1,efitype=4m,pre-enrolled-keys=1",
        tpmstate0="local-lvm:1,version=v2.0",
    )
    plan = present(make_context(static_targets(fresh_cluster), store=store), "sb", True, **secure)
    assert plan.result is None, plan.comment
    done = present(make_context(static_targets(fresh_cluster), store=store), "sb", False, **secure)
    assert done.result is True, done.comment
    live = config(fresh_cluster, 152)
    assert "ms-cert=2023k" in live["efidisk0"] and "pre-enrolled-keys=1" in live["efidisk0"]
    again = present(make_context(static_targets(fresh_cluster), store=store), "sb", True, **secure)
    assert again.result is True and again.changes == {}, again.comment

    for over, needle in (
        ({"efidisk0": "local-lvm:1,efitype=2m,pre-enrolled-keys=1"}, "efitype 4m -> 2m"),
        ({"efidisk0": "local-lvm:1,efitype=4m,pre-enrolled-keys=0"}, "pre-enrolled-keys 1 -> 0"),
        ({"tpmstate0": "local-lvm:1,version=v1.2"}, "cannot change TPM state version after creation"),
    ):
        for test in (True, False):
            start = len(fresh_cluster.pve.requests)
            ctx = make_context(static_targets(fresh_cluster), store=store)
            outcome = present(ctx, "sb", test, **{**secure, **over})
            assert outcome.result is False and needle in "\n".join(outcome.comment), outcome.comment
            assert writes(requests_since(fresh_cluster, start)) == []

    # A disk made before the marker (or from a template without the 2023 CA): declaring ms-cert=2023k
    # enrolls the keys; PVE writes the marker and the next plan is clean.
    vmcfg = fresh_cluster.pve.vm(152).config
    vmcfg["efidisk0"] = vmcfg["efidisk0"].replace(",ms-cert=2023k", "")
    enrolled = {**secure, "efidisk0": "local-lvm:1,efitype=4m,pre-enrolled-keys=1,ms-cert=2023k"}
    plan = present(make_context(static_targets(fresh_cluster), store=store), "sb", True, **enrolled)
    assert plan.result is None and any("enrolls the Microsoft UEFI CA 2023" in line for line in plan.comment)
    assert present(make_context(static_targets(fresh_cluster), store=store), "sb", False, **enrolled).result
    assert "ms-cert=2023k" in config(fresh_cluster, 152)["efidisk0"]
    clean = present(make_context(static_targets(fresh_cluster), store=store), "sb", True, **enrolled)
    assert clean.result is True and clean.changes == {}, clean.comment


def test_pve_s_other_spellings_of_a_value_plan_no_write(fresh_cluster):
    """CPU flags in another order (CPUConfig.pm $cpu_fmt) and the boolean forms pve-common's
    parse_boolean reads (1/on/yes/true) in agent, a NIC and a drive are the value PVE holds: a later
    declaration spelled the other way plans nothing and writes nothing."""
    store = MemoryStore()
    first = vm(cpu="host,flags=+aes;-pcid", agent="1,fstrim_cloned_disks=1")
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **first).result
    respelled = vm(
        cpu="cputype=host,flags=-pcid;+aes",
        agent="enabled=yes,fstrim_cloned_disks=on,freeze-fs=true",
        net0="virtio,bridge=vmbr0,tag=20,firewall=off",
        scsi0="local-lvm:8,discard=on,iothread=yes,backup=true",
    )
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        outcome = present(make_context(static_targets(fresh_cluster), store=store), "web", test, **respelled)
        assert outcome.result is True and outcome.changes == {}, outcome.comment
        assert writes(requests_since(fresh_cluster, start)) == []


def test_startup_without_sys_modify_on_root_is_refused_at_plan(fresh_cluster):
    """API2/Qemu.pm $check_vm_modify_config_perm: `startup` (set or deleted, at create and update) needs
    Sys.Modify on / ("it changes host behaviour"). The read token reads the static provision token's
    privileges (GET /access/permissions?userid=); QemuPve checks it as PVE does."""
    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    fresh_cluster.pve.acl[PROVISION_TOKEN_ID] = [
        (path, privs - {"Sys.Modify"}) for path, privs in fresh_cluster.pve.acl[PROVISION_TOKEN_ID]
    ]
    for vmid, state in ((150, "web"), (151, "other")):
        for test in (True, False):
            start = len(fresh_cluster.pve.requests)
            ctx = make_context(static_targets(fresh_cluster), store=store, cache={})
            outcome = present(ctx, state, test, **vm(vmid, startup="order=2,up=30"))
            said = "\n".join(outcome.comment)
            assert outcome.result is False and "Sys.Modify on /" in said, outcome.comment
            assert f"the provision token {PROVISION_TOKEN_ID} does not hold it" in said
            assert writes(requests_since(fresh_cluster, start)) == []
    assert 151 not in fresh_cluster.pve.vms and "startup" not in config(fresh_cluster, 150)
    # Without a startup change nothing is read or refused.
    assert (
        present(make_context(static_targets(fresh_cluster), store=store), "web", True, **vm()).result is True
    )


def test_a_windows_vm_s_pinned_machine_is_never_drift(fresh_cluster):
    """Machine.pm check_and_pin_machine_string: create_vm pins a Windows guest's pc/q35 to the latest machine
    version (QemuPve models it). Declared q35, or no machine at all, the second plan is clean and writes
    nothing; before, the product wrote `machine: q35` back on every run."""
    store = MemoryStore()
    for vmid, machine in ((153, "q35"), (154, None)):
        declared = vm(vmid, ostype="win11", machine=machine)
        done = present(
            make_context(static_targets(fresh_cluster), store=store), f"win{vmid}", False, **declared
        )
        assert done.result is True, done.comment
        kind = "pc-q35-" if machine else "pc-i440fx-"
        assert config(fresh_cluster, vmid)["machine"].startswith(kind)
        for test in (True, False):
            start = len(fresh_cluster.pve.requests)
            again = present(
                make_context(static_targets(fresh_cluster), store=store), f"win{vmid}", test, **declared
            )
            assert again.result is True and again.changes == {}, again.comment
            assert writes(requests_since(fresh_cluster, start)) == []


def test_a_running_vm_takes_ipconfig_at_once_and_usb_as_its_ostype_allows(fresh_cluster):
    """$fast_plug_option holds every $confdesc_cloudinit key, ipconfigN too: written live on a running VM.
    A usbN is hot-plugged only where $is_usb_hotplug_supported says so (usb feature, machine >= 7.1,
    ostype l26 or Windows after 7): on ostype other it waits for the next start, on l26 it is live."""
    store = MemoryStore()
    assert present(
        make_context(static_targets(fresh_cluster), store=store), "web", False, **vm(ostype="other")
    ).result
    fresh_cluster.pve.vm(150).status = "running"
    changed = vm(ostype="other", ipconfig0="ip=10.0.0.50/24,gw=10.0.0.1", usb0="spice")
    plan = present(make_context(static_targets(fresh_cluster), store=store), "web", True, **changed)
    assert "ipconfig0 would take effect at once; usb0 would stay pending" in "\n".join(plan.comment), (
        plan.comment
    )
    done = present(make_context(static_targets(fresh_cluster), store=store), "web", False, **changed)
    assert done.result is True, done.comment
    assert fresh_cluster.pve.vm(150).pending == {"usb0": "spice"}
    assert config(fresh_cluster, 150)["ipconfig0"].startswith("ip=10.0.0.50/24")

    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "l26", False, **vm(151)).result
    fresh_cluster.pve.vm(151).status = "running"
    plan = present(
        make_context(static_targets(fresh_cluster), store=store), "l26", True, **vm(151, usb0="spice")
    )
    # Nothing would wait; the hot-plug goes as the POST …/config task (update_vm_async).
    assert plan.comment == [
        "VM 151 on pve1: would write usb0",
        "VM 151 on pve1: the write goes as a task (POST /nodes/pve1/qemu/151/config): it hot-plugs usb0 into "
        "the running VM (vmconfig_hotplug_pending)",
    ], plan.comment
    decl151 = vm(151, usb0="spice")
    done = present(make_context(static_targets(fresh_cluster), store=store), "l26", False, **decl151)
    assert done.result is True and not fresh_cluster.pve.vm(151).pending, done.comment


def test_a_new_cdrom_and_a_declared_boot_end_in_the_declared_order(fresh_cluster):
    """update_vm_api appends a new CD-ROM to boot by itself, in a hash order that may overwrite a boot
    written beside it (QemuPve takes that order). Declared boot ending with the new CD-ROM: PVE's append
    gives it, boot is not sent; another declared order: boot goes in a second write; no boot declared:
    the plan says what PVE makes of it. Each case is clean on the next plan."""
    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    order = config(fresh_cluster, 150)["boot"].removeprefix("order=")
    cases = [
        ("ide3", None, "appends the new CD-ROM ide3 to boot by itself"),
        ("sata1", f"order={order};ide3;sata1", "which is the declared boot order"),
        ("sata2", f"order=sata2;{order};ide3;sata1", "sent in a second write after it"),
    ]
    declared = vm()
    for key, boot, needle in cases:
        declared = {**declared, key: "none,media=cdrom", "boot": boot}
        declared = {k: v for k, v in declared.items() if v is not None}
        plan = present(make_context(static_targets(fresh_cluster), store=store), "web", True, **declared)
        assert plan.result is None and any(needle in line for line in plan.comment), plan.comment
        start = len(fresh_cluster.pve.requests)
        done = present(make_context(static_targets(fresh_cluster), store=store), "web", False, **declared)
        assert done.result is True, done.comment
        puts = [p for m, p, _ in writes(requests_since(fresh_cluster, start)) if m == "PUT"]
        assert len(puts) == (2 if "second write" in needle else 1), puts
        if boot:
            assert config(fresh_cluster, 150)["boot"] == boot
        clean = present(make_context(static_targets(fresh_cluster), store=store), "web", True, **declared)
        assert clean.result is True and clean.changes == {}, clean.comment
    assert config(fresh_cluster, 150)["boot"] == f"order=sata2;{order};ide3;sata1"


def test_an_agent_option_of_pve_9_is_refused_at_plan_on_pve_8(fresh_cluster):
    """qemu-server 8 (stable-bookworm) $agent_fmt knows freeze-fs-on-backup, not freeze-fs: on a PVE 8
    cluster (GET /version) the plan refuses it, at create and update, with nothing written."""
    store = MemoryStore()
    assert present(make_context(static_targets(fresh_cluster), store=store), "web", False, **vm()).result
    fresh_cluster.pve.version, fresh_cluster.pve.release_version = ("8.4.14", "8.4")
    for vmid, state in ((150, "web"), (151, "other")):
        for test in (True, False):
            start = len(fresh_cluster.pve.requests)
            ctx = make_context(static_targets(fresh_cluster), store=store, cache={})
            outcome = present(ctx, state, test, **vm(vmid, agent="1,freeze-fs=0"))
            assert outcome.result is False and "freeze-fs= is an option of PVE 9" in "\n".join(
                outcome.comment
            )
            assert writes(requests_since(fresh_cluster, start)) == []
    said = present(
        make_context(static_targets(fresh_cluster), store=store),
        "web",
        True,
        **vm(agent="1,freeze-fs-on-backup=0"),
    )
    assert said.result is None, said.comment


def test_a_boot_order_naming_a_device_the_clone_will_not_have_is_refused_before_the_clone(fresh_cluster):
    """update_vm_api refuses the clone's configure step ("invalid bootorder: device 'scsi5' does not
    exist"); the plan judges the declaration against the template's config, so no clone is made."""
    for test in (True, False):
        start = len(fresh_cluster.pve.requests)
        ctx = make_context(static_targets(fresh_cluster))
        outcome = present(
            ctx, "app", test, vmid=152, node="pve1", clone=CLOUD_TEMPLATE_VMID, boot="order=scsi5;scsi0"
        )
        said = "\n".join(outcome.comment)
        assert outcome.result is False and "invalid bootorder: device 'scsi5' does not exist" in said, said
        assert writes(requests_since(fresh_cluster, start)) == []
    assert 152 not in fresh_cluster.pve.vms


def test_a_clone_keeps_the_disk_options_of_its_template_the_declaration_leaves_out(fresh_cluster):
    """A disk option the declaration does not name is not managed, as a top-level key left out is
    not: a template whose disk has its own ``cache=writeback`` is cloned (``clone_vm`` copies the
    drive's options), the configure step writes the declared ``ssd=1`` onto the clone's volume with
    the template's ``cache=`` carried, the grow is a resize, and the next plan is clean with it kept."""
    template = 9001
    volumes = fresh_cluster.pve.storages["local-lvm"]["volumes"]
    volumes[f"base-{template}-disk-0"] = {
        "content": "images",
        "format": "raw",
        "size": 3 * 1024**3,
        "vmid": template,
    }
    fresh_cluster.pve.add_vm(
        template,
        "tuned-tpl",
        node="pve1",
        template=True,
        config={
            "name": "tuned-tpl",
            "template": 1,
            "memory": 2048,
            "ostype": "l26",
            "scsihw": "virtio-scsi-single",
            "scsi0": f"local-lvm:base-{template}-disk-0,cache=writeback,discard=on,iothread=1,size=3G",
        },
    )
    store = MemoryStore()
    declared = {
        "vmid": 152,
        "node": "pve1",
        "clone": template,
        "full": True,
        "name": "tuned",
        "scsi0": "local-lvm:10,discard=on,iothread=1,ssd=1",
    }
    plan = present(make_context(static_targets(fresh_cluster), store=store), "tuned", True, **declared)
    assert plan.result is None, plan.comment
    # Only the declared option changes; the template's cache= is neither shown nor dropped.
    assert plan.changes["scsi0"] == {"old": "", "new": "ssd=1"}, plan.changes
    start = len(fresh_cluster.pve.requests)
    done = present(make_context(static_targets(fresh_cluster), store=store), "tuned", False, **declared)
    assert done.result is True, done.comment
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in writes(log)] == [
        ("POST", f"/nodes/pve1/qemu/{template}/clone"),
        ("POST", "/nodes/pve1/qemu/152/config"),
        ("PUT", "/nodes/pve1/qemu/152/resize"),
    ]
    ((_, _, body),) = [(m, p, b) for m, p, b in writes(log) if p == "/nodes/pve1/qemu/152/config"]
    sent = parse_qs(body.decode())["scsi0"][0]
    assert "cache=writeback" in sent and "ssd=1" in sent, sent
    live = config(fresh_cluster, 152)["scsi0"]
    assert "cache=writeback" in live and "ssd=1" in live and "size=10G" in live, live
    again = present(make_context(static_targets(fresh_cluster), store=store), "tuned", True, **declared)
    assert again.result is True and again.changes == {}, again.comment
