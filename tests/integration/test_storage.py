"""Storage definitions through the simple-object lifecycle, against a served fake PVE (fakepve's
stateful storage.cfg, pve-storage ``API2/Storage/Config.pm``). Each test counts the requests the fake saw."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from salt_proxmox.storage.objects import SPEC
from tests.support.guests import make_context, requests_since, static_targets, writes

#: One declaration per type: what it needs at create (pve-storage ``<X>Plugin.pm`` ``options()``), and a
#: fixed option with another value.
TYPES = {
    "nfs": (
        {"server": "192.0.2.20", "export": "/export/pve", "content": "backup,iso"},
        ("export", "/export/b"),
    ),
    "dir": ({"path": "/srv/store", "content": ["iso", "vztmpl"]}, ("path", "/srv/other")),
    "lvmthin": ({"vgname": "pve", "thinpool": "data", "content": "rootdir,images"}, ("thinpool", "data2")),
    "zfspool": ({"pool": "rpool/data", "sparse": True}, ("pool", "rpool/other")),
    "rbd": ({"pool": "rbd", "krbd": "yes", "content": "images"}, None),
    "pbs": ({"server": "192.0.2.30", "datastore": "store1", "username": "pve@pbs"}, ("datastore", "store2")),
    "cifs": ({"server": "192.0.2.21", "share": "pve"}, ("share", "other")),
    "lvm": ({"vgname": "vg0", "shared": 1}, ("vgname", "vg1")),
    "cephfs": ({"content": "backup", "fs-name": "cephfs"}, None),
    "btrfs": ({"path": "/mnt/btrfs"}, ("path", "/mnt/btrfs2")),
}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_plan_apply_plan_clean_and_a_fixed_option_change_refused_at_plan(fresh_cluster, kind):
    options, fixed = TYPES[kind]
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    name = f"st-{kind}"
    declared = {"name": name, "type": kind, **options}
    plan = present(ctx, SPEC, True, name, **declared)
    assert plan.result is None, plan.comment
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, SPEC, False, name, **declared)
    assert done.result is True, done.comment
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [("POST", "/storage")]
    start = len(fresh_cluster.pve.requests)
    again = present(ctx, SPEC, True, name, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    if fixed is None:
        return
    key, other = fixed
    refused = present(ctx, SPEC, True, name, **{**declared, key: other})
    assert refused.result is False
    assert f"can't change value of fixed parameter '{key}'" in " ".join(refused.comment)


def test_nfs_path_pve_fills_in_is_no_drift(fresh_cluster):
    """NFSPlugin.pm check_config: /mnt/pve/<id> when no path is given at create."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {"name": "backups", "type": "nfs", "server": "192.0.2.20", "export": "/export/pve"}
    assert present(ctx, SPEC, False, "backups", **declared).result is True
    assert fresh_cluster.pve.storages["backups"]["path"] == "/mnt/pve/backups"
    again = present(ctx, SPEC, True, "backups", **declared)
    assert (again.result, again.changes) == (True, {}), again.comment


def test_another_type_is_another_storage(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    assert present(ctx, SPEC, False, "s1", name="s1", type="dir", path="/srv/s1").result is True
    refused = present(ctx, SPEC, True, "s1", name="s1", type="btrfs", path="/srv/s1")
    assert refused.result is False and "new storage ID" in " ".join(refused.comment)


def test_a_secret_is_sent_at_create_and_on_a_new_serial_only_and_never_shown(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    declared = {"name": "nas", "type": "cifs", "server": "192.0.2.21", "share": "pve", "username": "pve"}
    secret = "s3cr3t-Pa55"
    plan = present(ctx, SPEC, True, "nas", **declared, password=secret, secret_serial=1)
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, SPEC, False, "nas", **declared, password=secret, secret_serial=1)
    assert done.result is True, done.comment
    assert "password" in _form(writes(requests_since(fresh_cluster, start))[0][2]), "sent at create"
    assert "password" not in fresh_cluster.pve.storage_config("nas"), "PVE never reads it back"
    start = len(fresh_cluster.pve.requests)
    again = present(ctx, SPEC, True, "nas", **declared, password=secret, secret_serial=1)
    assert (again.result, again.changes) == (True, {}), again.comment
    start = len(fresh_cluster.pve.requests)
    rotated = present(ctx, SPEC, False, "nas", **declared, password="n3w-Pa55", secret_serial=2)
    assert rotated.result is True, rotated.comment
    assert rotated.changes == {"secret_serial": {"old": 1, "new": 2}}
    assert "password" in _form(writes(requests_since(fresh_cluster, start))[0][2]), (
        "sent again on a new serial"
    )
    for shown in (plan, done, again, rotated):
        text = repr((shown.comment, shown.changes))
        assert secret not in text and "n3w-Pa55" not in text
    assert secret not in repr(store.rows) and "n3w-Pa55" not in repr(store.rows)


def test_silent_drops_refused_at_plan(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    bad = present(ctx, SPEC, True, "z", name="zz", type="zfspool", pool="rpool", content="images,iso")
    assert bad.result is False and "does not take iso" in " ".join(bad.comment)
    shared = present(ctx, SPEC, True, "n", name="nn", type="nfs", server="a", export="/e", shared=1)
    assert shared.result is False and "always shared" in " ".join(shared.comment)
    nodes = present(ctx, SPEC, True, "d", name="dd", type="dir", path="/srv/d", nodes="pve1,pve9")
    assert nodes.result is False and "pve9 is not a node of this cluster" in " ".join(nodes.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


def test_destroy_refused_while_a_guest_has_a_volume_there_and_says_data_stays(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {"name": "vmstore", "type": "zfspool", "pool": "rpool/vm"}
    assert present(ctx, SPEC, False, "vmstore", **declared).result is True
    guest = next(ct for ct in fresh_cluster.pve.cts if ct.vmid == 120)
    guest.config["mp0"] = "vmstore:subvol-120-disk-1,mp=/data,size=1G"
    start = len(fresh_cluster.pve.requests)
    refused = absent(ctx, SPEC, True, "vmstore", "destroy", name="vmstore")
    assert refused.result is False and "CT 120 mp0" in " ".join(refused.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
    del guest.config["mp0"]
    plan = absent(ctx, SPEC, True, "vmstore", "destroy", name="vmstore")
    assert plan.result is None and "never removes the data" in " ".join(plan.comment)
    assert absent(ctx, SPEC, False, "vmstore", "destroy", name="vmstore").result is True
    assert "vmstore" not in fresh_cluster.pve.storages


@pytest.mark.parametrize("kind", ["iscsi", "iscsidirect"])
def test_an_iscsi_storage_declares_its_target_as_iscsi_target(fresh_cluster, kind):
    """ISCSIPlugin.pm properties(): the IQN is PVE's ``target``; a state's ``target`` names the cluster,
    so the declaration spells it iscsi_target, sent and read back as PVE's target."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    name = f"st-{kind}"
    declared = {
        "name": name,
        "type": kind,
        "portal": "192.0.2.40",
        "iscsi_target": "iqn.2003-01.org.example:disks",
        "content": "images",
    }
    plan = present(ctx, SPEC, True, name, **declared)
    assert plan.result is None, plan.comment
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, SPEC, False, name, **declared)
    assert done.result is True, done.comment
    sent = [body for method, path, body in writes(requests_since(fresh_cluster, start))]
    assert len(sent) == 1
    assert fresh_cluster.pve.storages[name]["target"] == "iqn.2003-01.org.example:disks"
    assert "iscsi_target" not in fresh_cluster.pve.storages[name]
    start = len(fresh_cluster.pve.requests)
    again = present(ctx, SPEC, True, name, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    refused = present(ctx, SPEC, True, name, **{**declared, "iscsi_target": "iqn.2003-01.org.example:other"})
    assert refused.result is False
    assert "can't change value of fixed parameter 'target'" in " ".join(refused.comment)


def test_destroy_refused_while_a_guest_declared_later_in_the_run_names_it(fresh_cluster, tmp_path):
    """The formula runs storage before guests: a container state later in the same run whose rootfs names
    the storage would need the definition this destroy deletes, so the destroy is refused at plan."""
    from tests.support.saltworld import Low, SaltWorld

    world = SaltWorld(
        {"proxmox": {"targets": static_targets(fresh_cluster)}}, {}, tmp_path / "salt_proxmox_owned.json"
    )
    made = Low("proxmox_storage", "present", {"name": "st-gone", "type": "dir", "path": "/srv/gone"})
    assert [r["result"] for r in world.run([made], test=False)] == [True]
    gone = Low("proxmox_storage", "absent", {"name": "st-gone", "removal": "destroy"})
    alone = world.run([gone], test=True)
    assert alone[0]["result"] is None, alone
    web = Low("proxmox_lxc", "present", {"name": "web", "vmid": 150, "node": "pve1", "rootfs": "st-gone:8"})
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = world.run([gone, web], test=test)[0]
        assert refused["result"] is False and "web (rootfs)" in refused["comment"], refused
    assert [w for w in writes(requests_since(fresh_cluster, start)) if w[1].startswith("/storage")] == []
    assert "st-gone" in fresh_cluster.pve.storages
