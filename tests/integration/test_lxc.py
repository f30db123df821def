"""Containers against a real fake PVE (fakepve validates every parameter against PVE 9's schema,
keeps digests, enforces root-only rules and runs tasks): create, adopt, update, resize, refusals,
proven absence, and the request counts of a no-drift plan and apply."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import CREATING, OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.errors import PveError
from tests.support.cluster import DNS1_CONFIG, DNS1_VMID, ROUTER_VMID
from tests.support.guests import (
    TARGET,
    bao_targets,
    count_openbao_requests,
    declaration,
    dns1,
    make_context,
    requests_since,
    static_targets,
    writes,
)


def _dns1(**over):
    """The seeded running container 120, declared as it is (with its description)."""
    return dns1(description="Resolver for the lab", **over)


def test_create_records_ownership_and_second_plan_is_clean(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = guest_lifecycle.present(ctx, LXC, "web", True, **declaration())
    assert plan.result is None, plan.comment
    assert "would be created" in plan.comment[0]
    assert writes(requests_since(fresh_cluster, 0)) == [], "a plan writes nothing"
    assert store.saves == 0, "a plan writes no grains"

    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(ctx, LXC, "web", False, **declaration())
    assert done.result is True, done.comment
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in writes(log)] == [("POST", "/nodes/pve1/lxc")]
    form = writes(log)[0][2]
    assert "keyctl" not in str(form)
    # The task is polled with the credential that started it: fakepve lets only the owner read it.
    assert any("/tasks/UPID:" in path and path.endswith("/status") for _, path, _ in log)
    row = store.rows[row_key(TARGET, "lxc", 150)]
    assert row["phase"] == OWNED and row["state_id"] == "web"
    assert "description" not in row["declared"], "notes a human wrote are never stored"

    again = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **declaration()
    )
    assert again.result is True and again.changes == {}, again.comment


def test_create_writes_creating_row_before_the_post(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    seen_rows = []
    original = ctx.client.request

    def spy(method, path, credential, params=None, form=None, **more):
        if method == "POST":
            seen_rows.append(dict(store.rows))
        return original(method, path, credential, params=params, form=form, **more)

    ctx.client.request = spy
    assert guest_lifecycle.present(ctx, LXC, "web", False, **declaration()).result is True
    assert seen_rows[0][row_key(TARGET, "lxc", 150)]["phase"] == CREATING


def test_unowned_guest_is_refused_without_adopt_and_taken_over_with_it(cluster):
    start = len(cluster.pve.requests)
    refused = guest_lifecycle.present(make_context(static_targets(cluster)), LXC, "dns", False, **_dns1())
    assert refused.result is False
    assert "adopt: true" in "\n".join(refused.comment)
    assert writes(requests_since(cluster, start)) == []

    store = MemoryStore()
    adopted = guest_lifecycle.present(
        make_context(static_targets(cluster), store=store), LXC, "dns", False, adopt=True, **_dns1()
    )
    assert adopted.result is True, adopted.comment
    assert writes(requests_since(cluster, start)) == [], "a matching adoption writes nothing to PVE"
    assert store.rows[row_key(TARGET, "lxc", DNS1_VMID)]["phase"] == OWNED
    # The description PVE hands back with a newline and the tags in another order are no drift.
    assert cluster.pve.ct(DNS1_VMID).config["description"] == DNS1_CONFIG["description"]


def test_update_carries_the_digest_it_was_judged_against(fresh_cluster):
    store = MemoryStore()
    assert guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "dns", False, adopt=True, **_dns1()
    ).result
    ctx = make_context(static_targets(fresh_cluster), store=store)
    digest = guest_lifecycle.read_live(ctx, LXC, "pve1", DNS1_VMID).digest
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(ctx, LXC, "dns", True, **_dns1(memory=1024, tags="infra;dns;core"))
    assert plan.result is None and set(plan.changes) == {"memory", "tags"}
    done = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns1(memory=1024, tags="infra;dns;core"))
    assert done.result is True, done.comment
    puts = writes(requests_since(fresh_cluster, start))
    assert [(m, p) for m, p, _ in puts] == [("PUT", f"/nodes/pve1/lxc/{DNS1_VMID}/config")]
    body = str(puts[0][2])
    assert f"digest={digest}" in body and "memory=1024" in body and "hwaddr" not in body
    assert fresh_cluster.pve.ct(DNS1_VMID).config["memory"] in (1024, "1024")
    clean = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "dns",
        True,
        **_dns1(memory=1024, tags="infra;dns;core"),
    )
    assert clean.result is True and clean.changes == {}


def test_a_concurrent_edit_fails_the_put_on_its_digest(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.present(ctx, LXC, "dns", False, adopt=True, **_dns1()).result
    original = ctx.client.request

    def edit_between(method, path, credential, params=None, form=None):
        if method == "PUT":
            fresh_cluster.pve.ct(DNS1_VMID).config["swap"] = 1024  # somebody else's edit
        return original(method, path, credential, params=params, form=form)

    ctx.client.request = edit_between
    failed = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns1(memory=768))
    assert failed.result is False
    assert "detected modified configuration" in "\n".join(failed.comment)
    assert fresh_cluster.pve.ct(DNS1_VMID).config["memory"] == 512


def test_grow_a_disk_is_a_resize_task_after_the_put(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.present(ctx, LXC, "dns", False, adopt=True, **_dns1()).result
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns1(rootfs="local-zfs:6", memory=640))
    assert done.result is True, done.comment
    assert done.changes["disks"] == {"rootfs": {"old": "4G", "new": "6G"}}
    order = [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))]
    assert order == [
        ("PUT", f"/nodes/pve1/lxc/{DNS1_VMID}/config"),
        ("PUT", f"/nodes/pve1/lxc/{DNS1_VMID}/resize"),
    ]
    assert "size=6G" in fresh_cluster.pve.ct(DNS1_VMID).config["rootfs"]


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"rootfs": "local-zfs:2"}, "cannot shrink"),
        ({"rootfs": "local-lvm:4"}, "pct move-volume"),
        ({"features": "nesting=1,keyctl=1"}, "pct set 120 --features 'nesting=1,keyctl=1'"),
        ({"mp1": "/srv/share,mp=/share"}, "pct set 120 --mp1"),
        # Another guest's volume: PVE would attach it and both guests would write one filesystem.
        (
            {"mp1": "local-lvm:vm-151-disk-1,mp=/data"},
            "local-lvm:vm-151-disk-1 is an existing volume, a volume of vmid 151",
        ),
        ({"dev0": "/dev/net/tun"}, "pct set 120 --dev0"),
        ({"unprivileged": False}, "unable to modify read-only option"),
        ({"memory": ""}, "unable to delete required option 'memory'"),
    ],
    ids=[
        "shrink",
        "storage-move",
        "feature-root-only",
        "bind-mount-root-only",
        "foreign-volume",
        "dev-root-only",
        "unprivileged-flip",
        "remove-memory",
    ],
)
def test_refusals_write_nothing(cluster, over, needle):
    store = MemoryStore(
        {
            row_key(TARGET, "lxc", DNS1_VMID): {
                "phase": OWNED,
                "instance": "x",
                "state_id": "dns",
                "declared": {"vmid": DNS1_VMID, "node": "pve1"},
                "fingerprint": guest_identity.live_fingerprint(LXC, cluster.pve.ct(DNS1_VMID).config),
            }
        }
    )
    start = len(cluster.pve.requests)
    for test in (True, False):
        outcome = guest_lifecycle.present(
            make_context(static_targets(cluster), store=store), LXC, "dns", test, **_dns1(**over)
        )
        assert outcome.result is False
        assert needle in "\n".join(outcome.comment)
    assert writes(requests_since(cluster, start)) == []


def test_a_vmid_held_by_a_qemu_guest_or_another_node_is_refused(cluster):
    start = len(cluster.pve.requests)
    qemu = guest_lifecycle.present(
        make_context(static_targets(cluster)), LXC, "x", False, **declaration(vmid=ROUTER_VMID)
    )
    assert qemu.result is False and "qemu guest on node pve2" in "\n".join(qemu.comment)
    moved = guest_lifecycle.present(
        make_context(static_targets(cluster)), LXC, "x", False, **declaration(vmid=DNS1_VMID, node="pve2")
    )
    # Without migrate: true a move is refused, naming the node it lives on and the opt-in (guest/migrate.py).
    said = "\n".join(moved.comment)
    assert moved.result is False and "lives on node pve1" in said and "migrate: true" in said, said
    assert writes(requests_since(cluster, start)) == []


def test_a_token_without_vm_audit_cannot_prove_absence(fresh_cluster):
    """PVE checks VM.Audit on /vms/{vmid} before it answers "does not exist", and filters the guest
    index by the same privilege: a token without it sees neither, and must not plan a create."""
    pve = fresh_cluster.pve
    pve.apitokens["blind@pve!plan"] = "blind-secret-0123456789"
    pve.grant("blind@pve!plan", "/", "Sys.Audit", "Datastore.Audit")
    targets = static_targets(fresh_cluster)
    targets[TARGET]["credentials"]["read"] = {
        "token_id": "blind@pve!plan",
        "secret": "blind-secret-0123456789",
    }
    start = len(pve.requests)
    for vmid in (DNS1_VMID, 150):
        outcome = guest_lifecycle.present(make_context(targets), LXC, "x", False, **declaration(vmid=vmid))
        assert outcome.result is False, outcome.comment
        assert "403" in "\n".join(outcome.comment)
    log = requests_since(fresh_cluster, start)
    assert writes(log) == []
    assert not any(path == "/cluster/resources" for _, path, _ in log)


def test_read_live_proves_absence_with_the_same_credential(cluster):
    ctx = make_context(static_targets(cluster))
    start = len(cluster.pve.requests)
    assert guest_lifecycle.read_live(ctx, LXC, "pve1", 999) is None
    log = requests_since(cluster, start)
    # GET …/pending answers a missing config as GET …/config does (pve-container API2/LXC.pm vm_pending
    # calls the same load_config).
    # The run's guest index (a hint) lists no 999, and GET cluster/nextid?vmid=999 proves it free now.
    assert [path for _, path, _ in log] == [
        "/nodes/pve1/lxc/999/pending",
        "/cluster/resources",
        "/cluster/nextid",
    ]


def test_generic_500_is_a_failure_not_absence(fresh_cluster):
    fresh_cluster.pve.fail("GET", "/lxc/150/pending", status=500, message="got timeout")
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(PveError) as caught:
        guest_lifecycle.read_live(make_context(static_targets(fresh_cluster)), LXC, "pve1", 150)
    assert caught.value.status == 500
    assert not any(path == "/cluster/resources" for _, path, _ in requests_since(fresh_cluster, start))


def test_absent_retain_forgets_and_destroy_deletes_only_a_matching_guest(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.present(ctx, LXC, "web", False, **declaration(vmid=160)).result
    # Somebody edits it by hand: destroy must refuse (it may not be the guest we made).
    fresh_cluster.pve.ct(160).config["hostname"] = "someone-elses"
    refused = guest_lifecycle.absent(ctx, LXC, "web", False, vmid=160, node="pve1", removal="destroy")
    assert refused.result is False and fresh_cluster.pve.ct(160) is not None
    fresh_cluster.pve.ct(160).config["hostname"] = "ct160"
    start = len(fresh_cluster.pve.requests)
    destroyed = guest_lifecycle.absent(ctx, LXC, "web", False, vmid=160, node="pve1", removal="destroy")
    assert destroyed.result is True, destroyed.comment
    deletes = [(m, p, b) for m, p, b in writes(requests_since(fresh_cluster, start))]
    assert [(m, p) for m, p, _ in deletes] == [("DELETE", "/nodes/pve1/lxc/160")]
    assert not any(word in str(deletes[0][2]) for word in ("force", "purge"))
    assert fresh_cluster.pve.ct(160) is None and store.rows == {}

    assert guest_lifecycle.present(ctx, LXC, "dns", False, adopt=True, **_dns1()).result
    kept = guest_lifecycle.absent(ctx, LXC, "dns", False, vmid=DNS1_VMID, node="pve1")
    assert kept.result is True and fresh_cluster.pve.ct(DNS1_VMID) is not None
    assert row_key(TARGET, "lxc", DNS1_VMID) not in store.rows


def test_no_drift_plan_and_apply_request_counts(fresh_cluster, bao_creds):
    """A no-drift plan of N owned containers: exactly N config GETs and one tag-style read, no
    cluster/resources call and one read mint; a no-drift apply: zero writes and no provision mint
    (counted on fakepve's request log and on the HTTP requests the hvac client sent to the OpenBao
    dev server)."""
    targets, bao = bao_targets(fresh_cluster, bao_creds)
    store = MemoryStore()
    vmids = [150, 151, 152, 153]
    ctx = make_context(targets, bao, store=store)
    for vmid in vmids:
        assert guest_lifecycle.present(ctx, LXC, f"ct{vmid}", False, **declaration(vmid=vmid)).result

    for test in (True, False):
        cache: dict = {}
        start = len(fresh_cluster.pve.requests)
        run_ctx = make_context(targets, bao, cache=cache, store=store)
        bao_seen = count_openbao_requests(run_ctx)
        for vmid in vmids:
            outcome = guest_lifecycle.present(run_ctx, LXC, f"ct{vmid}", test, **declaration(vmid=vmid))
            assert outcome.result is True and outcome.changes == {}, outcome.comment
        log = requests_since(fresh_cluster, start)
        # One GET …/pending per guest: the values in effect, the pending ones and the digest at once.
        config_gets = [p for m, p, _ in log if m == "GET" and p.endswith("/pending")]
        print(
            f"no-drift {'plan' if test else 'apply'} of {len(vmids)} owned CTs: {len(log)} PVE requests "
            f"({len(config_gets)} config GETs, {len(writes(log))} writes), OpenBao requests {bao_seen}"
        )
        # Plan and apply alike: one config read per container, plus the run's facts read once per
        # run (pve.facts: the declarations name tags, so the datacenter's tag-style), nothing
        # else, nothing written.
        per_run = [p for m, p, _ in log if m == "GET" and p in ("/version", "/cluster/options")]
        assert per_run == ["/cluster/options"]
        assert len(log) == len(vmids) + len(per_run) and len(config_gets) == len(vmids)
        assert writes(log) == []
        assert not any(p == "/cluster/resources" for _, p, _ in log)
        assert bao_seen == ["proxmox/creds/read"]
        assert cache[f"salt_proxmox.mints/{TARGET}"] == {"read": 1, "provision": 0}


def test_lxc_config_finds_the_node_and_shows_the_description(cluster):
    # proxmox.lxc_config without node: the guest index (pve-manager API2/Cluster.pm resources) names it.
    ctx = make_context(static_targets(cluster))
    start = len(cluster.pve.requests)
    config = guest_lifecycle.operator_config(ctx, LXC, DNS1_VMID)
    assert [path for _, path, _ in requests_since(cluster, start)] == [
        "/cluster/resources",
        "/nodes/pve1/lxc/120/pending",
    ]
    assert config["hostname"] == "dns1" and config["description"] == "Resolver for the lab\n"
    assert "digest" not in config and "env" not in config
    assert guest_lifecycle.operator_config(ctx, LXC, DNS1_VMID, "pve1") == config


@pytest.mark.parametrize(
    ("vmid", "node", "sentence"),
    [
        (999, None, "CT 999 does not exist: the cluster's guest index lists no guest 999."),
        (999, "pve1", "CT 999 does not exist: the cluster's guest index lists no guest 999."),
        (300, None, "vmid 300 is a qemu guest on node pve2, not a container."),
    ],
)
def test_lxc_config_of_no_container_is_a_sentence(cluster, vmid, node, sentence):
    with pytest.raises(Refused) as caught:
        guest_lifecycle.operator_config(make_context(static_targets(cluster)), LXC, vmid, node)
    assert str(caught.value) == sentence


PASSWORD = "correct horse battery"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl op@lab"


def test_create_secrets_are_sent_once_and_never_shown_kept_or_compared(fresh_cluster):
    # pve-container create_vm takes password and ssh-public-keys and writes them into the guest; no
    # GET ever reads them back, so after the create there is nothing to compare them with.
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    secrets = {"password": PASSWORD, "ssh-public-keys": SSH_KEY}
    plan = guest_lifecycle.present(ctx, LXC, "web", True, **declaration(**secrets))
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(ctx, LXC, "web", False, **declaration(**secrets))
    assert plan.result is None and done.result is True, done.comment
    ((method, path, form),) = writes(requests_since(fresh_cluster, start))
    assert (method, path) == ("POST", "/nodes/pve1/lxc")
    sent = parse_qs(form.decode() if isinstance(form, bytes) else str(form))
    # fakepve's request log masks a password as *** (it was sent; its value stays out of the log too).
    assert sent["password"] == ["***"] and sent["ssh-public-keys"] == [SSH_KEY]
    shown = repr([plan.salt_return("web"), done.salt_return("web"), store.rows])
    assert PASSWORD not in shown and "AAAAC3Nza" not in shown, "never in a return or a grain"
    assert "password, ssh-public-keys sent with the create only" in "\n".join(done.comment)
    assert "password" not in done.changes and "ssh-public-keys" not in done.changes
    # Changed or dropped afterwards: no drift, no write.
    for later in ({"password": "another secret"}, {"password": None, "ssh-public-keys": None}):
        again = guest_lifecycle.present(
            make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **declaration(**later)
        )
        assert again.result is True and again.changes == {}, again.comment


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"password": "abcd"}, "password: PVE wants at least 5 characters"),
        ({"password": 123456}, "password: expected text (quote it), got int"),
        ({"ssh-public-keys": "hunter2-is-not-a-key"}, "ssh-public-keys: line 1 is not an OpenSSH public key"),
    ],
)
def test_bad_create_secrets_are_refused_without_repeating_them(fresh_cluster, declared, message):
    outcome = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster)), LXC, "web", True, **declaration(**declared)
    )
    text = "\n".join(outcome.comment)
    assert outcome.result is False and message in text
    assert str(next(iter(declared.values()))) not in text


def test_pool_at_create_then_moved_then_left(fresh_cluster):
    # create_vm takes pool= (pve-container API2/LXC.pm); a move is PUT /pools/{poolid} vms= with
    # allow-move, a removal vms= with delete=1 (pve-manager API2/Pool.pm update_pool); membership is
    # compared as GET /cluster/resources lists it (its pool field).
    pve = fresh_cluster.pve
    for name in ("prod", "lab"):
        pve.pools[name] = set()
        pve.pool_info[name] = {"comment": None, "storage": set()}
    store = MemoryStore()

    def run(test, pool):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        start = len(pve.requests)
        outcome = guest_lifecycle.present(ctx, LXC, "web", test, **declaration(pool=pool))
        return outcome, writes(requests_since(fresh_cluster, start))

    done, sent = run(False, "prod")
    assert done.result is True and sent[0][:2] == ("POST", "/nodes/pve1/lxc"), done.comment
    assert parse_qs(sent[0][2].decode() if isinstance(sent[0][2], bytes) else str(sent[0][2]))["pool"] == [
        "prod"
    ]
    assert pve.ct(150).pool == "prod" and run(True, "prod")[0].changes == {}

    plan, sent = run(True, "lab")
    assert plan.result is None and plan.changes == {"pool": {"old": "prod", "new": "lab"}} and sent == []
    assert "CT 150 on pve1: would move into pool lab (from pool prod)" in plan.comment
    done, sent = run(False, "lab")
    assert done.result is True and [(m, p) for m, p, _ in sent] == [("PUT", "/pools/lab")], done.comment
    assert done.changes == plan.changes and pve.ct(150).pool == "lab"
    assert parse_qs(sent[0][2].decode()) == {"vms": ["150"], "allow-move": ["1"]}

    done, sent = run(False, "")
    assert done.result is True and [(m, p) for m, p, _ in sent] == [("PUT", "/pools/lab")], done.comment
    assert pve.ct(150).pool is None and done.changes == {"pool": {"old": "lab", "new": None}}
    assert parse_qs(sent[0][2].decode()) == {"vms": ["150"], "delete": ["1"]}
    assert run(True, "")[0].changes == {}

    # Undeclared: membership is left alone and not even read.
    pve.pools["prod"].add(150)
    pve._sync_pools()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(pve.requests)
    assert guest_lifecycle.present(ctx, LXC, "web", True, **declaration()).changes == {}
    assert not any(path == "/cluster/resources" for _, path, _ in requests_since(fresh_cluster, start))


def test_a_bad_pool_is_refused_by_the_pool_rule(fresh_cluster):
    outcome = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster)), LXC, "web", True, **declaration(pool="lab #1")
    )
    assert (
        outcome.result is False
        and "pool: pool name 'lab #1' contains invalid characters" in outcome.comment[0]
    )
