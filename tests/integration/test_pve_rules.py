"""PVE's refusals predicted at plan, and what differs between PVE 8 and PVE 9, against a served fake.

fakepve answers ``GET /version`` from ``pve.version``/``pve.release_version``; each test sets an 8.x
or a 9.x release. Where fakepve differs from PVE (it sorts tags on every write, whatever the
datacenter's tag-style; it takes a privileged create without Sys.Modify), the test says so and
judges the plan only; ``tests/unit/test_pve_rules.py`` pins PVE's behaviour.
"""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple import acl, pool, role
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.cluster import DNS1_VMID, PROVISION_TOKEN_ID
from tests.support.guests import (
    TARGET,
    bao_targets,
    declaration,
    dns1,
    make_context,
    requests_since,
    static_targets,
    writes,
)

PVE8 = ("8.4.14", "8.4")
PVE9 = ("9.0.10", "9.0")


def _release(served, release):
    served.pve.version, served.pve.release_version = release


def _dns1_row(served):
    return MemoryStore(
        {
            row_key(TARGET, "lxc", DNS1_VMID): {
                "phase": OWNED,
                "instance": "x",
                "state_id": "dns",
                "declared": {"vmid": DNS1_VMID, "node": "pve1"},
                "fingerprint": guest_identity.live_fingerprint(LXC, served.pve.ct(DNS1_VMID).config),
            }
        }
    )


# ------------------------------------------------------------------- PVE 8 and 9: role privileges


@pytest.mark.parametrize(
    ("release", "known", "unknown"),
    [
        pytest.param(PVE8, "VM.Monitor", "VM.GuestAgent.Audit", id="pve8"),
        pytest.param(PVE9, "VM.GuestAgent.Audit", "VM.Monitor", id="pve9"),
    ],
)
def test_role_privileges_are_judged_by_the_clusters_release(fresh_cluster, release, known, unknown):
    # pve-access-control AccessControl.pm $privgroups: VM.Monitor on stable-bookworm (PVE 8) only;
    # VM.GuestAgent.* and VM.Replicate on master (PVE 9) only. verify_privname refuses the others.
    _release(fresh_cluster, release)
    ctx = make_context(static_targets(fresh_cluster), cache={})
    start = len(fresh_cluster.pve.requests)
    fine = present(ctx, role.SPEC, True, "ok", name="Watch", privs=["VM.Audit", known])
    assert fine.result is None, fine.comment
    refused = present(ctx, role.SPEC, True, "bad", name="Watch2", privs=["VM.Audit", unknown])
    assert refused.result is False
    assert f"privs: {unknown} is not a privilege of PVE {release[1]}" in "\n".join(refused.comment)
    log = requests_since(fresh_cluster, start)
    assert writes(log) == []
    # /version is read once per run, whatever the number of declarations judged by it.
    assert [p for m, p, _ in log if p == "/version"] == ["/version"]


def test_a_role_of_common_privileges_reads_no_version(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), cache={})
    start = len(fresh_cluster.pve.requests)
    assert present(ctx, role.SPEC, True, "r", name="Reader", privs=["VM.Audit", "Sys.Audit"]).result is None
    assert "/version" not in [p for _, p, _ in requests_since(fresh_cluster, start)]


# ------------------------------------------------------------------- PVE 8 and 9: unprivileged


@pytest.mark.parametrize(
    ("release", "result", "said"),
    [
        pytest.param(PVE9, None, "as unprivileged (PVE 9.0's default", id="pve9-unprivileged"),
        pytest.param(PVE8, False, "Any feature on a privileged guest", id="pve8-privileged"),
    ],
)
def test_an_undeclared_unprivileged_follows_the_release(fresh_cluster, release, result, said):
    # pve-container API2/LXC.pm create_vm: unprivileged defaults to 1 since pve-container 6.0.6
    # (PVE 9); on PVE 8 a create without it is privileged, where nesting is root@pam's.
    _release(fresh_cluster, release)
    ctx = make_context(static_targets(fresh_cluster), cache={})
    plan = guest_lifecycle.present(ctx, LXC, "web", True, **declaration(unprivileged=None))
    assert plan.result is result, plan.comment
    assert said in "\n".join(plan.comment)


# ------------------------------------------------------------------- tag-style


@pytest.mark.parametrize(
    ("style", "tags", "drift"),
    [
        pytest.param({}, "infra;dns", False, id="default-order-is-spelling"),
        pytest.param({"ordering": "config"}, "infra;dns", True, id="ordering-config-keeps-order"),
        pytest.param({}, "Infra;dns", False, id="default-case-is-spelling"),
        pytest.param({"case-sensitive": 1}, "Infra;dns", True, id="case-sensitive-keeps-case"),
    ],
)
def test_tags_are_compared_as_the_datacenter_tag_style_stores_them(fresh_cluster, style, tags, drift):
    # pve-guest-common GuestHelpers.pm get_unique_tags. Plan only: fakepve sorts and lower-cases tags
    # on every write whatever the tag-style, where PVE keeps the order (ordering=config) and case.
    fresh_cluster.pve.datacenter = {"tag-style": style} if style else {}
    ctx = make_context(static_targets(fresh_cluster), cache={}, store=_dns1_row(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(
        ctx, LXC, "dns", True, **dns1(description="Resolver for the lab", tags=tags)
    )
    assert plan.result is (None if drift else True), plan.comment
    assert ("tags" in plan.changes) is drift
    log = requests_since(fresh_cluster, start)
    assert [p for _, p, _ in log].count("/cluster/options") == 1


# ------------------------------------------------------------------- pools


def test_a_nested_pool_without_its_parent_is_refused_at_plan(fresh_cluster):
    # pve-manager API2/Pool.pm create_pool: "parent 'lab' of pool 'lab/web' does not exist".
    ctx = make_context(static_targets(fresh_cluster), cache={})
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, pool.SPEC, True, "web", name="lab/web")
    assert plan.result is False
    assert "its parent pool lab does not exist" in plan.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_nested_pool_whose_parent_this_run_creates_is_planned(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), cache={})
    assert present(ctx, pool.SPEC, True, "lab", name="lab").result is None
    assert present(ctx, pool.SPEC, True, "web", name="lab/web").result is None
    assert present(ctx, pool.SPEC, False, "lab", name="lab").result is True
    done = present(ctx, pool.SPEC, False, "web", name="lab/web")
    assert done.result is True, done.comment


def test_deleting_a_pool_with_members_is_refused_naming_them(fresh_cluster):
    # delete_pool: "pool 'prod' is not empty (contains VM 120)", and sub-pools first.
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, pool.SPEC, False, "prod", name="prod").result is True
    assert present(ctx, pool.SPEC, False, "sub", name="prod/sub").result is True
    fresh_cluster.pve.pools["prod"].add(DNS1_VMID)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        gone = absent(ctx, pool.SPEC, test, "prod", "destroy", name="prod")
        assert gone.result is False and gone.changes == {}
        assert "pool prod still has members (pool prod/sub, CT 120)" in gone.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "prod" in fresh_cluster.pve.pools


PVE80 = ("8.0.4", "8.0")


@pytest.mark.parametrize(("release", "one"), [(PVE80, True), (PVE8, False), (PVE9, False)])
def test_pool_writes_follow_the_release(fresh_cluster, release, one):
    # pve-manager 8.0.4 PVE/API2/Pool.pm has only /pools/{poolid} for read, update and delete; 8.1
    # moved them to /pools with the poolid as a parameter. fakepve answers both forms on every
    # release (it does not refuse a poolid query on 8.0 as PVE does: tests/unit/test_simple_objects.py
    # pins that), so this judges which form is sent.
    _release(fresh_cluster, release)
    store = MemoryStore()
    start = len(fresh_cluster.pve.requests)
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, pool.SPEC, False, "p", name="prod", comment="one").result is True
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, pool.SPEC, False, "p", name="prod", comment="two").result is True
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert absent(ctx, pool.SPEC, False, "p", "destroy", name="prod").result is True
    assert "prod" not in fresh_cluster.pve.pools
    sent = [(method, path) for method, path, _ in requests_since(fresh_cluster, start)]
    assert [entry for entry in sent if entry[0] != "GET"] == [
        ("POST", "/pools"),
        ("PUT", "/pools/prod" if one else "/pools"),
        ("DELETE", "/pools/prod" if one else "/pools"),
    ]
    assert (("GET", "/pools/prod") in sent) is one


# ------------------------------------------------------------------- ACL entries


@pytest.mark.parametrize(
    ("names", "said"),
    [
        pytest.param({"role": "Nope", "user": "root@pam"}, "role Nope does not exist", id="role"),
        pytest.param({"role": "PVEAuditor", "user": "ghost@pve"}, "user ghost@pve does not exist", id="user"),
        pytest.param({"role": "PVEAuditor", "group": "ghosts"}, "group ghosts does not exist", id="group"),
        pytest.param(
            {"role": "PVEAuditor", "token": "salt-provision@pve!ghost"},
            "no such token 'ghost' for user 'salt-provision@pve'",
            id="token",
        ),
    ],
)
def test_an_acl_entry_naming_what_pve_lacks_is_refused_at_plan(fresh_cluster, names, said):
    # pve-access-control API2/ACL.pm update_acl dies for each; the read token sees every role
    # (Role.pm index) and, with Sys.Audit on /, every user, token and group.
    ctx = make_context(static_targets(fresh_cluster), cache={})
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        plan = present(ctx, acl.SPEC, test, "a", path="/", **names)
        assert plan.result is False and plan.changes == {}
        assert said in plan.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []


def test_an_acl_entry_naming_a_role_this_run_creates_is_planned(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), cache={})
    assert present(ctx, role.SPEC, True, "r", name="Ops", privs=["VM.Audit"]).result is None
    plan = present(ctx, acl.SPEC, True, "a", path="/", role="Ops", token=PROVISION_TOKEN_ID)
    assert plan.result is None, plan.comment


def test_an_acl_entry_naming_what_exists_is_created(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), cache={})
    done = present(ctx, acl.SPEC, False, "a", path="/vms", role="PVEAuditor", token=PROVISION_TOKEN_ID)
    assert done.result is True, done.comment


# ------------------------------------------------------------------- containers


def _created(served, store, **over):
    ctx = make_context(static_targets(served), store=store)
    done = guest_lifecycle.present(ctx, LXC, "web", False, **declaration(**over))
    assert done.result is True, done.comment
    return served.pve.ct(150)


@pytest.mark.parametrize("state", ["protected", "running"])
def test_destroying_a_protected_or_running_container_is_refused_at_plan(fresh_cluster, state):
    # pve-container API2/LXC.pm destroy_vm: check_protection ("protection mode enabled") and
    # "unable to destroy CT 150 - container is running" without force, which is never sent.
    store = MemoryStore()
    ct = _created(fresh_cluster, store)
    if state == "protected":
        ct.config["protection"] = 1
    else:
        ct.status = "running"
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        gone = guest_lifecycle.absent(ctx, LXC, "web", test, vmid=150, node="pve1", removal="destroy")
        assert gone.result is False and gone.changes == {}
        said = "has protection: 1" if state == "protected" else "is running"
        assert said in gone.comment[0], gone.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.ct(150) is not None


def test_a_volume_change_on_a_protected_container_is_refused_at_plan(fresh_cluster):
    # LXC/Config.pm update_pct_config: check_protection for every rootfs/mpN write ("can't update
    # CT 150 drive 'mp0' - protection mode enabled").
    store = MemoryStore()
    ct = _created(fresh_cluster, store)
    ct.config["protection"] = 1
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(
        ctx, LXC, "web", True, **declaration(mp0="local-zfs:10,mp=/srv/data,backup=0")
    )
    assert plan.result is False
    assert "mp0: CT 150 has protection: 1" in "\n".join(plan.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


def _without_sys_modify(served):
    served.pve.acl[PROVISION_TOKEN_ID] = [
        (path, privs - {"Sys.Modify"}) for path, privs in served.pve.acl[PROVISION_TOKEN_ID]
    ]


def test_a_privileged_create_without_sys_modify_is_refused_at_plan_on_pve9(fresh_cluster):
    # create_vm (PVE 9): Sys.Modify on / for a privileged container. The read token reads the static
    # provision token's privileges (GET /access/permissions?userid=). fakepve does not check it.
    _without_sys_modify(fresh_cluster)
    over = {"unprivileged": False, "features": None}
    ctx = make_context(static_targets(fresh_cluster), cache={})
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(ctx, LXC, "web", True, **declaration(**over))
    assert plan.result is False
    assert f"the provision token {PROVISION_TOKEN_ID} does not hold it" in plan.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
    _release(fresh_cluster, PVE8)  # PVE 8 does not ask for it
    assert (
        guest_lifecycle.present(
            make_context(static_targets(fresh_cluster)), LXC, "web", True, **declaration(**over)
        ).result
        is None
    )


def test_a_privileged_create_with_a_minted_token_is_checked_before_the_post(fresh_cluster, bao_creds):
    _without_sys_modify(fresh_cluster)
    over = {"unprivileged": False, "features": None}
    targets, bao = bao_targets(fresh_cluster, bao_creds)
    plan = guest_lifecycle.present(make_context(targets, bao), LXC, "web", True, **declaration(**over))
    assert plan.result is None
    assert "checked by the apply before the create is sent" in "\n".join(plan.comment)
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(make_context(targets, bao), LXC, "web", False, **declaration(**over))
    assert done.result is False and done.changes == {}
    assert "the provision credential does not hold it" in "\n".join(done.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


# ------------------------------------------------------------------- where fakepve differs from PVE


def test_a_fractional_new_volume_plans_clean_after_its_create(fresh_cluster):
    # PVE's create_disks allocates storage:8.3 as int(8.3*1024) = 8499 MiB (size=8499M); fakepve
    # allocates int(8.3 GiB) bytes. Sizes compare in whole MiB, so both are 8499 MiB and nothing is
    # left to grow (tests/unit/test_pve_rules.py pins PVE's 8499M).
    store = MemoryStore()
    over = {"rootfs": "local-zfs:8.3"}
    done = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", False, **declaration(**over)
    )
    assert done.result is True, done.comment
    again = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **declaration(**over)
    )
    assert (again.result, again.changes) == (True, {}), again.comment


def test_a_boolean_declared_as_on_is_sent_as_1(fresh_cluster):
    # fakepve takes protection=on; PVE's check_type takes only 1 or 0 (pinned in the unit tests).
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(ctx, LXC, "web", False, **declaration(protection="on", onboot="yes"))
    assert done.result is True, done.comment
    (post,) = writes(requests_since(fresh_cluster, start))
    form = {key: values[0] for key, values in parse_qs(post[2].decode()).items()}
    assert (form["protection"], form["onboot"]) == ("1", "1")


def test_cpuunits_above_the_cgroup_v2_clamp_is_refused_at_plan(fresh_cluster):
    # fakepve stores cpuunits 20000 as given; PVE (CGroup.pm clamp_cpu_shares, cgroup v2) stores 10000.
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(ctx, LXC, "web", True, **declaration(cpuunits=20000))
    assert plan.result is False and "cpuunits: 20000 is above 10000" in plan.comment[0]
    assert requests_since(fresh_cluster, start) == []
