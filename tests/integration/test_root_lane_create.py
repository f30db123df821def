"""Root keys at create, and a VM's root keys, through the root lane against the fake PVE.

A create whose declaration holds keys only root@pam may set (pve-container ``src/PVE/API2/LXC.pm``
``create_vm`` runs ``check_ct_modify_config_perm`` over its form: "mount point type bind is only
allowed for root@pam"; qemu-server ``src/PVE/API2/Qemu.pm`` ``create_vm`` runs
``$check_vm_modify_config_perm``, "only root can set 'args' config", and
``check_vm_create_usb_perm``, "only root can set 'usb0' config for real devices") is the token's create
without them, then one digest-guarded write of them through ``pvesh`` as root@pam (a fake ``pvesh``,
tests.support.pvesh, forwarding with a root@pam ticket); ``SendersPve.senders`` says who sent each
write. Without a lane the create is refused at plan naming ``root_lane``. tests.support.qemu_perms
makes the fake refuse ``args`` and a host USB device to a token, as qemu-server does.
"""

from __future__ import annotations

from salt_proxmox.guest import identity, lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import CREATING, OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from tests.support.cluster import ROUTER_VMID
from tests.support.guests import TARGET, declaration, make_context, static_targets, vm
from tests.support.pvesh import write_fake_pvesh

BIND = "/srv/share,mp=/share"
ARGS = "-device intel-hda"
USB = "host=1234:5678"


def _targets(served, lane=None):
    targets = static_targets(served)
    if lane is not None:
        targets[TARGET]["root_lane"] = lane
    return targets


def _lane(served, tmp_path):
    return {"via": "pvesh", "pvesh": str(write_fake_pvesh(served, tmp_path))}


def _writes(served, start):
    return [(m, p, who) for m, p, who in served.pve.senders[start:] if m != "GET" and p != "/access/ticket"]


def _bodies(served, path):
    return [
        str(body) for method, logged, body in served.pve.requests if method != "GET" and logged.endswith(path)
    ]


def test_a_container_created_with_a_bind_mount_writes_it_through_the_lane(fresh_cluster, tmp_path):
    lane, store = _lane(fresh_cluster, tmp_path), MemoryStore()
    declared = declaration(vmid=151, mp1=BIND)
    start = len(fresh_cluster.pve.senders)

    plan = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "web", True, **declared
    )
    assert plan.result is None, plan.comment
    assert "would be created from" in plan.comment[0]
    assert plan.comment[0].endswith("with the provision token; then write mp1 via root lane (pvesh on pve1)")
    assert plan.changes["mp1"] == {"old": None, "new": BIND}
    assert _writes(fresh_cluster, start) == [], "a plan writes nothing"

    done = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "web", False, **declared
    )
    assert done.result is True, done.comment
    provision = fresh_cluster.seeded.provision_token[0]
    # The token creates without the bind mount; it goes as root@pam, never with the token.
    assert _writes(fresh_cluster, start) == [
        ("POST", "/nodes/pve1/lxc", provision),
        ("PUT", "/nodes/pve1/lxc/151/config", "root@pam"),
    ]
    create, laned = (
        _bodies(fresh_cluster, "/nodes/pve1/lxc")[-1],
        _bodies(fresh_cluster, "lxc/151/config")[-1],
    )
    assert "mp1" not in create and "mp1" in laned and "digest=" in laned
    assert "/srv/share" in str(fresh_cluster.pve.ct(151).config["mp1"])
    assert store.rows[row_key(TARGET, "lxc", 151)]["phase"] == OWNED

    again = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "web", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment


def test_a_vm_created_with_args_and_a_host_usb_device_writes_them_through_the_lane(fresh_cluster, tmp_path):
    lane, store = _lane(fresh_cluster, tmp_path), MemoryStore()
    declared = vm(vmid=152, args=ARGS, usb0=USB)
    start = len(fresh_cluster.pve.senders)

    plan = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), QEMU, "web", True, **declared
    )
    assert plan.result is None, plan.comment
    assert plan.comment[0].endswith(
        "with the provision token; then write args, usb0 via root lane (pvesh on pve1)"
    )
    assert plan.changes["args"] == {"old": None, "new": ARGS}
    assert _writes(fresh_cluster, start) == []

    done = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), QEMU, "web", False, **declared
    )
    assert done.result is True, done.comment
    provision = fresh_cluster.seeded.provision_token[0]
    assert _writes(fresh_cluster, start) == [
        ("POST", "/nodes/pve1/qemu", provision),
        ("PUT", "/nodes/pve1/qemu/152/config", "root@pam"),
    ]
    assert "args" not in _bodies(fresh_cluster, "/nodes/pve1/qemu")[-1]
    live = fresh_cluster.pve.vm(152).config
    assert (live["args"], live["usb0"]) == (ARGS, USB)

    again = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), QEMU, "web", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment


def test_root_keys_at_create_without_a_lane_are_refused_naming_it(fresh_cluster):
    start = len(fresh_cluster.pve.senders)
    for family, declared, key in (
        (LXC, declaration(vmid=153, mp1=BIND), "mp1"),
        (QEMU, vm(vmid=154, args=ARGS), "args"),
    ):
        for test in (True, False):
            outcome = lifecycle.present(
                make_context(_targets(fresh_cluster)), family, "web", test, **declared
            )
            assert outcome.result is False
            text = "\n".join(outcome.comment)
            assert f"create {declared['vmid']}" in text and f"--{key} '" in text
            assert f"proxmox:targets:{TARGET}:root_lane: pvesh" in text
    assert _writes(fresh_cluster, start) == []


def test_a_failed_lane_write_after_the_create_is_picked_up_by_the_next_run(fresh_cluster, tmp_path):
    """The token's create went through, the lane write did not: the row stays creating, and the next
    plan records the VM as ours (its create is in the node's tasks) and writes what is left through
    the lane; then the plan is clean."""
    lane, store = _lane(fresh_cluster, tmp_path), MemoryStore()
    declared = vm(vmid=155, args=ARGS)
    ctx = make_context(_targets(fresh_cluster, lane), store=store)
    original = ctx.lane.request

    def changed_meanwhile(method, path, credential=None, params=None, form=None, **more):
        if method == "PUT":
            # Another writer between the read of the digest and the lane write: PVE refuses it
            # (pve-common PVE/Tools.pm assert_if_modified).
            fresh_cluster.pve.vm(155).config["description"] = "edited by hand"
        return original(method, path, credential, params=params, form=form, **more)

    ctx.lane.request = changed_meanwhile
    failed = lifecycle.present(ctx, QEMU, "web", False, **declared)
    assert failed.result is False, failed.comment
    assert store.rows[row_key(TARGET, "qemu", 155)]["phase"] == CREATING
    assert "args" not in fresh_cluster.pve.vm(155).config

    plan = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), QEMU, "web", True, **declared
    )
    assert plan.result is None, plan.comment
    assert "VM 155 on pve1: would write args via root lane (pvesh on pve1)" in plan.comment, plan.comment
    assert any("but for args, which the root lane writes" in line for line in plan.comment), plan.comment
    start = len(fresh_cluster.pve.senders)
    done = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), QEMU, "web", False, **declared
    )
    assert done.result is True, done.comment
    assert _writes(fresh_cluster, start) == [("PUT", "/nodes/pve1/qemu/155/config", "root@pam")]
    assert store.rows[row_key(TARGET, "qemu", 155)]["phase"] == OWNED
    again = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), QEMU, "web", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment


def test_args_on_a_running_vm_goes_through_the_lane_and_waits_for_a_restart(fresh_cluster, tmp_path):
    """qemu-server ``vmconfig_hotplug_pending``: ``args`` is no hot-pluggable option, so on running
    router 300 the lane write lands in ``[PENDING]``; plan and apply report it as pending."""
    lane = _lane(fresh_cluster, tmp_path)
    live = fresh_cluster.pve.vm(ROUTER_VMID).config
    store = MemoryStore(
        {
            row_key(TARGET, "qemu", ROUTER_VMID): {
                "phase": OWNED,
                "instance": "x",
                "state_id": "router",
                "declared": {"vmid": ROUTER_VMID, "node": "pve2"},
                "fingerprint": identity.live_fingerprint(QEMU, live),
            }
        }
    )
    declared = {"vmid": ROUTER_VMID, "node": "pve2", "name": "router", "args": ARGS}
    ctx = make_context(_targets(fresh_cluster, lane), store=store)
    plan = lifecycle.present(ctx, QEMU, "router", True, **declared)
    assert plan.result is None, plan.comment
    assert "VM 300 on pve2: would write args via root lane (pvesh on pve1)" in plan.comment
    assert any("args would stay pending until the VM restarts" in line for line in plan.comment), plan.comment

    start = len(fresh_cluster.pve.senders)
    done = lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), QEMU, "router", False, **declared
    )
    assert _writes(fresh_cluster, start) == [("PUT", "/nodes/pve2/qemu/300/config", "root@pam")]
    assert done.result is True, done.comment
    assert "VM 300 on pve2: args is written but pending until the VM restarts" in done.comment[-1]
    assert fresh_cluster.pve.vm(ROUTER_VMID).pending.get("args") == ARGS
