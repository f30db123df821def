"""The root lane against the fake PVE: a container's bind mount, which PVE lets only root@pam add
(pve-container ``src/PVE/LXC.pm`` ``check_ct_modify_config_perm``: "mount point type bind is only
allowed for root@pam"; fakepve refuses it to every token, as PVE does), refused at plan without a
lane and written through ``pvesh`` as root@pam with one (a fake ``pvesh``, tests.support.pvesh,
forwards to fakepve with a root@pam ticket). ``SendersPve.senders`` says who sent each write."""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from tests.support.cluster import DNS1_VMID
from tests.support.guests import TARGET, make_context
from tests.support.lanes import declared_dns1 as _declared
from tests.support.lanes import lane_targets as _targets
from tests.support.lanes import owned_dns1 as _owned
from tests.support.lanes import writes_since as _writes
from tests.support.pvesh import write_fake_pvesh

BIND = "/srv/share,mp=/share"
CONFIG = f"/nodes/pve1/lxc/{DNS1_VMID}/config"


def test_a_bind_mount_without_a_lane_is_refused_naming_the_lane(cluster):
    """PVE: only root@pam may add a bind mount, and an API token never is root@pam."""
    store = _owned(cluster)
    start = len(cluster.pve.senders)
    for test in (True, False):
        outcome = guest_lifecycle.present(
            make_context(_targets(cluster), store=store), LXC, "dns", test, **_declared(mp1=BIND)
        )
        assert outcome.result is False
        text = "\n".join(outcome.comment)
        assert f"pct set {DNS1_VMID} --mp1" in text
        assert f"proxmox:targets:{TARGET}:root_lane: pvesh" in text
    assert _writes(cluster, start) == []


def test_a_bind_mount_is_planned_applied_through_pvesh_and_replans_clean(fresh_cluster, tmp_path):
    pvesh = write_fake_pvesh(fresh_cluster, tmp_path)
    lane = {"via": "pvesh", "pvesh": str(pvesh)}
    store = _owned(fresh_cluster)
    declared = _declared(mp1=BIND, memory=1024)
    start = len(fresh_cluster.pve.senders)

    plan = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", True, **declared
    )
    assert plan.result is None, plan.comment
    assert set(plan.changes) == {"mp1", "memory"}
    via = f"CT {DNS1_VMID} on pve1: would write mp1 via root lane (pvesh on pve1)"
    assert f"{via}; memory with the provision token" in plan.comment
    assert _writes(fresh_cluster, start) == [], "a plan writes nothing"

    done = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", False, **declared
    )
    assert done.result is True, done.comment
    provision = fresh_cluster.seeded.provision_token[0]
    # The token writes what it may; the bind mount goes as root@pam, never with the token.
    assert _writes(fresh_cluster, start) == [("PUT", CONFIG, provision), ("PUT", CONFIG, "root@pam")]
    bodies = [
        body for method, path, body in fresh_cluster.pve.requests if method == "PUT" and path.endswith(CONFIG)
    ]
    assert "mp1" not in str(bodies[-2]) and "mp1" in str(bodies[-1]) and "digest=" in str(bodies[-1])
    assert "/srv/share" in str(fresh_cluster.pve.ct(DNS1_VMID).config["mp1"])

    again = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", True, **declared
    )
    assert again.result is True and again.changes == {}, again.comment


def test_only_root_keys_go_through_the_lane_alone(fresh_cluster, tmp_path):
    lane = {"via": "pvesh", "pvesh": str(write_fake_pvesh(fresh_cluster, tmp_path))}
    store = _owned(fresh_cluster)
    start = len(fresh_cluster.pve.senders)
    done = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=store), LXC, "dns", False, **_declared(mp1=BIND)
    )
    assert done.result is True, done.comment
    assert _writes(fresh_cluster, start) == [("PUT", CONFIG, "root@pam")]


@pytest.mark.parametrize(
    ("fake", "needle"),
    [
        ({"root": False}, "pvesh runs only as root"),
        ({"node": "pve9"}, "names no local node"),
        (None, "pvesh is not at"),
    ],
    ids=["not-root", "not-a-member", "no-pvesh"],
)
def test_a_lane_whose_preconditions_fail_is_refused_at_plan(cluster, tmp_path, fake, needle):
    pvesh = write_fake_pvesh(cluster, tmp_path, **fake) if fake is not None else tmp_path / "absent" / "pvesh"
    lane = {"via": "pvesh", "pvesh": str(pvesh)}
    start = len(cluster.pve.senders)
    for test in (True, False):
        outcome = guest_lifecycle.present(
            make_context(_targets(cluster, lane), store=_owned(cluster)),
            LXC,
            "dns",
            test,
            **_declared(mp1=BIND),
        )
        assert outcome.result is False
        assert needle in "\n".join(outcome.comment)
    assert _writes(cluster, start) == []


def test_a_lane_on_another_cluster_is_refused(cluster, fresh_cluster, tmp_path):
    """The lane's node must be a member of the target's cluster: pvesh on a node of another cluster
    would write to that cluster's guests."""
    fresh_cluster.pve.cluster_name = "other"
    lane = {"via": "pvesh", "pvesh": str(write_fake_pvesh(cluster, tmp_path))}
    outcome = guest_lifecycle.present(
        make_context(_targets(fresh_cluster, lane), store=_owned(fresh_cluster)),
        LXC,
        "dns",
        True,
        **_declared(mp1=BIND),
    )
    assert outcome.result is False
    assert "which is not a member of target lab" in "\n".join(outcome.comment)


def test_a_stale_digest_is_refused_through_the_lane(fresh_cluster, tmp_path):
    """The lane write carries the digest it was judged against: PVE refuses it once the config
    changed (pve-common ``PVE/Tools.pm`` ``assert_if_modified``), and pvesh prints the bare die."""
    lane = {"via": "pvesh", "pvesh": str(write_fake_pvesh(fresh_cluster, tmp_path))}
    store = _owned(fresh_cluster)
    ctx = make_context(_targets(fresh_cluster, lane), store=store)
    original = ctx.lane.request

    def changed_meanwhile(method, path, credential=None, params=None, form=None, **more):
        if method == "PUT":
            fresh_cluster.pve.ct(DNS1_VMID).config["cores"] = 2
        return original(method, path, credential, params=params, form=form, **more)

    ctx.lane.request = changed_meanwhile
    done = guest_lifecycle.present(ctx, LXC, "dns", False, **_declared(mp1=BIND))
    assert done.result is False
    assert "The config changed after it was read" in "\n".join(done.comment)


def test_a_bad_root_lane_is_refused_naming_the_key(cluster):
    with pytest.raises(DeclarationError, match=f"proxmox:targets:{TARGET}:root_lane:via: expected pvesh"):
        make_context(_targets(cluster, {"via": "ssh"}))
