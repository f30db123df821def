"""The ticket lane against the fake PVE and the OpenBao dev server: root@pam's password is kept in
OpenBao (KV version 2, or 1), read through the target's own OpenBao connection and exchanged for a
ticket (pve-access-control ``src/PVE/API2/AccessControl.pm`` ``create_ticket``); the writes only
root@pam may make (a container's bind mount: pve-container ``src/PVE/LXC.pm``
``check_ct_modify_config_perm``, "mount point type bind is only allowed for root@pam", which fakepve
refuses to every token as PVE does) go with that ticket, everything else with the tokens.
``SendersPve.senders`` says who sent each request. The ticket lane has no node, so raw ``lxc.*`` lines
and snippets, written as files on a node, are refused naming the pvesh lane."""

from __future__ import annotations

import logging

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.snippet import lifecycle as snippet_lifecycle
from tests.support.cluster import DNS1_VMID
from tests.support.guests import TARGET, bao_targets, declaration, make_context, vm
from tests.support.lanes import ROOT_PASSWORD_KV2, ticket_lane
from tests.support.lanes import declared_dns1 as _declared
from tests.support.lanes import lane_targets as _static_targets
from tests.support.lanes import owned_dns1 as _owned
from tests.support.lanes import writes_since as _writes
from tests.support.snippets import add_snippet_storage

BIND = "/srv/share,mp=/share"
CONFIG = f"/nodes/pve1/lxc/{DNS1_VMID}/config"
LOGIN = ("POST", "/access/ticket", None)
VIA = "via root lane (ticket for root@pam)"


def _secrets(served) -> list[str]:
    """Root@pam's password, and every ticket and CSRF token fakepve issued."""
    issued = [value for ticket, session in served.pve.tickets.items() for value in (ticket, session["csrf"])]
    return [served.pve.password, *issued]


def _logins(served, start: int) -> list[tuple[str, str, str | None]]:
    return [sent for sent in served.pve.senders[start:] if sent[:2] == LOGIN[:2]]


@pytest.mark.parametrize("kv", [2, 1], ids=["kv2", "kv1"])
def test_a_bind_mount_is_refused_without_a_lane_then_planned_applied_with_a_ticket_and_replans_clean(
    fresh_cluster, openbao, bao_creds, tmp_path, caplog, kv
):
    caplog.set_level(logging.DEBUG)
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds, kv=kv)
    rows = tmp_path / "rows.json"
    store = FileStore(rows)
    store.save(_owned(fresh_cluster).rows)
    declared = _declared(mp1=BIND, memory=1024)
    start = len(fresh_cluster.pve.senders)

    bare, _ = bao_targets(fresh_cluster, bao_creds)
    refused = guest_lifecycle.present(make_context(bare, bao, store=store), LXC, "dns", True, **declared)
    assert refused.result is False
    text = "\n".join(refused.comment)
    assert f"pct set {DNS1_VMID} --mp1" in text and "root_lane: {via: ticket" in text

    plan = guest_lifecycle.present(make_context(targets, bao, store=store), LXC, "dns", True, **declared)
    assert plan.result is None, plan.comment
    assert set(plan.changes) == {"mp1", "memory"}
    assert f"CT {DNS1_VMID} on pve1: would write mp1 {VIA}; memory with the provision token" in plan.comment
    assert _writes(fresh_cluster, start) == [], "a plan writes nothing"
    assert _logins(fresh_cluster, start) == [LOGIN], "the plan checked the lane: a ticket for root@pam"

    begun = len(fresh_cluster.pve.senders)
    done = guest_lifecycle.present(make_context(targets, bao, store=store), LXC, "dns", False, **declared)
    assert done.result is True, done.comment
    provision = fresh_cluster.seeded.provision_token[0]
    # The token writes what it may; the bind mount goes as root@pam with the ticket, never the token.
    assert _writes(fresh_cluster, begun) == [("PUT", CONFIG, provision), ("PUT", CONFIG, "root@pam")]
    assert _logins(fresh_cluster, begun) == [LOGIN], "one login per run"
    reads = {who for method, _, who in fresh_cluster.pve.senders[begun:] if method == "GET"}
    assert reads == {fresh_cluster.seeded.read_token[0]}, "reads stay on the read token"
    bodies = [
        body for method, path, body in fresh_cluster.pve.requests if method == "PUT" and path.endswith(CONFIG)
    ]
    assert "mp1" not in str(bodies[-2]) and "mp1" in str(bodies[-1]) and "digest=" in str(bodies[-1])
    assert "/srv/share" in str(fresh_cluster.pve.ct(DNS1_VMID).config["mp1"])

    again = guest_lifecycle.present(make_context(targets, bao, store=store), LXC, "dns", True, **declared)
    assert again.result is True and again.changes == {}, again.comment

    secrets = _secrets(fresh_cluster)
    assert len(secrets) >= 3, "tickets were issued"
    texts = [repr(outcome.salt_return("dns")) for outcome in (refused, plan, done, again)] + [
        caplog.text,
        rows.read_text(),
    ]
    assert not [index for index, secret in enumerate(secrets) for text in texts if secret in text]


def test_a_container_created_with_a_bind_mount_writes_it_with_the_ticket(fresh_cluster, openbao, bao_creds):
    """pve-container create_vm runs check_ct_modify_config_perm over its form: the token creates,
    then the lane writes the bind mount (guest.lane.create_write)."""
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    store = MemoryStore()
    declared = declaration(vmid=151, mp1=BIND)
    plan = guest_lifecycle.present(make_context(targets, bao, store=store), LXC, "web", True, **declared)
    assert plan.result is None, plan.comment
    assert plan.comment[0].endswith(f"with the provision token; then write mp1 {VIA}")
    start = len(fresh_cluster.pve.senders)
    done = guest_lifecycle.present(make_context(targets, bao, store=store), LXC, "web", False, **declared)
    assert done.result is True, done.comment
    provision = fresh_cluster.seeded.provision_token[0]
    assert _writes(fresh_cluster, start) == [
        ("POST", "/nodes/pve1/lxc", provision),
        ("PUT", "/nodes/pve1/lxc/151/config", "root@pam"),
    ]
    assert "/srv/share" in str(fresh_cluster.pve.ct(151).config["mp1"])


def test_raw_lxc_lines_are_refused_with_the_ticket_lane(fresh_cluster, openbao, bao_creds):
    """No API call writes a container's raw lxc.* lines (pve-container LXC/Config.pm): they are
    written into /etc/pve on the node, which only the pvesh lane can."""
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    start = len(fresh_cluster.pve.senders)
    gpu = [["lxc.cgroup2.devices.allow", "c 226:0 rwm"]]
    for test in (True, False):
        outcome = guest_lifecycle.present(
            make_context(targets, bao, store=_owned(fresh_cluster)), LXC, "dns", test, **_declared(lxc=gpu)
        )
        text = "\n".join(outcome.comment)
        assert outcome.result is False, text
        assert "lxc: needs the pvesh lane (files under /etc/pve are written on the node)" in text
    assert _writes(fresh_cluster, start) == []


def test_snippets_are_refused_with_the_ticket_lane(fresh_cluster, openbao, bao_creds, tmp_path):
    """pve-storage API2/Storage/Status.pm upload takes no snippets: a snippet is a file written on a node."""
    add_snippet_storage(fresh_cluster.pve, tmp_path / "store")
    (tmp_path / "store").mkdir()
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    for test in (True, False):
        outcome = snippet_lifecycle.present(
            make_context(targets, bao),
            test,
            "ud",
            name="user.yaml",
            storage="snip",
            content="#cloud-config\n",
        )
        assert outcome.result is False
        text = "\n".join(outcome.comment)
        assert (
            "needs the pvesh lane (files in the storage's snippets directory are written on the node)" in text
        )
    assert not (tmp_path / "store" / "snippets").exists()


def test_a_root_with_a_second_factor_is_refused_at_plan(fresh_cluster, openbao, bao_creds):
    """create_ticket_do: a user with TFA is answered NeedTFA, and its ticket serves POST /access/tfa only."""
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    fresh_cluster.pve.tfa = True
    start = len(fresh_cluster.pve.senders)
    outcome = guest_lifecycle.present(
        make_context(targets, bao, store=_owned(fresh_cluster)), LXC, "dns", True, **_declared(mp1=BIND)
    )
    text = "\n".join(outcome.comment)
    assert outcome.result is False
    assert "has a second factor" in text and "NeedTFA" in text and "Use root_lane: pvesh" in text
    assert _writes(fresh_cluster, start) == []


def test_a_wrong_password_names_the_openbao_path_never_the_value(fresh_cluster, openbao, bao_creds, caplog):
    """PVE answers a wrong password 401 authentication failure (create_ticket)."""
    caplog.set_level(logging.DEBUG)
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    kept = fresh_cluster.pve.password
    fresh_cluster.pve.password = "r00t-changed-since"
    outcome = guest_lifecycle.present(
        make_context(targets, bao, store=_owned(fresh_cluster)), LXC, "dns", False, **_declared(mp1=BIND)
    )
    text = "\n".join(outcome.comment)
    assert outcome.result is False
    assert f"no ticket for root@pam with the password from OpenBao {ROOT_PASSWORD_KV2} (key password)" in text
    assert "401 authentication failure" in text
    assert kept not in repr(outcome.salt_return("dns")) and kept not in caplog.text


def test_a_token_openbao_does_not_let_read_the_password_is_refused(fresh_cluster, openbao, bao_creds):
    """OpenBao's policy on the password's path is what guards root: without it, no lane."""
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds, readable=False)
    start = len(fresh_cluster.pve.senders)
    outcome = guest_lifecycle.present(
        make_context(targets, bao, store=_owned(fresh_cluster)), LXC, "dns", True, **_declared(mp1=BIND)
    )
    text = "\n".join(outcome.comment)
    assert outcome.result is False
    assert f"OpenBao {ROOT_PASSWORD_KV2} (key password): permission denied (HTTP 403)" in text
    assert _logins(fresh_cluster, start) == [], "no login was tried"


def test_a_ticket_lane_with_static_credentials_is_refused_naming_the_key(cluster):
    lane = {"via": "ticket", "password": {"path": ROOT_PASSWORD_KV2}}
    with pytest.raises(
        DeclarationError, match=f"proxmox:targets:{TARGET}:root_lane:via: the ticket lane reads"
    ):
        make_context(_static_targets(cluster, lane))


def test_a_vm_s_root_keys_go_with_the_ticket_at_create_and_update(fresh_cluster, openbao, bao_creds):
    """qemu-server ``API2/Qemu.pm`` ``$check_vm_modify_config_perm`` ("only root can set 'args'
    config") and ``check_vm_create_usb_perm`` (a host USB device): the token creates the VM without
    them, the ticket writes them, and a later change of ``args`` goes the same way."""
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    store = MemoryStore()
    declared = vm(vmid=156, args="-device intel-hda", usb0="host=1234:5678")
    plan = guest_lifecycle.present(make_context(targets, bao, store=store), QEMU, "vm", True, **declared)
    assert plan.result is None, plan.comment
    assert plan.comment[0].endswith(f"with the provision token; then write args, usb0 {VIA}")
    start = len(fresh_cluster.pve.senders)
    done = guest_lifecycle.present(make_context(targets, bao, store=store), QEMU, "vm", False, **declared)
    assert done.result is True, done.comment
    provision = fresh_cluster.seeded.provision_token[0]
    assert _writes(fresh_cluster, start) == [
        ("POST", "/nodes/pve1/qemu", provision),
        ("PUT", "/nodes/pve1/qemu/156/config", "root@pam"),
    ]
    changed = {**declared, "args": "-device intel-hda -device hda-duplex"}
    begun = len(fresh_cluster.pve.senders)
    update = guest_lifecycle.present(make_context(targets, bao, store=store), QEMU, "vm", False, **changed)
    assert update.result is True and set(update.changes) == {"args"}, update.comment
    assert _writes(fresh_cluster, begun) == [("PUT", "/nodes/pve1/qemu/156/config", "root@pam")]
    assert fresh_cluster.pve.vm(156).config["args"] == changed["args"]
    again = guest_lifecycle.present(make_context(targets, bao, store=store), QEMU, "vm", True, **changed)
    assert again.result is True and again.changes == {}, again.comment
