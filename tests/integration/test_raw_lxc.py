"""A container's GPU through the root lane against the fake PVE: ``devN`` (pve-container
``src/PVE/LXC.pm`` ``check_ct_modify_config_perm``: "configuring device passthrough is only allowed
for root@pam") through ``pvesh`` as root@pam, and raw ``lxc.*`` lines (no API call writes them:
``LXC/Config.pm`` ``parse_pct_config``) written into the node's config file under PVE's config lock.
The file tree is a temporary ``/etc/pve`` (``tests.support.pmxcfs``), pointed at by the lane's
``pve_dir``/``lock_dir``; ``SendersPve.senders`` says who sent each write."""

from __future__ import annotations

import hashlib

import pytest

from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from tests.support.cluster import DNS1_VMID
from tests.support.guests import TARGET, make_context
from tests.support.lanes import declared_dns1 as _declared
from tests.support.lanes import lane_targets as _targets
from tests.support.lanes import owned_dns1 as _owned
from tests.support.lanes import writes_since as _writes
from tests.support.pvesh import write_fake_pvesh

GPU = [["lxc.cgroup2.devices.allow", "c 226:0 rwm"], ["lxc.cgroup2.devices.allow", "c 226:128 rwm"]]
DEV = "/dev/dri/renderD128,gid=104,mode=0660"
CONFIG = f"/nodes/pve1/lxc/{DNS1_VMID}/config"


@pytest.fixture
def lane(fresh_cluster, tmp_path):
    """A fake pvesh on pve1 and a temporary /etc/pve the fake cluster keeps the containers' files in."""
    pve_dir, lock_dir = tmp_path / "etc" / "pve", tmp_path / "run" / "lock"
    fresh_cluster.pve.pve_dir = pve_dir
    pvesh = write_fake_pvesh(fresh_cluster, tmp_path / "bin")
    return {"via": "pvesh", "pvesh": str(pvesh), "pve_dir": str(pve_dir), "lock_dir": str(lock_dir)}


def _file(fresh_cluster):
    return fresh_cluster.pve.pve_dir / "nodes" / "pve1" / "lxc" / f"{DNS1_VMID}.conf"


def test_without_a_lane_the_gpu_is_refused_naming_the_lane(cluster):
    store = _owned(cluster)
    start = len(cluster.pve.senders)
    for test in (True, False):
        outcome = guest_lifecycle.present(
            make_context(_targets(cluster), store=store), LXC, "dns", test, **_declared(dev0=DEV, lxc=GPU)
        )
        text = "\n".join(outcome.comment)
        assert outcome.result is False, text
        assert f"pct set {DNS1_VMID} --dev0" in text
        assert (
            f"/etc/pve/nodes/pve1/lxc/{DNS1_VMID}.conf" in text
            and "+ lxc.cgroup2.devices.allow: c 226:0 rwm" in text
        )
        assert f"proxmox:targets:{TARGET}:root_lane: pvesh" in text
    assert _writes(cluster, start) == []


def test_a_gpu_is_planned_applied_through_the_lane_and_replans_clean(fresh_cluster, lane):
    store = _owned(fresh_cluster)
    declared = _declared(dev0=DEV, lxc=GPU, memory=1024)
    plan = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", True, **declared
    )
    assert plan.result is None, plan.comment
    assert {"dev0", "lxc", "memory"} <= set(plan.changes)
    text = "\n".join(plan.comment)
    assert "would write dev0, lxc via root lane (pvesh on pve1); memory with the provision token" in text, (
        text
    )
    before = _file(fresh_cluster).read_text()
    start = len(fresh_cluster.pve.senders)

    done = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", False, **declared
    )
    assert done.result is not False, done.comment
    provision = fresh_cluster.seeded.provision_token[0]
    # The token writes memory; dev0 goes through pvesh as root@pam; the raw lines are a file edit.
    assert _writes(fresh_cluster, start) == [("PUT", CONFIG, provision), ("PUT", CONFIG, "root@pam")]
    bodies = [b for m, p, b in fresh_cluster.pve.requests if m == "PUT" and p.endswith(CONFIG)]
    assert "lxc" not in str(bodies[-1]) and "lxc" not in str(bodies[-2])
    ct = fresh_cluster.pve.ct(DNS1_VMID)
    assert ct.config["lxc"] == GPU
    after = _file(fresh_cluster).read_text()
    # Every line but the raw ones (and the keys the API writes changed) is kept.
    kept = [line for line in before.splitlines() if not line.startswith(("lxc.", "memory:", "dev0:"))]
    assert [line for line in after.splitlines() if not line.startswith(("lxc.", "memory:", "dev0:"))] == kept
    assert "lxc.cgroup2.devices.allow: c 226:0 rwm\nlxc.cgroup2.devices.allow: c 226:128 rwm\n" in after

    again = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment


def test_a_file_changed_between_judging_and_writing_is_never_written(fresh_cluster, lane):
    """Another writer edited the file after the config was read: its SHA-1 is not the digest judged
    (parse_pct_config: digest => sha1_hex($raw)), so nothing is written."""
    store = _owned(fresh_cluster)
    ctx = make_context(_targets(fresh_cluster, lane), store=store)
    guest_lifecycle.present(ctx, LXC, "dns", True, **_declared())  # the file exists once the fake answered
    original = ctx.client.request
    path = _file(fresh_cluster)

    def edited_meanwhile(method, url, credential=None, params=None, form=None, **more):
        answer = original(method, url, credential, params=params, form=form, **more)
        if method == "GET" and url.endswith("/config") and params == {"current": "1"}:
            path.write_text(path.read_text() + "lxc.mount.entry: /srv srv none bind 0 0\n")
        return answer

    ctx = make_context(_targets(fresh_cluster, lane), store=store)
    ctx.client.request = edited_meanwhile
    done = guest_lifecycle.present(ctx, LXC, "dns", False, **_declared(lxc=GPU, memory=1024))
    assert done.result is False
    assert "changed since it was judged" in "\n".join(done.comment)
    assert "226:0" not in path.read_text() and "lxc.mount.entry: /srv srv none bind 0 0" in path.read_text()


def test_a_locked_container_s_file_is_never_written(fresh_cluster, lane):
    # AbstractConfig.pm check_lock: a config with lock (a backup running) is not changed.
    store = _owned(fresh_cluster)
    guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", True, **_declared()
    )
    fresh_cluster.pve.ct(DNS1_VMID).lock = "backup"
    for test in (True, False):
        outcome = guest_lifecycle.present(
            make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", test, **_declared(lxc=GPU)
        )
        assert outcome.result is False, outcome.comment
        assert "backup" in "\n".join(outcome.comment)
    assert "226:0" not in _file(fresh_cluster).read_text()


def test_a_container_on_another_node_than_the_lane_is_refused(fresh_cluster, lane, tmp_path):
    """The config lock is the container's node's flock (pve-guest-common AbstractConfig.pm
    lock_config): a lane on pve2 cannot take it for a container on pve1."""
    lane = {**lane, "pvesh": str(write_fake_pvesh(fresh_cluster, tmp_path / "pve2", node="pve2"))}
    outcome = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=_owned(fresh_cluster)),
        LXC,
        "dns",
        True,
        **_declared(lxc=GPU),
    )
    assert outcome.result is False
    assert "the root lane runs on pve2. Run these states on node pve1" in "\n".join(outcome.comment)


def test_the_fake_s_digest_is_the_file_s_sha1(fresh_cluster, lane):
    """pve-container parse_pct_config: the digest GET …/config answers is the SHA-1 of the raw file,
    which the raw-line write is guarded by."""
    guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=_owned(fresh_cluster)),
        LXC,
        "dns",
        True,
        **_declared(),
    )
    raw = _file(fresh_cluster).read_text()
    assert fresh_cluster.pve.ct(DNS1_VMID).digest() == hashlib.sha1(raw.encode()).hexdigest()  # noqa: S324
