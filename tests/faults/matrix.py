"""The fault matrix: one row per fault, what the product promises under it, and what must come out.

Each ``Scenario`` is run by ``tests/faults/test_matrix.py`` against a freshly seeded fake cluster
(``tests.support.cluster``) with credentials from the scenario's source (static, the session's
OpenBao dev server, or a sealed one), through ``salt_proxmox.guest.lifecycle.present``/``absent``
with the container family and a context built as the Salt module builds it, or through a real
``salt-call`` (``via="salt-call"``).
Besides the scenario's own expectations (result, comment fragments naming the cause and the remedy,
the exact writes fakepve saw, the ownership rows afterwards) every run is held to the same rules:

- no write the rules forbid: never a create of a vmid that existed, never a second create;
- a plan (``test=True``) writes nothing, not even grains;
- the ownership rows and the cluster agree (no ``owned`` row for a guest that is not there, no
  ``creating`` row without a create sent, no guest made without a row);
- no secret (token secret, OpenBao token, AppRole secret id, lease id) in the return, the debug log,
  an exception text or the grains.

``python -m tests.faults.matrix --markdown`` prints ``docs/reliability.md`` from this table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import Any

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.lxc.family import LXC
from salt_proxmox.lxc.props import parse_declaration
from tests.faults.harness import FailingStore, Run
from tests.faults.lane_matrix import GROUP as LANE_GROUP
from tests.faults.lane_matrix import LANE
from tests.faults.pbs_matrix import PBS
from tests.faults.scenario import Scenario
from tests.support.cluster import DNS1_CONFIG, PROVISION_TOKEN_ID, READ_TOKEN_ID
from tests.support.guests import DNS1_DECLARATION, TARGET, declaration, dns1, vm
from tests.support.openbao import CREDS_PATH, CREDS_POLICY, make_approle, publish_creds, write_policy

GROUPS = {
    "reads": "Reads: absence is proven, never assumed",
    "writes": "Writes: refused, failed and uncertain writes",
    "credentials": "Credentials: OpenBao and PVE tokens",
    "pending": "Pending changes, restarts and task warnings on a running container",
    "input": "Input: bad declarations are refused before any network call",
    "pillar": "Pillar shape, through a real salt-call",
    "identity": "Identity: a guest is more than its vmid, an object takes one declaration",
    "ownership": "Ownership rows: never lost silently",
    "network": "Node networks and SDN: staged, then applied one node at a time with health checks",
    "vms": "VMs: created from scratch or by clone, configured, grown, refused, with the containers' rules",
    "power": "Power state: start and shutdown tasks, never a silent hard stop",
    "backups": "Backups: a guest that must be backed up is covered by an enabled job, or refused",
    "firewall": "Firewall: a concurrent edit is never overwritten, a failed read is never PVE's defaults",
    "pbs": "PBS datastores: the same faults against a Proxmox Backup Server, its tasks and lost answers",
    LANE_GROUP[0]: LANE_GROUP[1],
}


# ------------------------------------------------------------------------------------------ the estate

WEB = declaration()
CREATE = ("POST /nodes/pve1/lxc",)
PUT_120 = "PUT /nodes/pve1/lxc/120/config"
RESIZE_120 = "PUT /nodes/pve1/lxc/120/resize"

#: The seeded running container 120, declared as it is.
DNS = DNS1_DECLARATION
dns = dns1


def owned_row(
    vmid: int, state_id: str, declared: Mapping[str, Any], live: Mapping[str, Any] | None = None
) -> dict[str, dict]:
    """A seeded ``owned`` row; with ``live``, carrying the fingerprint of that config (a row as this
    minion writes it), else none (a row written before fingerprints existed)."""
    stored = {k: v for k, v in declared.items() if k != "description"}
    row = {"phase": "owned", "instance": "seeded", "state_id": state_id, "declared": stored}
    if live is not None:
        row["fingerprint"] = guest_identity.live_fingerprint(LXC, live)
    return {f"{TARGET}/lxc/{vmid}": row}


OWNED_120 = owned_row(120, "dns", DNS, DNS1_CONFIG)
#: The same row as the product writes it (``LxcDeclaration.stored``, wire spellings), so that an apply
#: that finds nothing to change has nothing to rewrite either.
STORED_120 = {
    f"{TARGET}/lxc/120": {
        "phase": "owned",
        "instance": "seeded",
        "state_id": "dns",
        "declared": parse_declaration(
            "dns", vmid=120, node="pve1", target=TARGET,
            config={k: v for k, v in DNS.items() if k not in ("vmid", "node")},
        ).stored(),
        "fingerprint": guest_identity.live_fingerprint(LXC, DNS1_CONFIG),
    }
}  # fmt: skip
#: A stopped container 160 of ours, for destroy scenarios (120 runs, and PVE refuses to destroy that).
CT160: dict[str, Any] = {
    "vmid": 160,
    "node": "pve1",
    "unprivileged": True,
    "hostname": "old",
    "memory": 256,
    "rootfs": "local-zfs:2",
}
#: Its NIC's MAC is one PVE drew (the declaration names no net0): what tells it from a container made
#: again at 160 with the same volumes, without which no destroy is allowed (guest.identity.generated_keys).
CT160_LIVE = {"hostname": "old", "memory": 256, "unprivileged": 1, "arch": "amd64", "ostype": "debian",
              "rootfs": "local-zfs:subvol-160-disk-0,size=2G",
              "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:16:00:01,ip=dhcp,type=veth"}  # fmt: skip
OWNED_160 = owned_row(160, "old", CT160, CT160_LIVE)
DESTROY_160 = {"vmid": 160, "node": "pve1", "removal": "destroy"}
#: The same container declared on pve2, opted in to a move (salt_proxmox/guest/migrate.py), and its move.
MOVE_160 = {**CT160, "node": "pve2", "migrate": True}
MIGRATE_160 = "POST /nodes/pve1/lxc/160/migrate"


def ours_160(run: Run) -> None:
    """Put our stopped container 160 on the cluster, as OWNED_160 records it."""
    run.pve.add_ct(160, node="pve1", status="stopped", defaults=False, config=dict(CT160_LIVE))


# ------------------------------------------------------------------------------------------ fault setups


def stage_bridge(run: Run, node: str) -> None:
    """Stage a new bridge on ``node``, as ``POST /nodes/{node}/network`` would (``interfaces.new``)."""
    files = run.pve.node_network(node)
    files["staged"] = files["running"] + "auto vmbr9\niface vmbr9 inet manual\n\tbridge-ports none\n"


def staged_vmbr0_deletion(run: Run) -> None:
    """Somebody staged the deletion of pve1's vmbr0, as ``DELETE /nodes/pve1/network/vmbr0`` would."""
    ifaces = run.pve.interfaces("pve1")
    del ifaces["vmbr0"]
    run.pve.stage("pve1", ifaces)


def foreign_zone_deletion(run: Run) -> None:
    """Zone lab runs; somebody deleted it in the pending configuration."""
    run.pve.sdn_running["zones"]["lab"] = {"type": "simple"}


def failed_reload(run: Run) -> None:
    """A reload of pve1 a stopped run left behind: its task ended in error (ifreload failed)."""
    run.pve.reload_failures["pve1"] = "command 'ifreload -a' failed: exit code 1"
    run.cluster.run_coro(run.pve._network_reload({"node": "pve1"}, PROVISION_TOKEN_ID))


#: The lock a run stopped between ``POST /cluster/sdn/lock`` and the commit left, as the product records it.
LEFT_LOCK = "0191d7a0-0000-7000-8000-000000000001"
LEFT_LOCK_ROW = {
    f"{TARGET}/sdn_lock/global": {
        "phase": "owned",
        "instance": "seeded",
        "state_id": "sdn",
        "declared": {"taken": 1, "token": LEFT_LOCK},
    }
}


def pending_zone(run: Run) -> None:
    """A simple SDN zone in the SDN configuration, not yet running."""
    run.pve.sdn["zones"]["lab"] = {"type": "simple"}


#: Zone lab as an earlier run of this minion staged it: its ownership row, and the declaration the run
#: of an ``sdn_applied`` row holds before the apply (``declares``): the commit makes live only what
#: the run declares (``sdn.apply.foreign_changes``).
OUR_ZONE = {"name": "lab", "type": "simple"}
OUR_ZONE_KEY = f"{TARGET}/sdn_zone/lab"
OUR_ZONE_ROW = {
    OUR_ZONE_KEY: {"phase": "owned", "instance": "seeded", "state_id": "lab", "declared": OUR_ZONE}
}
#: What an ``sdn_applied`` row whose run declares zone lab takes: the declaration, the seeded row and
#: the rows afterwards.
DECLARES_ZONE = {
    "declaration": {"declares": (OUR_ZONE,)},
    "seed_rows": OUR_ZONE_ROW,
    "rows": {OUR_ZONE_KEY: "owned"},
}


def fail(method: str, suffix: str, **how: Any) -> Callable[[Run], None]:
    """fakepve's ``fail()``: answer matching requests with an error (or a 200 without data)."""
    return lambda run: run.pve.fail(method, suffix, **how)


def both(*setups: Callable[[Run], None]) -> Callable[[Run], None]:
    """Several setups in order."""

    def setup(run: Run) -> None:
        for one in setups:
            one(run)

    return setup


def lock_120(run: Run) -> None:
    """Another task holds CT 120's config lock (until the run ends)."""
    run.cluster.run_coro(run.pve.hold_config_lock(120, None))


def lock_160(run: Run) -> None:
    """Another task holds CT 160's config lock."""
    run.cluster.run_coro(run.pve.hold_config_lock(160, None))


def members(*which: str) -> Callable[[Run], None]:
    """Replace the target's members: ``dead`` is a loopback port that refuses, ``pve`` the fake."""

    def setup(run: Run) -> None:
        run.target["members"] = [run.dead_member() if m == "dead" else run.cluster.url for m in which]

    return setup


def read_token(*privs: str, path: str = "/") -> Callable[[Run], None]:
    """Plan with another read token holding only ``privs`` on ``path``."""

    def setup(run: Run) -> None:
        pair = run.token("narrow@pve!plan", *privs, path=path)
        run.target["credentials"]["read"] = pair

    return setup


def revoke(token_id: str) -> Callable[[Run], None]:
    """Delete a PVE API token (as ``pveum user token remove`` would)."""
    return lambda run: run.pve.apitokens.pop(token_id, None)


def revoke_before(method: str, suffix: str, token_id: str) -> Callable[[Run], None]:
    """Revoke a token just before a matching request goes out (mid-run)."""
    return lambda run: run.before(method, suffix, revoke(token_id))


def offline_before(method: str, suffix: str) -> Callable[[Run], None]:
    """Node pve1 goes offline just before a matching request (PVE answers 595)."""
    return lambda run: run.before(method, suffix, lambda r: r.pve.set_node_offline("pve1"))


def edit_120_before_put(run: Run) -> None:
    """Somebody edits CT 120 between our read and our PUT (the digest no longer matches)."""

    def edit(r: Run) -> None:
        r.pve.ct(120).config["swap"] = 1024

    run.before("PUT", "/lxc/120/config", edit)


def guest_appears_before_create(run: Run) -> None:
    """Somebody else creates CT 150 between our read and our POST."""
    run.before("POST", "/nodes/pve1/lxc", lambda r: r.add_guest(150, node="pve1", hostname="theirs"))


#: When the ``creating`` rows of these scenarios were written (epoch seconds), and their create task.
CREATING_AT = 1_767_225_600


def create_task(
    user: str, ttype: str = "vzcreate", vmid: int = 150, at: int = CREATING_AT
) -> Callable[[Run], None]:
    """A task of ``user`` in pve1's task list for ``vmid`` (pve-manager ``PVE/API2/Tasks.pm``
    ``node_tasks``), ended OK."""

    def setup(run: Run) -> None:
        run.pve.tasklog.append({
            "upid": f"UPID:pve1:0000BEEF:00001234:{at:08X}:{ttype}:{vmid}:{user}:", "node": "pve1",
            "pid": 0xBEEF, "pstart": 0x1234, "starttime": at, "type": ttype, "id": str(vmid), "user": user,
            "status": "stopped", "exitstatus": "OK", "endtime": at + 5, "log": [],
        })  # fmt: skip

    return setup


def creating_row(vmid: int, declared: Mapping[str, Any], **tie: Any) -> dict[str, dict]:
    """A seeded ``creating`` row of state ``web`` written at ``CREATING_AT`` (``tie``: ``token``,
    ``upid``)."""
    stored = {k: v for k, v in declared.items() if k != "description"}
    row = {"phase": "creating", "instance": "seeded", "state_id": "web", "declared": stored,
           "started": CREATING_AT, **tie}  # fmt: skip
    return {f"{TARGET}/lxc/{vmid}": row}


def slow_create(run: Run) -> None:
    """A create that takes 100 PVE seconds (1 s real at time_scale 0.01)."""
    run.pve.ct_secs["create"] = 100


def slow_resize(run: Run) -> None:
    """A resize that takes 100 PVE seconds."""
    run.pve.ct_secs["resize"] = 100


def index_rows(*rows: object) -> Callable[[Run], None]:
    """Add malformed rows to the guest index."""
    return lambda run: run.extra_index_rows(list(rows))


def config_answer(vmid: int, data: object) -> Callable[[Run], None]:
    """Answer CT ``vmid``'s config GET with HTTP 200 and ``data``."""
    return lambda run: run.serve_config(vmid, data)


def bao_url_dead(run: Run) -> None:
    """openbao:url points where nothing listens."""
    run.openbao["url"] = run.dead_member().replace("https://", "http://")


def bao_token(policies: list[str] | None) -> Callable[[Run], None]:
    """Use an OpenBao token with these policies (None: a token OpenBao never issued)."""

    def setup(run: Run) -> None:
        if policies is None:
            token = "s.NeverIssued" + "x" * 12
        else:
            token = run.bao_root.auth.token.create(policies=policies, ttl="10m")["auth"]["client_token"]
        run.secrets.append(token)
        run.openbao["auth"] = {"method": "token", "token": token}

    return setup


def approle(good: bool) -> Callable[[Run], None]:
    """Log in to OpenBao with AppRole (a valid secret id, or a wrong one)."""

    def setup(run: Run) -> None:
        role_id, secret_id = make_approle(run.bao_root, "salt-proxmox-faults", [CREDS_POLICY])
        run.secrets.append(secret_id)
        if not good:
            secret_id = "0" * 8 + secret_id[8:]
            run.secrets.append(secret_id)
        run.openbao["auth"] = {"method": "approle", "role_id": role_id, "secret_id": secret_id}

    return setup


def creds_secret(role: str, data: dict[str, Any] | None) -> Callable[[Run], None]:
    """Replace (or, with None, delete) the ``proxmox/creds/<role>`` secret in OpenBao."""

    def setup(run: Run) -> None:
        kv = run.bao_root.secrets.kv.v1
        if data is None:
            kv.delete_secret(path=role, mount_point=CREDS_PATH)
        else:
            kv.create_or_update_secret(path=role, secret=data, mount_point=CREDS_PATH)

    return setup


def creds_on_kv2(run: Run) -> None:
    """The creds path is a KV version 2 mount: the token pair sits under ``data/<role>``."""
    root = run.bao_root
    if "faults-kv2/" not in root.sys.list_mounted_secrets_engines()["data"]:
        root.sys.enable_secrets_engine("kv", path="faults-kv2", options={"version": "2"})
    read_id, read_secret = run.cluster.seeded.read_token
    root.secrets.kv.v2.create_or_update_secret(
        path="read", secret={"token_id": read_id, "secret": read_secret}, mount_point="faults-kv2"
    )
    write_policy(root, "faults-kv2", 'path "faults-kv2/*" {\n  capabilities = ["read"]\n}\n')
    token = root.auth.token.create(policies=["faults-kv2"], ttl="10m")["auth"]["client_token"]
    run.secrets.append(token)
    run.openbao["auth"]["token"] = token
    run.target["credentials"]["path"] = "faults-kv2"


def short_provision_lease(run: Run) -> None:
    """The provision role's lease is 20 s, shorter than a create's task bound."""
    publish_creds(run.bao_root, CREDS_PATH, "provision", *run.cluster.seeded.provision_token, ttl="20s")


def lose(method: str, suffix: str, how: str) -> Callable[[Run], None]:
    """The first matching request reaches fakepve, which acts; its answer is lost (``how``)."""
    return lambda run: run.lose_answer(method, suffix, how)


def unwritable(phase: str) -> Callable[[Run], None]:
    """The ownership rows file cannot be written when a row would become ``phase``."""

    def setup(run: Run) -> None:
        run.store = FailingStore(run.store.rows, phase)

    return setup


def newline_secrets(run: Run) -> None:
    """Both static secrets end in a newline, as a YAML block scalar (``secret: |``) leaves them."""
    for role in ("read", "provision"):
        run.target["credentials"][role]["secret"] += "\n"


def newline_creds_in_openbao(run: Run) -> None:
    """OpenBao holds the read token's secret with a trailing newline."""
    token_id, secret = run.cluster.seeded.read_token
    publish_creds(run.bao_root, CREDS_PATH, "read", token_id, secret + "\n")


def corrupt_row(run: Run) -> None:
    """The grain row of CT 120 was edited by hand: its vmid is no number."""
    run.store.rows[f"{TARGET}/lxc/120"]["declared"]["vmid"] = "one-twenty"


def row_not_a_mapping(run: Run) -> None:
    """The grain row of CT 120 is a bare string."""
    run.store.rows[f"{TARGET}/lxc/120"] = "owned"


def pending_120(key: str, value: object) -> Callable[[Run], None]:
    """A change to CT 120 waits in its pending section (``pct set 120 --<key> <value>`` while it runs)."""

    def setup(run: Run) -> None:
        run.pve.ct(120).pending[key] = value

    return setup


def task_warnings(task_type: str, count: int) -> Callable[[Run], None]:
    """Tasks of ``task_type`` that end well end ``WARNINGS: <count>`` (their worker logged warnings)."""

    def setup(run: Run) -> None:
        run.pve.task_warnings[task_type] = count

    return setup


NOTHING = "Nothing was written."

# ------------------------------------------------------------------------------------------ VMs

#: A VM created from scratch (the ``web`` VM of the example pillar): a disk, the seeded installer ISO as
#: a CD-ROM, a cloud-init drive and a NIC without a MAC.
VM_150 = vm(name="web", sshkeys=None, tags=None)
#: A VM made by cloning the seeded template 9000, then configured and grown in the same apply.
VM_151 = {"vmid": 151, "node": "pve1", "clone": 9000, "full": True, "name": "app", "cores": 4,
          "scsi0": "local-lvm:10,discard=on,iothread=1"}  # fmt: skip
CLONE_151 = ("POST /nodes/pve1/qemu/9000/clone", "POST /nodes/pve1/qemu/151/config")
#: The seeded running VM 300 on pve2, declared as it is (``tests.support.cluster.ROUTER_CONFIG``).
VM_300 = {
    "vmid": 300,
    "node": "pve2",
    "name": "router",
    "memory": 1024,
    "cores": 2,
    "ostype": "l26",
    "scsi0": "local-lvm:8,iothread=1",
    "net0": "virtio,bridge=vmbr0",
    "net1": "virtio,bridge=vmbr1",
}
VM_PASSWORD = "vm-password-never-shown"


def password_is_secret(run: Run) -> None:
    """The declared ``cipassword`` joins the secrets no return, log or grain may hold."""
    run.secrets.append(VM_PASSWORD)


REBOOT_120 = "POST /nodes/pve1/lxc/120/status/reboot"
#: CT 120 declared with a key PVE keeps pending while it runs (vmconfig_hotplug_pending skips it).
WAITS = dns(nameserver="10.0.0.1")


def paused_300(run: Run) -> None:
    """VM 300 runs paused (``qm suspend 300``: qmpstatus paused, status running)."""
    run.pve.vm(300).status, run.pve.vm(300).qmpstatus = "running", "paused"


def hotplug_fails_300(run: Run) -> None:
    """VM 300 runs; the hot-plug of a new net2 fails in QEMU (``vmconfig_hotplug_pending``)."""
    run.pve.hotplug_errors[300] = {"net2": "VM 300 qmp command 'netdev_add' failed - got timeout"}


def thick_lvm(run: Run) -> None:
    """local-lvm is thick LVM (pve-storage ``LVMPlugin``: no ``clone`` feature)."""
    run.pve.storages["local-lvm"]["type"] = "lvm"


# ------------------------------------------------------------------------------------------ the table

SCENARIOS: list[Scenario] = [
    # -------------------------------------------------------------------------------------- reads
    Scenario(
        "config-403",
        "reads",
        "config read (GET …/pending) answers 403 Permission check failed",
        "a 403 is a failure, never absence: no index read, no create",
        False,
        ("HTTP 403 Permission check failed (/vms/150, VM.Audit)", "grant", NOTHING),
        fail("GET", "/lxc/150/pending", status=403, message="Permission check failed (/vms/150, VM.Audit)"),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "config-500-generic",
        "reads",
        "config read (GET …/pending) answers a generic 500",
        "only PVE's exact missing-config wording may lead to absence",
        False,
        ("HTTP 500 got timeout", "journalctl", NOTHING),
        fail("GET", "/lxc/150/pending", status=500, message="got timeout"),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "config-200-null",
        "reads",
        "config read (GET …/pending) answers 200 with data null",
        "a 200 without a config is an error, not an empty answer",
        False,
        ("malformed answer", "no digest", "check that the member", NOTHING),
        fail("GET", "/lxc/150/pending", status=200, message="OK"),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "config-200-empty-object",
        "reads",
        "config read (GET …/pending) answers 200 with {}",
        "a config without a digest was not read from disk: error",
        False,
        ("malformed answer", "no digest", NOTHING),
        config_answer(150, {}),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "config-200-no-digest",
        "reads",
        "config read (GET …/pending) answers 200 with keys but no digest",
        "a config without a digest is an error, even with plausible keys",
        False,
        ("malformed answer", "no digest", NOTHING),
        config_answer(120, {"hostname": "dns1", "memory": 512}),
        dns(adopt=True),
        name="dns",
        never=("/cluster/resources",),
    ),
    Scenario(
        "config-200-html",
        "reads",
        "config read (GET …/pending) answers 200 with an HTML page (a captive portal)",
        "a body that is not PVE's JSON is an error",
        False,
        ("malformed answer", "not a JSON object", "check that the member", NOTHING),
        fail("GET", "/lxc/150/pending", status=200, message="<html><body>Welcome</body></html>", html=True),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "config-502-proxy",
        "reads",
        "config read (GET …/pending) answers 502 with a proxy's HTML page",
        "a proxy error is a failure naming the proxy, not absence",
        False,
        ("HTTP 502", "pveproxy", NOTHING),
        fail("GET", "/lxc/150/pending", status=502, message="<html>502 Bad Gateway</html>", html=True),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "index-vmid-not-a-number",
        "reads",
        "guest index has a row whose vmid is not a number",
        "an index that cannot name its rows cannot prove a vmid free",
        False,
        ("guest index", "cannot prove the vmid free", NOTHING),
        index_rows({"vmid": "web", "node": "pve1", "type": "lxc"}),
        WEB,
    ),
    Scenario(
        "index-row-without-node",
        "reads",
        "guest index has a row without a node",
        "an index that cannot name its rows cannot prove a vmid free",
        False,
        ("guest index", "cannot prove the vmid free", NOTHING),
        index_rows({"vmid": 151, "type": "lxc"}),
        WEB,
    ),
    Scenario(
        "index-unknown-type",
        "reads",
        "guest index has a row of type openvz",
        "an index that cannot name its rows cannot prove a vmid free",
        False,
        ("guest index", "cannot prove the vmid free", NOTHING),
        index_rows({"vmid": 151, "node": "pve1", "type": "openvz"}),
        WEB,
    ),
    Scenario(
        "index-row-not-an-object",
        "reads",
        "guest index has a row that is a bare string",
        "an index that cannot name its rows cannot prove a vmid free",
        False,
        ("guest index", "cannot prove the vmid free", NOTHING),
        index_rows("lxc/151"),
        WEB,
    ),
    Scenario(
        "index-200-null",
        "reads",
        "guest index answers 200 with data null",
        "no list, no proof of absence",
        False,
        ("guest index", NOTHING),
        fail("GET", "/cluster/resources", status=200, message="OK"),
        WEB,
    ),
    Scenario(
        "token-without-vm-audit",
        "reads",
        "the read token lacks VM.Audit (PVE answers 403 before saying a config is missing)",
        "a token that cannot see the guest cannot prove it absent: no index read, no create",
        False,
        ("HTTP 403", "VM.Audit", "grant", NOTHING),
        read_token("Sys.Audit", "Datastore.Audit"),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "filtered-index-hides-a-vm",
        "reads",
        "the read token has VM.Audit on /vms/150 only; the declaration names vmid 300 (a VM it cannot see)",
        "a guest hidden from the token's filtered index is still never created over",
        False,
        ("HTTP 403", "/vms/300", NOTHING),
        read_token("VM.Audit", path="/vms/150"),
        declaration(vmid=300),
        never=("/cluster/resources",),
    ),
    Scenario(
        "filtered-index-own-vmid",
        "reads",
        "the read token has VM.Audit on /vms/150 only; the declaration names vmid 150 (free)",
        "the same token's filtered index proves its own vmid free: the plan is a create",
        None,
        ("would be created",),
        read_token("VM.Audit", path="/vms/150"),
        WEB,
        test=True,
    ),
    Scenario(
        "vmid-held-by-qemu",
        "reads",
        "the declared vmid is a QEMU VM (300 on pve2)",
        "vmids are cluster-wide: refused, naming the VM and its node",
        False,
        ("qemu guest on node pve2", "pick a free vmid", NOTHING),
        None,
        declaration(vmid=300),
    ),
    Scenario(
        "vmid-on-another-node",
        "reads",
        "the declared vmid is a container on another node",
        "a move is made only with migrate: true: refused, naming the node it is on and the opt-in",
        False,
        ("lives on node pve1", "migrate: true", NOTHING),
        None,
        declaration(vmid=120, node="pve2"),
    ),
    Scenario(
        "first-member-refuses",
        "reads",
        "the first cluster member refuses connections",
        "members are tried in order when one does not answer: the create goes to the next, once",
        True,
        ("has been created",),
        members("dead", "pve"),
        WEB,
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "owned"},
    ),
    Scenario(
        "every-member-down",
        "reads",
        "every cluster member refuses connections",
        "no member answered: a failure naming the members and what to check",
        False,
        ("no member of target lab answered", "pveproxy", NOTHING),
        members("dead", "dead"),
        WEB,
    ),
    Scenario(
        "node-offline-at-read",
        "reads",
        "the declared node is offline (PVE answers 595)",
        "a node that cannot be read is not absent",
        False,
        ("HTTP 595 No route to host", "pvecm status", NOTHING),
        lambda run: run.pve.set_node_offline("pve1"),
        WEB,
        never=("/cluster/resources",),
    ),
    Scenario(
        "index-read-after-revoke",
        "reads",
        "the read token is revoked between the config read and the index read",
        "absence needs both reads with the same credential: none, no create",
        False,
        ("HTTP 401 authentication failure", "issue a new token", NOTHING),
        revoke_before("GET", "/cluster/resources", READ_TOKEN_ID),
        WEB,
    ),
    # ------------------------------------------------------------------------------------- writes
    Scenario(
        "config-lock-held",
        "writes",
        "another task holds CT 120's config lock during the PUT",
        "PVE's lock refusal is reported with its remedy; nothing is retried",
        False,
        ("can't lock file", "config lock", "run the state again", NOTHING),
        lock_120,
        dns(memory=1024),
        name="dns",
        writes=(PUT_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "digest-conflict",
        "writes",
        "somebody edits CT 120 between the read and the PUT",
        "the PUT carries the digest it was judged against; PVE refuses it and nothing is retried",
        False,
        ("detected modified configuration", "plan again", NOTHING),
        edit_120_before_put,
        dns(memory=1024),
        name="dns",
        writes=(PUT_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "create-task-error",
        "writes",
        "the create task ends in TASK ERROR (its template volume is missing)",
        "a failed create names its UPID and log; PVE removed what it made, so no row stays",
        False,
        ("ended", "does not exist", "pvesh get /nodes/pve1/tasks/UPID:"),
        None,
        declaration(ostemplate="local:vztmpl/missing-13.tar.zst"),
        writes=CREATE,
    ),
    Scenario(
        "resize-task-error",
        "writes",
        "the resize task ends in TASK ERROR (the config lock is held)",
        "a failed task names its UPID and the command to read its log",
        False,
        ("ended", "can't lock file", "pvesh get /nodes/pve1/tasks/UPID:"),
        lock_120,
        dns(rootfs="local-zfs:6"),
        name="dns",
        writes=(RESIZE_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "destroy-task-error",
        "writes",
        "the destroy task ends in TASK ERROR (the config lock is held)",
        "nothing is deleted; the row stays",
        False,
        ("ended", "can't lock file", "Nothing was deleted"),
        both(ours_160, lock_160),
        DESTROY_160,
        name="old",
        state="absent",
        writes=("DELETE /nodes/pve1/lxc/160",),
        rows={f"{TARGET}/lxc/160": "owned"},
        seed_rows=OWNED_160,
    ),
    Scenario(
        "destroy-running-guest",
        "writes",
        "removal: destroy of a running container",
        "PVE's refusal of a running guest (no force) is predicted from its status: nothing is sent",
        False,
        ("container is running", "pct shutdown 120", "Nothing was deleted"),
        None,
        {"vmid": 120, "node": "pve1", "removal": "destroy"},
        name="dns",
        state="absent",
        writes=(),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "create-status-unreadable",
        "writes",
        "the create task's status answers 500",
        "an unreadable task is uncertain: reported with its UPID, never retried; the creating row stays",
        False,
        ("could not be read", "Nothing is retried", "pvesh get /nodes/pve1/tasks/UPID:"),
        fail("GET", "/status", status=500, message="proxy timeout"),
        WEB,
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "creating"},
    ),
    Scenario(
        "create-still-running",
        "writes",
        "the create task is still running at the poll bound",
        "a task past its bound is uncertain, not cancelled and not retried",
        False,
        ("still running after", "not cancelled", "pvesh get /nodes/pve1/tasks/UPID:"),
        slow_create,
        WEB,
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "creating"},
        polls=3,
        time_scale=0.01,
    ),
    Scenario(
        "resize-still-running",
        "writes",
        "the resize task is still running at the poll bound",
        "a task past its bound is uncertain; the row stays as it was",
        False,
        ("still running after", "not cancelled"),
        slow_resize,
        dns(rootfs="local-zfs:6"),
        name="dns",
        writes=(RESIZE_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
        polls=3,
        time_scale=0.01,
    ),
    Scenario(
        "create-no-upid",
        "writes",
        "the create POST answers 200 with no UPID",
        "a write without a task id is not claimed; the creating row stays for the next run to settle",
        False,
        ("answered no task id", "not claimed"),
        fail("POST", "/nodes/pve1/lxc", status=200, message="OK"),
        WEB,
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "creating"},
    ),
    Scenario(
        "resize-no-upid",
        "writes",
        "after the config PUT, the resize answers 200 with no UPID",
        "the comment says what was written before the uncertain step",
        False,
        ("answered no task id", "Already written: memory"),
        fail("PUT", "/lxc/120/resize", status=200, message="OK"),
        dns(memory=1024, rootfs="local-zfs:6"),
        name="dns",
        writes=(PUT_120, RESIZE_120),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "resize-refused-after-put",
        "writes",
        "after the config PUT, PVE refuses the resize (out of space)",
        "a partial apply reports the keys already written",
        False,
        ("out of space", "Already written: memory"),
        fail("PUT", "/lxc/120/resize", status=500, message="zfs error: out of space"),
        dns(memory=1024, rootfs="local-zfs:6"),
        name="dns",
        writes=(PUT_120, RESIZE_120),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "node-offline-before-create",
        "writes",
        "pve1 goes offline between the read and the create POST",
        "a refused create leaves no row",
        False,
        ("HTTP 595 No route to host", "pvecm status", NOTHING),
        offline_before("POST", "/nodes/pve1/lxc"),
        WEB,
        writes=CREATE,
    ),
    Scenario(
        "node-offline-during-create",
        "writes",
        "pve1 goes offline after the create POST, before its task is read",
        "the create is uncertain: the creating row stays so a later run can finish it as ours",
        False,
        ("could not be read", "HTTP 595", "Nothing is retried"),
        offline_before("GET", "/status"),
        WEB,
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "creating"},
    ),
    Scenario(
        "node-offline-before-update",
        "writes",
        "pve1 goes offline between the read and the config PUT",
        "a refused PUT writes nothing and keeps the row",
        False,
        ("HTTP 595 No route to host", NOTHING),
        offline_before("PUT", "/lxc/120/config"),
        dns(memory=1024),
        name="dns",
        writes=(PUT_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "no-quorum-create",
        "writes",
        "the cluster loses quorum (fakepve lose_quorum)",
        "PVE's no-quorum refusal names the remedy; no row claims a create",
        False,
        ("no quorum", "pvecm status", NOTHING),
        lambda run: run.pve.lose_quorum(),
        WEB,
        writes=CREATE,
    ),
    Scenario(
        "no-quorum-update",
        "writes",
        "the cluster loses quorum before a config PUT",
        "PVE's no-quorum refusal names the remedy",
        False,
        ("no quorum", "pvecm status", NOTHING),
        lambda run: run.pve.lose_quorum(),
        dns(memory=1024),
        name="dns",
        writes=(PUT_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "no-quorum-resize",
        "writes",
        "the resize answers PVE's no-quorum error (fail error=no_quorum)",
        "no retry, the remedy named",
        False,
        ("no quorum", "pvecm status"),
        fail("PUT", "/lxc/120/resize", error="no_quorum"),
        dns(rootfs="local-zfs:6"),
        name="dns",
        writes=(RESIZE_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "no-quorum-destroy",
        "writes",
        "the destroy answers PVE's no-quorum error",
        "nothing is deleted; the row stays",
        False,
        ("no quorum", "Nothing was deleted"),
        both(ours_160, fail("DELETE", "/lxc/160", error="no_quorum")),
        DESTROY_160,
        name="old",
        state="absent",
        writes=("DELETE /nodes/pve1/lxc/160",),
        rows={f"{TARGET}/lxc/160": "owned"},
        seed_rows=OWNED_160,
    ),
    Scenario(
        "destroy-status-unreadable",
        "writes",
        "the destroy task's status answers 500",
        "an unconfirmed destroy keeps the row; a later run proves absence and forgets it",
        False,
        ("could not be read", "Nothing is retried"),
        both(ours_160, fail("GET", "/status", status=500, message="proxy timeout")),
        DESTROY_160,
        name="old",
        state="absent",
        writes=("DELETE /nodes/pve1/lxc/160",),
        rows={f"{TARGET}/lxc/160": "owned"},
        seed_rows=OWNED_160,
        uncertain=True,
    ),
    # ------------------------------------------------------------------- moves (guest/migrate.py)
    Scenario(
        "migrate-stopped-ct",
        "writes",
        "none: our stopped CT 160 is declared on pve2 with migrate: true",
        "one awaited migrate task (offline: a stopped container is not restarted), the row follows it",
        True,
        ("CT 160 on pve2 has been migrated from pve1",),
        ours_160,
        MOVE_160,
        name="old",
        writes=(MIGRATE_160,),
        rows={f"{TARGET}/lxc/160": "owned"},
        seed_rows=OWNED_160,
    ),
    Scenario(
        "migrate-refused-by-pve",
        "writes",
        "PVE refuses the migrate POST (no quorum)",
        "the guest stays where it is, the row is unchanged, nothing else is sent",
        False,
        ("no quorum",),
        both(ours_160, fail("POST", "/lxc/160/migrate", error="no_quorum")),
        MOVE_160,
        name="old",
        writes=(MIGRATE_160,),
        rows={f"{TARGET}/lxc/160": "owned"},
        seed_rows=OWNED_160,
    ),
    Scenario(
        "migrate-answer-lost-504",
        "writes",
        "the migrate POST reaches PVE, which starts the move; its answer is lost (a gateway's 504)",
        "uncertain, never re-sent in the same run: the next run reads where the guest is and judges again",
        False,
        ("may or may not have acted",),
        both(ours_160, lose("POST", "/lxc/160/migrate", "504")),
        MOVE_160,
        name="old",
        writes=(MIGRATE_160,),
        rows={f"{TARGET}/lxc/160": "owned"},
        seed_rows=OWNED_160,
        uncertain=True,
    ),
    Scenario(
        "guest-appears-before-create",
        "writes",
        "somebody creates CT 150 between our read and our POST",
        "PVE refuses the second create; their guest is untouched and no row claims it",
        False,
        ("already exists", NOTHING),
        guest_appears_before_create,
        WEB,
        writes=CREATE,
    ),
    # -------------------------------------------------------------------------------- credentials
    Scenario(
        "openbao-sealed",
        "credentials",
        "OpenBao is sealed",
        "no credential, no call to PVE; the remedy is to unseal",
        False,
        ("OpenBao is sealed", "unseal", NOTHING),
        None,
        WEB,
        creds="sealed",
        never=("/nodes/pve1/lxc/150/pending",),
    ),
    Scenario(
        "openbao-unreachable",
        "credentials",
        "openbao:url refuses connections",
        "a failure naming openbao:url",
        False,
        ("OpenBao is unreachable", "openbao:url", NOTHING),
        bao_url_dead,
        WEB,
        creds="openbao",
        never=("/nodes/pve1/lxc/150/pending",),
    ),
    Scenario(
        "openbao-permission-denied",
        "credentials",
        "the OpenBao token has no policy for the creds path",
        "permission denied names the missing policy",
        False,
        ("permission denied (HTTP 403)", "policy", NOTHING),
        bao_token(["default"]),
        WEB,
        creds="openbao",
    ),
    Scenario(
        "openbao-token-invalid",
        "credentials",
        "the OpenBao token was never issued (OpenBao answers 403 for it too)",
        "the comment says the token may be invalid or expired, without showing it",
        False,
        ("permission denied (HTTP 403)", "invalid or expired", NOTHING),
        bao_token(None),
        WEB,
        creds="openbao",
    ),
    Scenario(
        "openbao-approle",
        "credentials",
        "OpenBao auth by AppRole (role id and secret id)",
        "AppRole login works and the secret id shows nowhere",
        True,
        ("has been created",),
        approle(good=True),
        WEB,
        creds="openbao",
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "owned"},
    ),
    Scenario(
        "openbao-approle-wrong-secret",
        "credentials",
        "AppRole login with a wrong secret id",
        "login fails with a sentence, never the secret id",
        False,
        ("OpenBao login failed", NOTHING),
        approle(good=False),
        WEB,
        creds="openbao",
    ),
    Scenario(
        "creds-malformed",
        "credentials",
        "the creds path answers token_id 5 and a list for secret",
        "a malformed creds body is refused, naming the shape it needs",
        False,
        ("token_id is missing or not user@realm!name", "{token_id, secret}", NOTHING),
        creds_secret("read", {"token_id": 5, "secret": ["x"]}),
        WEB,
        creds="openbao",
    ),
    Scenario(
        "creds-on-kv2-mount",
        "credentials",
        "the creds path is a KV version 2 mount",
        "nothing at <path>/<role> fails naming the mount kinds that work and the data/ segment of KV v2",
        False,
        ("no secret", "KV version 1", "name that data/ segment", NOTHING),
        creds_on_kv2,
        WEB,
        creds="openbao",
    ),
    Scenario(
        "creds-missing-provision",
        "credentials",
        "the provision role's secret is missing (the plan's read works)",
        "the apply fails before its write",
        False,
        ("provision", "no secret", NOTHING),
        creds_secret("provision", None),
        WEB,
        creds="openbao",
    ),
    Scenario(
        "lease-too-short",
        "credentials",
        "the provision lease (20 s) is shorter than a create's task bound",
        "refused before the POST: a token that expires mid-task cannot read its own task",
        False,
        ("lease of 20s", "shorter than", "Raise the role's TTL", NOTHING),
        short_provision_lease,
        WEB,
        creds="openbao",
    ),
    Scenario(
        "read-token-revoked",
        "credentials",
        "the PVE read token was revoked (401)",
        "a 401 names the remedy: a new token where the credentials come from",
        False,
        ("HTTP 401 authentication failure", "issue a new token", NOTHING),
        revoke(READ_TOKEN_ID),
        WEB,
        creds="openbao",
    ),
    Scenario(
        "provision-revoked-before-create",
        "credentials",
        "the provision token is revoked just before the create POST",
        "a refused create leaves no row",
        False,
        ("HTTP 401 authentication failure", NOTHING),
        revoke_before("POST", "/nodes/pve1/lxc", PROVISION_TOKEN_ID),
        WEB,
        creds="openbao",
        writes=CREATE,
    ),
    Scenario(
        "provision-revoked-before-poll",
        "credentials",
        "the provision token is revoked after the create POST, before its task is read",
        "the task is uncertain (its owner can no longer read it); the creating row stays",
        False,
        ("could not be read", "HTTP 401", "Nothing is retried"),
        revoke_before("GET", "/status", PROVISION_TOKEN_ID),
        WEB,
        creds="openbao",
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "creating"},
    ),
    Scenario(
        "provision-revoked-before-update",
        "credentials",
        "the provision token is revoked just before a config PUT",
        "a refused PUT writes nothing",
        False,
        ("HTTP 401 authentication failure", NOTHING),
        revoke_before("PUT", "/lxc/120/config", PROVISION_TOKEN_ID),
        dns(memory=1024),
        name="dns",
        creds="openbao",
        writes=(PUT_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    # ------------------------------------------------------------------------------------ pending
    Scenario(
        "pending-kept-until-restart",
        "pending",
        "a declared key a running container does not hot-plug (nameserver)",
        "the apply writes it and says it waits for a restart; nothing is rebooted",
        True,
        ("has been updated: nameserver", "pending until the container restarts", "pct reboot 120"),
        None,
        WAITS,
        name="dns",
        writes=(PUT_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "pending-plan-not-clean",
        "pending",
        "the declared value is already written and waits in pending",
        "the plan is not clean (result None) and would write nothing again",
        None,
        ("nameserver is written but pending", "reboot_for_pending: true"),
        pending_120("nameserver", "10.0.0.1"),
        WAITS,
        name="dns",
        test=True,
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "pending-apply-writes-nothing-again",
        "pending",
        "the declared value is already written and waits in pending",
        "the apply writes nothing and says what waits",
        True,
        ("nameserver is written but pending",),
        pending_120("nameserver", "10.0.0.1"),
        WAITS,
        name="dns",
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "pending-foreign-conflict",
        "pending",
        "somebody else left another nameserver pending on the running container",
        "refused with `pct set --revert` or a restart as the remedy; every other change is still listed",
        False,
        ("pct set 120 --revert nameserver", "besides what is refused, it differs in memory", NOTHING),
        pending_120("nameserver", "9.9.9.9"),
        dns(nameserver="10.0.0.1", memory=768),
        name="dns",
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "reboot-for-pending",
        "pending",
        "reboot_for_pending: true and a written key waits for a restart",
        "one reboot task, awaited by its owner; the value is then in effect",
        True,
        ("has been rebooted; nameserver in effect",),
        None,
        {**WAITS, "reboot_for_pending": True},
        name="dns",
        writes=(PUT_120, REBOOT_120),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "reboot-refused",
        "pending",
        "the provision token may not reboot (403 on status/reboot)",
        "the failure says the config is written and what waits for a restart",
        False,
        ("HTTP 403", "The config is written; nameserver wait"),
        fail(
            "POST",
            "/lxc/120/status/reboot",
            status=403,
            message="Permission check failed (/vms/120, VM.PowerMgmt)",
        ),
        {**WAITS, "reboot_for_pending": True},
        name="dns",
        writes=(PUT_120, REBOOT_120),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "reboot-warnings",
        "pending",
        "the reboot task ends WARNINGS: 1",
        "a success with one warning, naming the log command",
        True,
        ("succeeded with 1 warning (WARNINGS: 1)", "pvenode task log UPID:"),
        task_warnings("vzreboot", 1),
        {**WAITS, "reboot_for_pending": True},
        name="dns",
        writes=(PUT_120, REBOOT_120),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "reboot-blocked-by-undeclared-pending",
        "pending",
        "reboot_for_pending: true while a change nobody declared (searchdomain) is pending too",
        "no reboot (it would make that change live); the note names `pct set --revert`",
        True,
        ("is not rebooted", "pct set 120 --revert searchdomain"),
        pending_120("searchdomain", "lab.example"),
        {**WAITS, "reboot_for_pending": True},
        name="dns",
        writes=(PUT_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "power-state-read-403",
        "pending",
        "the status read (needed to say what waits) answers 403",
        "a failed read is a failure: nothing written",
        False,
        ("HTTP 403", NOTHING),
        fail(
            "GET",
            "/lxc/120/status/current",
            status=403,
            message="Permission check failed (/vms/120, VM.Audit)",
        ),
        WAITS,
        name="dns",
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "resize-task-warnings",
        "pending",
        "the resize task ends WARNINGS: 2",
        "a success: the disk is reported grown, with the warnings count and the log command",
        True,
        ("succeeded with 2 warnings (WARNINGS: 2)", "pvenode task log UPID:"),
        task_warnings("resize", 2),
        dns(rootfs="local-zfs:6"),
        name="dns",
        writes=(RESIZE_120,),
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    # -------------------------------------------------------------------------------------- input
    Scenario(
        "unknown-key",
        "input",
        "a key the family does not know (colour)",
        "refused by name, never ignored",
        False,
        ("Refused: colour: not a container config key", "remove it", NOTHING),
        None,
        declaration(colour="blue"),
    ),
    Scenario(
        "wrong-type-list",
        "input",
        "memory given as a list",
        "refused naming the key and the type",
        False,
        ("Refused: memory: expected a string, number or boolean, got list", NOTHING),
        None,
        declaration(memory=[1024]),
    ),
    Scenario(
        "wrong-type-mapping",
        "input",
        "net0 given as a mapping",
        "refused naming the key and the type",
        False,
        ("Refused: net0: expected a string, number or boolean, got dict", NOTHING),
        None,
        declaration(net0={"name": "eth0", "bridge": "vmbr0"}),
    ),
    Scenario(
        "wrong-type-adopt",
        "input",
        "adopt given as the string yes",
        "adopt is a boolean; a string is refused",
        False,
        ("Refused: adopt: expected true or false", NOTHING),
        None,
        declaration(adopt="yes"),
    ),
    Scenario(
        "propstring-bare-item",
        "input",
        "net0 with an item without '=' (name=eth0,bridge)",
        "property strings are parsed as PVE parses them",
        False,
        ("Refused: net0: 'bridge' has no '='", NOTHING),
        None,
        declaration(net0="name=eth0,bridge"),
    ),
    Scenario(
        "propstring-unknown-option",
        "input",
        "net0 with an option PVE does not have",
        "refused, listing the allowed options",
        False,
        ("Refused: net0: unknown option(s) colour", "allowed:", NOTHING),
        None,
        declaration(net0="name=eth0,bridge=vmbr0,colour=red"),
    ),
    Scenario(
        "size-40GB",
        "input",
        "rootfs local-zfs:40GB",
        "sizes are binary units; 40GB is refused with the right spelling",
        False,
        ("Refused: rootfs:", "'40GB' is not a volume name", "local-zfs:40", NOTHING),
        None,
        declaration(rootfs="local-zfs:40GB"),
    ),
    Scenario(
        "size-negative",
        "input",
        "rootfs local-zfs:-1G",
        "a negative size is refused",
        False,
        ("Refused: rootfs:", "'-1G' is not a volume name", NOTHING),
        None,
        declaration(rootfs="local-zfs:-1G"),
    ),
    Scenario(
        "size-option-40GB",
        "input",
        "mp0 with size=40GB",
        "size= is parsed as PVE's parse_size",
        False,
        ("Refused: mp0:", "'40GB' is not a PVE size", NOTHING),
        None,
        declaration(mp0="local-zfs:10,mp=/srv,size=40GB"),
    ),
    Scenario(
        "vmid-below-range",
        "input",
        "vmid 99",
        "vmids are 100-999999999 (pve-vmid)",
        False,
        ("Refused: vmid: 99 is outside PVE's range 100-999999999", NOTHING),
        None,
        declaration(vmid=99),
    ),
    Scenario(
        "vmid-above-range",
        "input",
        "vmid 1000000000",
        "vmids are 100-999999999 (pve-vmid)",
        False,
        ("Refused: vmid: 1000000000 is outside PVE's range", NOTHING),
        None,
        declaration(vmid=1_000_000_000),
    ),
    Scenario(
        "vmid-not-a-number",
        "input",
        "vmid given as web",
        "refused naming the key",
        False,
        ("Refused: vmid:", "is not an integer", NOTHING),
        None,
        declaration(vmid="web"),
    ),
    Scenario(
        "vmid-non-ascii-digits",
        "input",
        "vmid given in superscript digits (¹⁵⁰)",
        "refused as not an integer; the state never crashes",
        False,
        ("Refused: vmid:", "is not an integer", NOTHING),
        None,
        declaration(vmid="¹⁵⁰"),
    ),
    Scenario(
        "hostname-not-dns",
        "input",
        "hostname web_1",
        "hostname is a DNS name (PVE's dns-name format)",
        False,
        ("Refused: hostname: value does not look like a valid DNS name", NOTHING),
        None,
        declaration(hostname="web_1"),
    ),
    Scenario(
        "hostname-non-ascii",
        "input",
        "hostname wëb",
        "a non-ASCII host name is not a DNS name",
        False,
        ("Refused: hostname: value does not look like a valid DNS name", NOTHING),
        None,
        declaration(hostname="wëb"),
    ),
    Scenario(
        "hostname-huge",
        "input",
        "a 100000-character hostname",
        "refused with the value clipped, never echoed whole (PVE takes no request body over 64 KiB)",
        False,
        ("Refused: hostname: 'hhh", "(100000 characters)", "$limit_max_post", NOTHING),
        None,
        declaration(hostname="h" * 100_000),
    ),
    Scenario(
        "key-huge",
        "input",
        "a 100000-character key name",
        "refused by a shortened name; the comment stays short",
        False,
        ("Refused: kkkk", "(100000 characters)", "not a container config key", NOTHING),
        None,
        declaration(**{"k" * 100_000: 1}),
    ),
    Scenario(
        "node-huge",
        "input",
        "a 100000-character node name",
        "refused before any request (a node name is a host name label)",
        False,
        ("Refused: node: 'nnnn", "(100000 characters)", "not a PVE node name", NOTHING),
        None,
        declaration(node="n" * 100_000),
        never=("/config", "/pending"),
    ),
    Scenario(
        "number-non-ascii-digits",
        "input",
        "memory given in Arabic-Indic digits (١٠٢٤)",
        "numbers are ASCII digits as PVE's schema reads them; refused before any write",
        False,
        ("Refused: memory: type check ('integer') failed", NOTHING),
        None,
        declaration(memory="١٠٢٤"),
    ),
    Scenario(
        "size-non-ascii-digits",
        "input",
        "rootfs local-zfs:١٠ (Arabic-Indic digits)",
        "a size is ASCII digits (parse_size); never sent as a new disk",
        False,
        ("rootfs:", "storage:GiB", NOTHING),
        None,
        declaration(rootfs="local-zfs:١٠"),
    ),
    Scenario(
        "number-with-underscore",
        "input",
        "memory given as 1_024",
        "Python's int() spelling is not PVE's: refused before any write",
        False,
        ("Refused: memory: type check ('integer') failed", NOTHING),
        None,
        declaration(memory="1_024"),
    ),
    Scenario(
        "number-nan",
        "input",
        "cpulimit given as .nan",
        "NaN is not a number PVE takes: refused before any write",
        False,
        ("Refused: cpulimit: type check ('number') failed", NOTHING),
        None,
        declaration(cpulimit=float("nan")),
    ),
    Scenario(
        "newline-in-propstring",
        "input",
        "net0 with a newline inside",
        "a value with a line break is refused before any write (PVE keeps one key per config line)",
        False,
        ("Refused: net0:", "line break", NOTHING),
        None,
        declaration(net0="name=eth0,bridge=vmbr0\nip=dhcp"),
    ),
    Scenario(
        "newline-in-scalar",
        "input",
        "timezone carrying a second config line (lxc.apparmor.profile: unconfined)",
        "no config line can be smuggled in: refused before any write",
        False,
        ("Refused: timezone:", NOTHING),
        None,
        declaration(timezone="UTC\nlxc.apparmor.profile: unconfined"),
    ),
    Scenario(
        "tag-unicode-case-fold",
        "input",
        "a tag spelled with the Kelvin sign (U+212A, which case-folds to k)",
        "tags are ASCII as PVE's tag format; refused before any write",
        False,
        ("Refused: tags: invalid tag(s)", NOTHING),
        None,
        declaration(tags="\u212aelvin"),
    ),
    Scenario(
        "description-non-ascii",
        "input",
        "a description in several scripts (Ünïcödé ✓ 数据库)",
        "UTF-8 text where PVE takes it is written and read back as equal",
        True,
        ("has been created",),
        None,
        declaration(description="Ünïcödé ✓ 数据库"),
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "owned"},
    ),
    Scenario(
        "grain-row-corrupt",
        "input",
        "the grain row of CT 120 was hand-edited: its recorded vmid is no number",
        "a malformed ownership row is an error naming the row, never a crash or an unowned guest",
        False,
        ("salt_proxmox:owned", "lab/lxc/120", "malformed", NOTHING),
        corrupt_row,
        dns(),
        name="dns",
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "grain-row-not-a-mapping",
        "input",
        "the grain row of CT 120 is a bare string",
        "a row that is no mapping claims nothing: the guest counts as unowned, refused until adopt: true",
        False,
        ("did not create it", "adopt: true", NOTHING),
        row_not_a_mapping,
        dns(),
        name="dns",
        seed_rows=OWNED_120,
    ),
    # ------------------------------------------------------------------------------------- pillar
    Scenario(
        "pillar-entry-is-a-list",
        "pillar",
        "pillar proxmox:lxc:web is a list",
        "the state fails naming the pillar key and the shape it needs; nothing is called",
        False,
        ("proxmox:lxc:web", "is a list", "mapping", NOTHING),
        via="salt-call",
        pillar="proxmox:\n  lxc:\n    web: [150, pve1]\n",
    ),
    Scenario(
        "pillar-entry-is-a-string",
        "pillar",
        "pillar proxmox:lxc:web is a string",
        "the state fails naming the pillar key and the shape it needs",
        False,
        ("proxmox:lxc:web", "is a string", "mapping", NOTHING),
        via="salt-call",
        pillar="proxmox:\n  lxc:\n    web: vmid=150\n",
    ),
    Scenario(
        "pillar-lxc-is-a-list",
        "pillar",
        "pillar proxmox:lxc is a list",
        "one failing state naming proxmox:lxc, not a template traceback",
        False,
        ("proxmox:lxc", "is a list", "mapping of state id", NOTHING),
        via="salt-call",
        pillar="proxmox:\n  lxc:\n    - web\n    - db\n",
    ),
    Scenario(
        "pillar-proxmox-is-a-list",
        "pillar",
        "pillar proxmox itself is a list",
        "a failing state, never a silent empty run",
        False,
        ("pillar proxmox", "is a list", "mapping", NOTHING),
        via="salt-call",
        pillar="proxmox:\n  - lxc\n",
    ),
    Scenario(
        "salt-call-openbao-sealed",
        "pillar",
        "state.apply with OpenBao sealed",
        "every container fails with the unseal remedy; no secret in the output, the minion log or grains",
        False,
        ("OpenBao is sealed", "unseal", NOTHING),
        creds="sealed",
        via="salt-call",
        pillar=(
            "proxmox:\n  lxc:\n    web:\n      vmid: 150\n      node: pve1\n      ostemplate: "
            "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst\n      unprivileged: true\n"
            "      rootfs: local-zfs:8\n"
        ),
    ),
    Scenario(
        "salt-call-provision-revoked",
        "pillar",
        "state.apply after the provision token was revoked",
        "the create is refused (401) and the grains file holds no row for it",
        False,
        ("HTTP 401 authentication failure", "issue a new token", NOTHING),
        revoke(PROVISION_TOKEN_ID),
        creds="openbao",
        via="salt-call",
        writes=("POST /nodes/pve1/lxc",),
        pillar=(
            "proxmox:\n  lxc:\n    web:\n      vmid: 150\n      node: pve1\n      ostemplate: "
            "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst\n      unprivileged: true\n"
            "      rootfs: local-zfs:8\n"
        ),
    ),
    # -------------------------------------------------------------------------------- lost answers
    *(
        Scenario(
            f"create-answer-lost-{how}",
            "writes",
            f"the create POST reaches PVE, which creates the guest; its answer is lost ({what})",
            'uncertain, not "nothing was written": the creating row stays and nothing is re-sent',
            False,
            ("may or may not have acted", "pvesh get /nodes/<node>/tasks", "stays creating"),
            lose("POST", "/nodes/pve1/lxc", how),
            WEB,
            writes=CREATE,
            rows={f"{TARGET}/lxc/150": "creating"},
        )
        for how, what in (
            ("504", "a gateway's 504"),
            ("596", "pveproxy's 596"),
            ("597", "pveproxy's 597"),
            ("html-200", "an HTML page with 200"),
            ("chunked", "the body is cut off"),
            ("gzip", "the body cannot be decompressed"),
        )
    ),
    Scenario(
        "create-uncertain-then-rerun",
        "writes",
        "a run after a create whose answer was lost: the guest is there and matches",
        "the interrupted create is finished as ours, nothing is sent",
        True,
        ("our interrupted create is listed in the node's tasks and the guest matches",),
        lambda run: (
            create_task(PROVISION_TOKEN_ID)(run)
            or run.pve.add_ct(
                150,
                node="pve1",
                status="stopped",
                defaults=False,
                config={
                    "hostname": "ct150",
                    "memory": 1024,
                    "cores": 2,
                    "unprivileged": 1,
                    "arch": "amd64",
                    "ostype": "debian",
                    "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
                    "mp0": "local-zfs:subvol-150-disk-1,mp=/srv/data,backup=1,size=10G",
                    "net0": "name=eth0,bridge=vmbr0,ip=dhcp,hwaddr=BC:24:11:00:00:01,type=veth",
                    "features": "nesting=1",
                    "tags": "prod;web",
                    "startup": "order=2,up=30",
                    "description": "made by a test\n",
                },
            )
        ),
        WEB,
        rows={f"{TARGET}/lxc/150": "owned"},
        seed_rows=creating_row(150, WEB, token=PROVISION_TOKEN_ID),
    ),
    *(
        Scenario(
            f"update-answer-lost-{how}",
            "writes",
            f"the config PUT reaches PVE, which writes it; its answer is lost ({what})",
            "uncertain: the comment says what may have changed and that the next run re-reads",
            False,
            ("may or may not have acted", "The next run reads the guest again"),
            lose("PUT", "/lxc/120/config", how),
            dns(memory=1024),
            name="dns",
            writes=(PUT_120,),
            rows={f"{TARGET}/lxc/120": "owned"},
            seed_rows=OWNED_120,
        )
        for how, what in (("504", "a gateway's 504"), ("html-200", "an HTML page with 200"))
    ),
    Scenario(
        "tls-first-member",
        "writes",
        "the first member's certificate is not signed by the CA bundle; the second is fine",
        "a TLS failure sends nothing, so the create fails over to the next member",
        True,
        ("has been created",),
        lambda run: run.target.update(
            members=[run.cluster.url.replace("127.0.0.1", "localhost"), run.cluster.url]
        ),
        WEB,
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "owned"},
    ),
    # -------------------------------------------------------------------------------- ownership
    Scenario(
        "grains-unwritable-before-create",
        "ownership",
        "the rows file cannot be written when the creating row is recorded",
        "the create is not sent without its row; the state names the rows file and the row",
        False,
        (
            "/etc/salt/salt_proxmox_owned.json",
            f"ownership row {TARGET}/lxc/150 was not set to creating",
            NOTHING,
        ),
        unwritable("creating"),
        WEB,
        rows={},
    ),
    Scenario(
        "grains-unwritable-after-create",
        "ownership",
        "the rows file cannot be written when the owned row is recorded after the create",
        "the state fails naming the file and row; the creating row stays, so the next run finishes it",
        False,
        (
            "/etc/salt/salt_proxmox_owned.json",
            f"ownership row {TARGET}/lxc/150 was not set to owned",
            "stays creating",
        ),
        unwritable("owned"),
        WEB,
        writes=CREATE,
        rows={f"{TARGET}/lxc/150": "creating"},
    ),
    Scenario(
        "grains-unwritable-adopt",
        "ownership",
        "the rows file cannot be written when an adopted guest is recorded",
        "the state fails naming the file; the guest stays unowned, untouched",
        False,
        (
            "/etc/salt/salt_proxmox_owned.json",
            f"ownership row {TARGET}/lxc/120 was not set to owned",
            "adopt: true",
        ),
        unwritable("owned"),
        dns(adopt=True),
        name="dns",
        rows={},
    ),
    Scenario(
        "grains-unwritable-no-drift",
        "ownership",
        "the rows file cannot be written, and nothing differs",
        "an unchanged row is not rewritten, so the apply is clean",
        True,
        ("is as declared",),
        unwritable("owned"),
        DNS,
        name="dns",
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=STORED_120,
    ),
    # -------------------------------------------------------------------------------- bad secrets
    Scenario(
        "newline-static-secret",
        "credentials",
        "the static secrets end in a newline (a YAML block scalar)",
        "refused before any request, naming the key, never the value",
        False,
        ("secret holds a line break", "one-line string", NOTHING),
        newline_secrets,
        WEB,
        never=("/config", "/resources", "/version"),
    ),
    Scenario(
        "newline-secret-in-openbao",
        "credentials",
        "OpenBao hands out the read secret with a trailing newline",
        "refused before any request to PVE, naming the OpenBao path and the key",
        False,
        ("secret holds a line break", "proxmox/creds/read", NOTHING),
        newline_creds_in_openbao,
        WEB,
        creds="openbao",
        never=("/config", "/resources"),
    ),
    Scenario(
        "salt-call-newline-secret",
        "pillar",
        "state.apply with static secrets that end in a newline",
        "refused naming the key; no secret in the output, the minion log (debug) or grains",
        False,
        ("secret holds a line break", NOTHING),
        newline_secrets,
        via="salt-call",
        never=("/config",),
        pillar=(
            "proxmox:\n  lxc:\n    web:\n      vmid: 150\n      node: pve1\n      ostemplate: "
            "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst\n      unprivileged: true\n"
            "      rootfs: local-zfs:8\n"
        ),
    ),
    # ------------------------------------------------------------------------------- network, SDN
    Scenario(
        id="network-settled-node",
        group="network",
        fault="nothing is staged on the node (PVE's listing has no `changes`)",
        promise="no reload, no write, no provision credential: adopting a settled node costs nothing",
        result=True,
        comment=("nothing is staged",),
        state="network_applied",
        declaration={"node": "pve1"},
    ),
    Scenario(
        id="network-staged-plan",
        group="network",
        fault="an interface change is staged in interfaces.new; plan",
        promise="the plan shows the staged diff and writes nothing",
        result=None,
        comment=("would apply",),
        setup=lambda run: stage_bridge(run, "pve1"),
        state="network_applied",
        declaration={"node": "pve1"},
        test=True,
    ),
    Scenario(
        id="network-staged-applied",
        group="network",
        fault="an interface change is staged; apply",
        promise="one reload PUT, its task polled by the credential that started it, health checked "
        "before and after, nothing left staged",
        result=True,
        comment=("applied; the cluster is healthy",),
        setup=lambda run: stage_bridge(run, "pve1"),
        state="network_applied",
        declaration={"node": "pve1"},
        writes=("PUT /nodes/pve1/network",),
    ),
    Scenario(
        id="network-quorum-lost",
        group="network",
        fault="staged change; the cluster has lost quorum",
        promise="refused before any write; the staged change stays staged",
        result=False,
        comment=("not quorate", "nothing was written"),
        setup=lambda run: (stage_bridge(run, "pve1"), run.pve.lose_quorum()),
        state="network_applied",
        declaration={"node": "pve1"},
    ),
    Scenario(
        id="network-node-offline",
        group="network",
        fault="staged change; another node is offline",
        promise="refused before any write",
        result=False,
        comment=("node pve2 is offline", "nothing was written"),
        setup=lambda run: (stage_bridge(run, "pve1"), run.pve.set_node_offline("pve2")),
        state="network_applied",
        declaration={"node": "pve1"},
    ),
    Scenario(
        id="network-reload-task-fails",
        group="network",
        fault="the reload task ends with an error (ifreload failed)",
        promise="failure with the UPID and the task log command; later applies of the run are not run",
        result=False,
        comment=("ifreload -a", "pvesh get /nodes/pve1/tasks/", "Later network and SDN applies"),
        setup=lambda run: (
            stage_bridge(run, "pve1"),
            run.pve.reload_failures.__setitem__("pve1", "command 'ifreload -a' failed: exit code 1"),
        ),
        state="network_applied",
        declaration={"node": "pve1"},
        writes=("PUT /nodes/pve1/network",),
    ),
    Scenario(
        id="network-poll-unreadable",
        group="network",
        fault="the reload starts, then its task status cannot be read (595)",
        promise="reported unreachable with the UPID, not as a failed reload; nothing retried",
        result=False,
        comment=("unreachable: task UPID:pve1:", "nothing is retried"),
        setup=lambda run: (stage_bridge(run, "pve1"), run.pve.unreadable_polls.add("pve1")),
        state="network_applied",
        declaration={"node": "pve1"},
        writes=("PUT /nodes/pve1/network",),
    ),
    Scenario(
        id="network-node-offline-after-reload",
        group="network",
        fault="the reload ends OK, then another node drops out",
        promise="the health check after the reload fails the apply, naming the node",
        result=False,
        comment=("ended OK, but now node pve2 is offline",),
        setup=lambda run: (
            stage_bridge(run, "pve1"),
            run.pve.offline_after_reload.__setitem__("pve1", "pve2"),
        ),
        state="network_applied",
        declaration={"node": "pve1"},
        writes=("PUT /nodes/pve1/network",),
    ),
    Scenario(
        id="sdn-pending-applied",
        group="network",
        fault="our SDN zone is pending",
        promise="the SDN lock taken, one commit PUT with its token, the task awaited, nothing pending after",
        result=True,
        comment=("applied; the cluster is healthy",),
        setup=lambda run: pending_zone(run),
        state="sdn_applied",
        **DECLARES_ZONE,
        writes=("POST /cluster/sdn/lock", "PUT /cluster/sdn"),
    ),
    Scenario(
        id="sdn-nothing-pending",
        group="network",
        fault="the SDN configuration is all running",
        promise="no lock, no commit, no provision credential",
        result=True,
        comment=("nothing is staged",),
        state="sdn_applied",
    ),
    Scenario(
        id="sdn-quorum-lost",
        group="network",
        fault="our SDN zone is pending; the cluster has lost quorum",
        promise="refused before the lock or the commit",
        result=False,
        comment=("not quorate", "nothing was written"),
        setup=lambda run: (pending_zone(run), run.pve.lose_quorum()),
        state="sdn_applied",
        **DECLARES_ZONE,
    ),
    Scenario(
        id="sdn-reload-task-fails",
        group="network",
        fault="the commit's reloadnetworkall task ends with an error",
        promise="failure with the UPID; later applies of the run are not run",
        result=False,
        comment=("pvesh set /nodes/pve2/network", "Later network and SDN applies"),
        setup=lambda run: (
            pending_zone(run),
            setattr(run.pve, "sdn_reload_failure", "pvesh set /nodes/pve2/network failed"),
        ),
        state="sdn_applied",
        **DECLARES_ZONE,
        writes=("POST /cluster/sdn/lock", "PUT /cluster/sdn"),
    ),
    Scenario(
        id="sdn-node-reload-fails",
        group="network",
        fault="our SDN zone is pending; pve2's reload under the commit fails, reloadnetworkall still ends OK",
        promise="each node reload the commit started is awaited: failure naming pve2, its task, the remedy",
        result=False,
        comment=("node pve2 did not take it", "ifreload -a", "`pvesh set /nodes/pve2/network`"),
        setup=lambda run: (
            pending_zone(run),
            run.pve.reload_failures.__setitem__("pve2", "command 'ifreload -a' failed: exit code 1"),
        ),
        state="sdn_applied",
        **DECLARES_ZONE,
        writes=("POST /cluster/sdn/lock", "PUT /cluster/sdn"),
    ),
    Scenario(
        id="sdn-node-reload-unstarted",
        group="network",
        fault="our SDN zone is pending; the commit cannot start pve2's reload (reloadnetworkall warns)",
        promise="failure naming pve2 and the commit's task log, never an applied configuration",
        result=False,
        comment=("node pve2 started no reload", "`pvesh set /nodes/pve2/network`"),
        setup=lambda run: (pending_zone(run), run.pve.sdn_unstarted_reloads.add("pve2")),
        state="sdn_applied",
        **DECLARES_ZONE,
        writes=("POST /cluster/sdn/lock", "PUT /cluster/sdn"),
    ),
    Scenario(
        id="network-foreign-staged-deletion",
        group="network",
        fault="somebody staged the deletion of vmbr0; no state of the run removes it",
        promise="refused at plan and apply, naming the interface and the node's revert; nothing reloaded",
        result=False,
        comment=("delete interface(s) vmbr0", "`pvesh delete /nodes/pve1/network`"),
        setup=staged_vmbr0_deletion,
        state="network_applied",
        declaration={"node": "pve1"},
    ),
    Scenario(
        id="network-killed-reload-reported",
        group="network",
        fault="a run stopped after starting a reload that then failed; nothing is staged now",
        promise="the next plan reads the node's last srvreload task and reports it, never a clean plan",
        result=False,
        comment=("ended with", "ifreload -a", "pvesh get /nodes/pve1/tasks/"),
        setup=failed_reload,
        state="network_applied",
        declaration={"node": "pve1"},
        test=True,
    ),
    Scenario(
        id="sdn-node-staged-uncovered",
        group="network",
        fault="our SDN zone is pending; somebody staged a bridge on pve2, no node apply of the run covers it",
        promise="refused: the commit reloads every node and would make pve2's staged bridge live",
        result=False,
        comment=("node pve2 has staged network changes", "`pvesh delete /nodes/pve2/network`"),
        setup=lambda run: (pending_zone(run), stage_bridge(run, "pve2")),
        state="sdn_applied",
        **DECLARES_ZONE,
    ),
    Scenario(
        id="sdn-foreign-pending-deletion",
        group="network",
        fault="zone lab runs; somebody deleted it in the pending SDN configuration",
        promise="refused, naming the zone and POST /cluster/sdn/rollback; nothing committed",
        result=False,
        comment=("deletes zone lab", "`pvesh create /cluster/sdn/rollback`"),
        setup=foreign_zone_deletion,
        state="sdn_applied",
    ),
    Scenario(
        id="sdn-foreign-pending-zone",
        group="network",
        fault="somebody staged zone lab in the pending SDN configuration; no state of the run declares it",
        promise="refused at plan and apply, naming the zone, adopt: true, the rollback; no lock, no commit",
        result=False,
        comment=(
            "no state of this run declares: zone lab: new",
            "adopt: true",
            "`pvesh create /cluster/sdn/rollback`",
        ),
        setup=pending_zone,
        state="sdn_applied",
    ),
    Scenario(
        id="sdn-lock-held-by-another-client",
        group="network",
        fault="our SDN zone is pending; another client holds PVE's global SDN lock",
        promise="no read shows the lock: the apply's lock is refused, naming that lock and its remedies",
        result=False,
        comment=("another client holds PVE's global SDN lock", "--force 1", "Nothing was written."),
        setup=lambda run: (
            pending_zone(run),
            setattr(run.pve, "sdn_lock", "0191d7a0-0000-7000-8000-00000000beef"),
        ),
        state="sdn_applied",
        **DECLARES_ZONE,
        writes=("POST /cluster/sdn/lock",),
    ),
    Scenario(
        id="sdn-commit-answer-lost",
        group="network",
        fault="the commit's answer is lost (HTTP 502 after the request was sent)",
        promise="reported uncertain; the SDN lock it took is released with its token, not left held",
        result=False,
        comment=("HTTP 502", "may or may not have acted"),
        setup=lambda run: (pending_zone(run), run.pve.fail("PUT", "/cluster/sdn", 502, "Bad Gateway")),
        state="sdn_applied",
        **DECLARES_ZONE,
        writes=("POST /cluster/sdn/lock", "PUT /cluster/sdn", "DELETE /cluster/sdn/lock"),
    ),
    Scenario(
        id="sdn-lock-left-by-a-stopped-run",
        group="network",
        fault="a run stopped after taking PVE's global SDN lock; its token is recorded",
        promise="the next apply says the lock is this minion's, releases it with the token, then commits",
        result=True,
        comment=("took PVE's global SDN lock", "released"),
        setup=lambda run: (pending_zone(run), setattr(run.pve, "sdn_lock", LEFT_LOCK)),
        state="sdn_applied",
        declaration={"declares": (OUR_ZONE,)},
        seed_rows={**LEFT_LOCK_ROW, **OUR_ZONE_ROW},
        rows={OUR_ZONE_KEY: "owned"},
        writes=("DELETE /cluster/sdn/lock", "POST /cluster/sdn/lock", "PUT /cluster/sdn"),
    ),
    # -------------------------------------------------------------------------------------- VMs
    Scenario(
        "vm-create-then-clean",
        "vms",
        "none: a VM created from scratch with a disk, an ISO, a cloud-init drive and a secret password",
        "one create task, then the password in a config write of its own (create_vm would keep it in "
        "clear; update_vm_api hashes it); it is never shown, logged or kept; the row is owned",
        True,
        ("VM 150 on pve1 has been created",),
        password_is_secret,
        {**VM_150, "cipassword": VM_PASSWORD, "cipassword_serial": 1},
        state="qemu_present",
        writes=("POST /nodes/pve1/qemu", "POST /nodes/pve1/qemu/150/config"),
        rows={f"{TARGET}/qemu/150": "owned"},
    ),
    Scenario(
        "vm-create-refused",
        "vms",
        "the create POST is refused (PVE: storage 'local-lvm' does not exist)",
        "a refused create leaves no row and no VM",
        False,
        ("storage 'local-lvm' does not exist",),
        fail("POST", "/nodes/pve1/qemu", status=500, message="storage 'local-lvm' does not exist"),
        VM_150,
        state="qemu_present",
        writes=("POST /nodes/pve1/qemu",),
    ),
    Scenario(
        "vm-clone-configure-grow",
        "vms",
        "none: a VM made by cloning template 9000, then its declaration written and its disk grown",
        "clone, config write and resize are tasks, in that order, in one apply; the row is owned",
        True,
        ("VM 151 on pve1 has been created",),
        None,
        VM_151,
        state="qemu_present",
        writes=(*CLONE_151, "PUT /nodes/pve1/qemu/151/resize"),
        rows={f"{TARGET}/qemu/151": "owned"},
    ),
    Scenario(
        "vm-clone-config-write-fails",
        "vms",
        "the clone succeeds, then the config write onto it is refused",
        "the clone exists, so its row stays creating; the next run wants adopt: true to write onto it",
        False,
        ("unable to parse drive options", "Already written: clone VM 9000", "adopt: true"),
        fail("POST", "/qemu/151/config", status=500, message="unable to parse drive options"),
        VM_151,
        state="qemu_present",
        writes=CLONE_151,
        rows={f"{TARGET}/qemu/151": "creating"},
    ),
    Scenario(
        "vm-hotplug-fails",
        "vms",
        "a NIC added to the running VM 300 fails its hot-plug after update_vm_api wrote it pending",
        "the hot-plug is a POST …/config task; its failure is read back: what is in effect, net2 pending "
        "with the reboot that makes it live, never nothing was written; the row follows the read-back",
        False,
        ("hotplug problem - VM 300 qmp command", "pending until the VM restarts: net2", "`qm reboot 300`"),
        hotplug_fails_300,
        {**VM_300, "adopt": True, "net2": "virtio,bridge=vmbr0"},
        name="router",
        state="qemu_present",
        writes=("POST /nodes/pve2/qemu/300/config",),
        rows={f"{TARGET}/qemu/300": "owned"},
    ),
    Scenario(
        "vm-clone-source-not-template",
        "vms",
        "the declared clone source is a VM that is not a template",
        "refused at plan and apply: nothing is cloned",
        False,
        ("VM 300 is not a template", "qm template 300"),
        None,
        {**VM_151, "clone": 300},
        state="qemu_present",
    ),
    Scenario(
        "vm-clone-local-storage-other-node",
        "vms",
        "a clone declared on pve2 of template 9000 on pve1, whose volumes are on local-lvm (not shared)",
        "refused at plan and apply with PVE's words (VM uses local storage) and the node to declare; nothing "
        "is cloned",
        False,
        ("can't clone VM to node 'pve2' (VM uses local storage)", "Declare node: pve1", NOTHING),
        None,
        {**VM_151, "node": "pve2"},
        state="qemu_present",
        never=("/clone",),
    ),
    Scenario(
        "vm-linked-clone-on-thick-lvm",
        "vms",
        "a linked clone of template 9000 whose disk is on thick LVM (no clone feature)",
        "refused at plan with PVE's words and full: true as the remedy; nothing is cloned",
        False,
        (
            "Linked clone feature is not supported for 'local-lvm:base-9000-disk-0' (scsi0)",
            "Declare full: true",
        ),
        thick_lvm,
        {key: value for key, value in VM_151.items() if key not in ("full", "storage")},
        state="qemu_present",
        never=("/clone",),
    ),
    Scenario(
        "vm-shrink-refused",
        "vms",
        "a VM adopted with a disk declared smaller than it is",
        "a shrink is refused at plan with PVE's reason; nothing is written, nothing taken over",
        False,
        ("shrinking disks is not supported", NOTHING),
        None,
        {**VM_300, "adopt": True, "scsi0": "local-lvm:4,iothread=1"},
        name="router",
        state="qemu_present",
    ),
    Scenario(
        "vm-paused-shutdown-refused",
        "vms",
        "status: stopped on a VM whose QEMU is paused (qmpstatus: paused), force_stop not declared",
        "PVE refuses to shut a paused VM down: refused at plan with its words and qm resume; nothing sent",
        False,
        ("`VM is paused - cannot shutdown`", "`qm resume 300`", NOTHING),
        paused_300,
        {**VM_300, "adopt": True, "status": "stopped"},
        name="router",
        state="qemu_present",
        never=("/status/shutdown", "/status/stop"),
    ),
    Scenario(
        "vm-root-only-args",
        "vms",
        "a VM declared with args, which only root@pam may set",
        "refused at plan with the qm command to run as root; nothing is created",
        False,
        ("only root@pam", "qm create 150", "adopt: true"),
        None,
        {**VM_150, "args": "-device virtio-rng-pci"},
        state="qemu_present",
    ),
    Scenario(
        "vm-config-403",
        "vms",
        "the VM config read (GET …/pending) answers 403",
        "a 403 is a failure, never absence: no index read, no create",
        False,
        ("HTTP 403 Permission check failed (/vms/150, VM.Audit)", NOTHING),
        fail("GET", "/qemu/150/pending", status=403, message="Permission check failed (/vms/150, VM.Audit)"),
        VM_150,
        state="qemu_present",
        never=("/cluster/resources",),
    ),
]


# ------------------------------------------------------------------------------------------ identity

#: Our CT 150 as created: no mp0, one NIC with the MAC PVE drew.
OURS_150 = declaration(mp0=None)
OURS_150_LIVE = {"hostname": "ct150", "memory": 1024, "cores": 2, "unprivileged": 1,
                 "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
                 "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:01:50,ip=dhcp,type=veth"}  # fmt: skip
OWNED_150 = owned_row(150, "web", OURS_150, OURS_150_LIVE)
#: Our CT 150 without a NIC: nothing PVE drew for it alone, only volume ids and sizes.
NO_NIC_150 = declaration(mp0=None, net0=None)
NO_NIC_150_LIVE = {
    **{k: v for k, v in OURS_150_LIVE.items() if k != "net0"},
    "features": "nesting=1",
    "tags": "prod;web",
    "startup": "order=2,up=30",
}
DESTROY_150 = {"vmid": 150, "node": "pve1", "removal": "destroy"}


def theirs_150(run: Run) -> None:
    """Our CT 150 was destroyed by hand and somebody created theirs at 150: same hostname and memory,
    another MAC (PVE draws one per NIC), a static address and an extra 500G mp0."""
    run.pve.add_ct(150, node="pve1", status="stopped", defaults=False, config={
        **OURS_150_LIVE,
        "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:7A:00:01,ip=10.0.0.99/24,type=veth",
        "mp0": "local-zfs:subvol-150-disk-1,mp=/data,size=500G",
    })  # fmt: skip


def ours_160_with_unused(run: Run) -> None:
    """Our container 160 with a volume detached by our own write (unused0): recorded, not declared."""
    run.pve.add_ct(160, node="pve1", status="stopped", defaults=False,
                   config={**CT160_LIVE, "unused0": "local-zfs:subvol-160-disk-1"})  # fmt: skip


TWO_STATES_ONE_VMID = "proxmox:\n  lxc:\n" + "".join(
    f"    {name}:\n      vmid: 150\n      node: {node}\n      ostemplate: "
    "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst\n      unprivileged: true\n"
    "      rootfs: local-zfs:8\n"
    for name, node in (("web", "pve1"), ("web-copy", "pve2"))
)

IDENTITY: list[Scenario] = [
    Scenario(
        "recycled-vmid-destroy",
        "identity",
        "our CT 150 destroyed by hand, another CT 150 created (other MAC, extra 500G mp0); absent destroy",
        "our row does not make their guest ours: nothing is deleted; the way forward is named",
        False,
        (
            "does not carry the fingerprint",
            "net0 is BC:24:11:7A:00:01",
            "mp0 (local-zfs:subvol-150-disk-1 size=500G)",
            "adopt: true",
        ),
        theirs_150,
        DESTROY_150,
        state="absent",
        rows={f"{TARGET}/lxc/150": "owned"},
        seed_rows=OWNED_150,
    ),
    Scenario(
        "recycled-vmid-update",
        "identity",
        "the same recycled CT 150; present declares our hostname, memory, DHCP and an 8G rootfs",
        "no PUT and no resize onto their guest",
        False,
        ("does not carry the fingerprint", "net0 is BC:24:11:7A:00:01", "adopt: true", NOTHING),
        theirs_150,
        dict(OURS_150, rootfs="local-zfs:10"),
        rows={f"{TARGET}/lxc/150": "owned"},
        seed_rows=OWNED_150,
    ),
    Scenario(
        "no-nic-remade-update",
        "identity",
        "our CT 150 has no NIC; destroyed by hand and made again at 150 with the same 8G rootfs; present",
        "volume ids and sizes alone do not vouch for a write: refused, adopt: true after a check by hand",
        False,
        ("holds only volume ids and sizes", "cannot vouch that it is ours", "adopt: true", NOTHING),
        lambda run: run.pve.add_ct(
            150,
            node="pve1",
            status="stopped",
            defaults=False,
            config=dict(NO_NIC_150_LIVE),
        ),
        declaration(mp0=None, net0=None, memory=2048),
        rows={f"{TARGET}/lxc/150": "owned"},
        seed_rows=owned_row(150, "web", NO_NIC_150, NO_NIC_150_LIVE),
    ),
    Scenario(
        "no-nic-remade-destroy",
        "identity",
        "the same NIC-less CT 150 made again; absent with removal: destroy",
        "never destroyed on a fingerprint that cannot tell two guests apart",
        False,
        ("holds only volume ids and sizes", "destroy it by hand"),
        lambda run: run.pve.add_ct(
            150,
            node="pve1",
            status="stopped",
            defaults=False,
            config=dict(NO_NIC_150_LIVE),
        ),
        DESTROY_150,
        state="absent",
        rows={f"{TARGET}/lxc/150": "owned"},
        seed_rows=owned_row(150, "web", NO_NIC_150, NO_NIC_150_LIVE),
    ),
    Scenario(
        "creating-row-foreign-guest",
        "identity",
        "our create's answer was lost and it did not happen; root@pam made CT 150 from the same declaration",
        "a creating row is finished only when the task list ties the guest to our create: refused",
        False,
        (
            "nothing ties it to that create",
            "does not show a create task of salt-provision@pve!apply",
            "adopt: true",
            NOTHING,
        ),
        both(
            create_task("root@pam"),
            lambda run: run.pve.add_ct(
                150, node="pve1", status="stopped", defaults=False, config=dict(OURS_150_LIVE)
            ),
        ),
        OURS_150,
        rows={f"{TARGET}/lxc/150": "creating"},
        seed_rows=creating_row(150, OURS_150, token=PROVISION_TOKEN_ID),
    ),
    Scenario(
        "creating-row-destroy",
        "identity",
        "a creating row and a guest at CT 150 (made by our own create); absent with removal: destroy",
        "never destroyed on a creating row: present finishes it first, or a destroy by hand",
        False,
        ("create of ours as unfinished", "Nothing was deleted", "pct destroy 150"),
        both(
            create_task(PROVISION_TOKEN_ID),
            lambda run: run.pve.add_ct(
                150, node="pve1", status="stopped", defaults=False, config=dict(OURS_150_LIVE)
            ),
        ),
        DESTROY_150,
        state="absent",
        rows={f"{TARGET}/lxc/150": "creating"},
        seed_rows=creating_row(150, OURS_150, token=PROVISION_TOKEN_ID),
    ),
    Scenario(
        "row-before-fingerprints-matches",
        "identity",
        "the row of CT 120 was written before fingerprints existed; the guest matches it",
        "trusted only on that exact match, said in the comment, and its fingerprint recorded",
        True,
        ("written before fingerprints existed", "matches the declaration recorded with it exactly"),
        None,
        dns(),
        name="dns",
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=owned_row(120, "dns", DNS),
    ),
    Scenario(
        "row-before-fingerprints-differs",
        "identity",
        "a row written before fingerprints for CT 150, and somebody's CT 150 with an extra mp0",
        "never trusted silently: refused, naming what is not in the recorded declaration",
        False,
        (
            "written before fingerprints existed",
            "mp0 (local-zfs:subvol-150-disk-1 size=500G) is not in it",
            "adopt: true",
        ),
        theirs_150,
        DESTROY_150,
        state="absent",
        rows={f"{TARGET}/lxc/150": "owned"},
        seed_rows=owned_row(150, "web", OURS_150),
    ),
    Scenario(
        "destroy-already-done",
        "identity",
        "removal: destroy again after an earlier run destroyed CT 160 and forgot its row",
        "the same absent state is clean on every later run",
        True,
        ("CT 160 on pve1 is absent",),
        None,
        DESTROY_160,
        name="old",
        state="absent",
    ),
    Scenario(
        "destroy-unknown-volume",
        "identity",
        "our CT 160 holds unused0, a volume its declaration does not name; removal: destroy",
        "a destroy never deletes a volume the declaration does not know",
        False,
        (
            "volumes its declaration does not know: unused0 (local-zfs:subvol-160-disk-1)",
            "nothing was deleted",
        ),
        ours_160_with_unused,
        DESTROY_160,
        name="old",
        state="absent",
        rows={f"{TARGET}/lxc/160": "owned"},
        seed_rows=owned_row(160, "old", CT160, {**CT160_LIVE, "unused0": "local-zfs:subvol-160-disk-1"}),
    ),
    Scenario(
        "update-names-foreign-volume",
        "identity",
        "an update of CT 120 declares mp1 as CT 151's existing volume local-lvm:vm-151-disk-1",
        "refused at plan, as a create is: another guest's data is never attached",
        False,
        ("a volume of vmid 151", "Declare it as storage:GiB", NOTHING),
        None,
        dns(mp1="local-lvm:vm-151-disk-1,mp=/data"),
        name="dns",
        rows={f"{TARGET}/lxc/120": "owned"},
        seed_rows=OWNED_120,
    ),
    Scenario(
        "two-states-one-vmid",
        "identity",
        "two pillar entries declare vmid 150 (on two nodes), planned with test=True",
        "both are refused, each naming the other, before either is planned as a create",
        False,
        ("is declared by state proxmox-lxc-web ", "and by state proxmox-lxc-web-copy ", NOTHING),
        via="salt-call",
        test=True,
        pillar=TWO_STATES_ONE_VMID,
    ),
    Scenario(
        "two-states-one-vmid-apply",
        "identity",
        "the same two pillar entries, applied",
        "both are refused before either writes: no create, no row",
        False,
        ("is declared by state proxmox-lxc-web ", "and by state proxmox-lxc-web-copy ", NOTHING),
        via="salt-call",
        pillar=TWO_STATES_ONE_VMID,
    ),
]
SCENARIOS += IDENTITY


def stopped_120(run: Run) -> None:
    """CT 120 is stopped (``pct shutdown 120``)."""
    run.pve.ct(120).status = "stopped"
    run.pve.ct(120).pid = None


def slow_shutdown_120(run: Run) -> None:
    """CT 120 takes ten minutes to shut down (a service that ignores SIGPWR)."""
    run.pve.ct(120).shutdown_secs = 600


def start_fails(vmid: int) -> Callable[[Run], None]:
    """The start task of CT ``vmid`` fails as ``lxc-start`` does (set just before the start POST, so a
    container the state creates fails too)."""

    def setup(run: Run) -> None:
        def broken(run: Run) -> None:
            run.pve.ct(vmid).start_error = f"startup for container '{vmid}' failed"

        run.before("POST", f"/lxc/{vmid}/status/start", broken)

    return setup


def ha_stopped_120(run: Run) -> None:
    """CT 120 is stopped and an HA resource manages it (``ha-manager add ct:120 --state stopped``):
    ``status/current`` reads ``ha: {managed: 1, state: stopped}``."""
    stopped_120(run)
    run.pve.ha_resources["ct:120"] = {"state": "stopped"}
    run.pve._sync_guest("ct:120")


def ha_started_120(run: Run) -> None:
    """CT 120 runs and an HA resource manages it (``ha-manager add ct:120``, its state ``started``)."""
    run.pve.ha_resources["ct:120"] = {}
    run.pve._sync_guest("ct:120")


def ha_ignored_120(run: Run) -> None:
    """CT 120 is stopped and its HA resource is ``ignored`` (``ha-manager add ct:120 --state
    ignored``): PVE reads it ``managed: 0`` (``HA/Config.pm`` ``$service_check_ha_state``)."""
    stopped_120(run)
    run.pve.ha_resources["ct:120"] = {"state": "ignored"}
    run.pve._sync_guest("ct:120")


SHUTDOWN_120 = "POST /nodes/pve1/lxc/120/status/shutdown"
START_120 = "POST /nodes/pve1/lxc/120/status/start"

POWER = [
    Scenario(
        "power-shutdown-times-out",
        "power",
        "status: stopped on a running container that does not shut down within shutdown_timeout",
        "the shutdown task fails, the container keeps running, no hard stop is sent",
        False,
        (
            "container did not stop",
            "was not stopped hard: without force_stop: true",
            "raise shutdown_timeout",
        ),
        slow_shutdown_120,
        dns(status="stopped", shutdown_timeout=10),
        name="dns",
        writes=(SHUTDOWN_120,),
        never=("/status/stop",),
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "power-shutdown-forced-when-declared",
        "power",
        "the same slow container, with force_stop: true declared",
        "one shutdown task with forceStop=1: PVE stops it hard after the timeout",
        True,
        ("has been shut down (within 10 s, then stopped hard (force_stop))",),
        slow_shutdown_120,
        dns(status="stopped", shutdown_timeout=10, force_stop=True),
        name="dns",
        writes=(SHUTDOWN_120,),
        never=("/status/stop",),
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "power-start-task-fails",
        "power",
        "status: running on a stopped container whose start task fails",
        "the failure names the task; the config write before it stays, recorded",
        False,
        ("startup for container '120' failed", "The config is written and recorded"),
        both(stopped_120, start_fails(120)),
        dns(status="running", memory=768),
        name="dns",
        writes=(PUT_120, START_120),
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "power-start-refused",
        "power",
        "the provision token may not start guests (403 on status/start)",
        "the failure names PVE's refusal; nothing else was sent",
        False,
        ("HTTP 403", "VM.PowerMgmt"),
        both(
            stopped_120,
            fail(
                "POST",
                "/lxc/120/status/start",
                status=403,
                message="Permission check failed (/vms/120, VM.PowerMgmt)",
            ),
        ),
        dns(status="running"),
        name="dns",
        writes=(START_120,),
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "power-create-then-start-fails",
        "power",
        "status: running on a new container whose start after the create fails",
        "the create stands and is recorded as ours (the start is its own task, not start=1)",
        False,
        ("has been created", "startup for container '150' failed", "The config is written and recorded"),
        start_fails(150),
        {**WEB, "status": "running"},
        writes=(*CREATE, "POST /nodes/pve1/lxc/150/status/start"),
        rows={f"{TARGET}/lxc/150": "owned"},
    ),
    Scenario(
        "power-ha-live-status-refused",
        "power",
        "status: running on a stopped container a live HA resource manages (ha.state stopped), none declared",
        "refused before any power call (plan and apply share one decision): HA owns its power; names "
        "the HA state to declare",
        False,
        (
            "HA resource ct:120 (live, ha.state stopped) owns its power state",
            "HA/Config.pm vm_is_ha_managed",
            "declare proxmox:ha_resources:ct:120: {ha_state: started}",
            "set the resource to ignored",
        ),
        ha_stopped_120,
        dns(status="running"),
        name="dns",
        never=("/status/start", "/status/shutdown", "/cluster/ha/"),
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "power-ha-held-status-refused",
        "power",
        "status: running on a running container a live HA resource keeps started",
        "refused although both say the same: two owners of one power state; nothing sent",
        False,
        (
            "HA resource ct:120 (live, ha.state started) owns its power state",
            "even while both say the same",
            "declare proxmox:ha_resources:ct:120: {ha_state: started}",
        ),
        ha_started_120,
        dns(status="running"),
        name="dns",
        never=("/status/start", "/status/shutdown", "/cluster/ha/"),
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
    Scenario(
        "power-ha-ignored-starts",
        "power",
        "status: running on a stopped container whose HA resource is ignored",
        "PVE reads it managed: 0 and starts it itself: one start task, reported started",
        True,
        ("CT 120 on pve1 has been started",),
        ha_ignored_120,
        dns(status="running"),
        name="dns",
        writes=(START_120,),
        seed_rows=OWNED_120,
        rows={f"{TARGET}/lxc/120": "owned"},
    ),
]
SCENARIOS += POWER

#: ``backup: required`` (salt_proxmox.backup.coverage.guest_guard): refused before anything is read of
#: the guest, and never decided on PVE's not-backed-up list, which counts disabled jobs.
REQUIRED = {**WEB, "backup": "required"}
BACKUPS = [
    Scenario(
        "backup-required-uncovered",
        "backups",
        "backup: required and no backup job covers the container",
        "refused at plan and apply, naming the remedy; nothing read of the guest, nothing written",
        False,
        ("no enabled backup job covers CT 150", "Declare a job whose vmid, pool or all covers it", NOTHING),
        None,
        REQUIRED,
        never=("/lxc/150/pending",),
    ),
    Scenario(
        "backup-required-disabled-job",
        "backups",
        "backup: required and only a disabled job names the container",
        "a disabled job covers nothing (PVE's not-backed-up list would count it)",
        False,
        ("no enabled backup job covers CT 150", NOTHING),
        lambda run: run.pve.add_backup_job("old", schedule="daily", vmid="150", enabled=0),
        REQUIRED,
        never=("/lxc/150/pending",),
    ),
    Scenario(
        "backup-required-jobs-403",
        "backups",
        "backup: required and GET /cluster/backup answers 403 (the read token lacks Sys.Audit on /)",
        "coverage that cannot be read is no coverage: refused, naming the read and the privilege",
        False,
        ("whether a job covers CT 150 cannot be read", "HTTP 403", NOTHING),
        fail("GET", "/cluster/backup", status=403, message="Permission check failed (/, Sys.Audit)"),
        REQUIRED,
        never=("/lxc/150/pending",),
    ),
    Scenario(
        "backup-required-covered",
        "backups",
        "backup: required and an enabled job lists the container",
        "the guest plans as any other",
        None,
        ("CT 150 on pve1: would be created",),
        lambda run: run.pve.add_backup_job("nightly", schedule="02:00", vmid="150"),
        REQUIRED,
        test=True,
    ),
]
SCENARIOS += BACKUPS


# ------------------------------------------------------------------------------------------ firewall

#: VM 300's firewall (pve2): two rules this minion wrote, as PVE stores them after the ``.fw`` round trip.
FW_300 = "/nodes/pve2/qemu/300/firewall"
FW_SSH = {"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22", "enable": 1, "comment": "ssh"}
FW_WEB = {"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "443", "enable": 1, "comment": "web"}
FW_ROW = f"{TARGET}/firewall_rules/vm/300"
OWNED_FW_300 = {
    FW_ROW: {"phase": "owned", "instance": "seeded", "state_id": "vm/300",
             "declared": {"scope": "vm/300", "rules": [FW_SSH, FW_WEB]}}
}  # fmt: skip


def fw_rules_300(run: Run) -> None:
    """VM 300's firewall holds the two rules of ``OWNED_FW_300``, SSH first."""
    run.pve.firewall_config("vm", vmid=300)["rules"][:] = [dict(FW_SSH), dict(FW_WEB)]


def fw_edit_300(run: Run) -> None:
    """Somebody (the GUI) changes the comment of VM 300's first rule: the list's digest changes."""
    run.pve.firewall_config("vm", vmid=300)["rules"][0]["comment"] = "ssh, from the GUI"


def fw_insert_300(run: Run) -> None:
    """Somebody (the GUI) puts a rule on top of VM 300's list."""
    rule = {"type": "in", "action": "DROP", "source": "198.51.100.7", "enable": 1}
    run.pve.firewall_config("vm", vmid=300)["rules"].insert(0, rule)


FIREWALL = [
    Scenario(
        "firewall-rules-digest-changed-before-a-move",
        "firewall",
        "a rule list is reordered (one move) and somebody edits a rule between the apply's read and the PUT",
        "the PUT carries the digest of the read before it: PVE refuses it, nothing of theirs is overwritten",
        False,
        ("detected modified configuration", "plan again", NOTHING),
        both(fw_rules_300, lambda run: run.before("PUT", "/firewall/rules/0", fw_edit_300)),
        {"name": "vm/300", "rules": [FW_WEB, FW_SSH]},
        name="vm/300",
        state="firewall_rules",
        writes=(f"PUT {FW_300}/rules/0",),
        rows={FW_ROW: "owned"},
        seed_rows=OWNED_FW_300,
    ),
    Scenario(
        "firewall-rules-insert-meanwhile",
        "firewall",
        "a new list of two rules (two POSTs) and somebody adds a rule just before the first POST",
        "a POST takes no digest, so the read before the next write catches the change: stopped after one "
        "write, their rule left in place",
        False,
        (
            "the rule list changed since it was read",
            "stopped before write 2 of 2",
            "nothing of theirs was overwritten",
        ),
        lambda run: run.before("POST", "/firewall/rules", fw_insert_300),
        {"name": "vm/300", "rules": [FW_SSH, FW_WEB]},
        name="vm/300",
        state="firewall_rules",
        writes=(f"POST {FW_300}/rules",),
        rows={FW_ROW: "creating"},
    ),
    Scenario(
        "firewall-ipset-entry-answer-lost",
        "firewall",
        "a new IP set: the answer to its entry's POST is lost (a gateway's 504) after PVE stored the entry",
        "reported as uncertain, nothing more sent; the row stays creating, so the next plan finds the set "
        "as declared and records it as ours (tests/faults/test_bespoke.py)",
        False,
        (
            "POST cluster/firewall/ipset/admins: HTTP 504",
            "may or may not have acted",
            "nothing was retried",
            "Nothing more was written.",
        ),
        lose("POST", "/cluster/firewall/ipset/admins", "504"),
        {"name": "admins", "cidrs": ["192.0.2.0/24"]},
        name="admins",
        state="firewall_ipset",
        writes=("POST /cluster/firewall/ipset", "POST /cluster/firewall/ipset/admins"),
        rows={f"{TARGET}/firewall_ipset/admins": "creating"},
        uncertain=True,
    ),
    Scenario(
        "firewall-options-read-500",
        "firewall",
        "the read of a node's firewall options answers HTTP 500",
        "a failed read is never PVE's defaults: the state fails naming the read, nothing is written",
        False,
        ("GET nodes/pve1/firewall/options: HTTP 500", "Nothing was written."),
        fail("GET", "/nodes/pve1/firewall/options", status=500, message="unable to open file"),
        {"name": "node/pve1", "nf_conntrack_max": 1048576},
        name="node/pve1",
        state="firewall_options",
    ),
    Scenario(
        "firewall-options-read-html",
        "firewall",
        "the read of a node's firewall options answers an HTML page with 200 (a portal between)",
        "an answer without the options is never PVE's defaults: the state fails, nothing is written",
        False,
        ("malformed answer from PVE", "Nothing was written."),
        lose("GET", "/nodes/pve1/firewall/options", "html-200"),
        {"name": "node/pve1", "nf_conntrack_max": 1048576},
        name="node/pve1",
        state="firewall_options",
    ),
]
SCENARIOS += FIREWALL
SCENARIOS += PBS
SCENARIOS += LANE


def by_id(scenario_id: str) -> Scenario:
    """The scenario with this id."""
    return next(s for s in SCENARIOS if s.id == scenario_id)


# ------------------------------------------------------------------------------------------ the document


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """``docs/reliability.md``: the matrix as tables, one per group, from ``SCENARIOS``."""
    lines = [
        "# Reliability: the fault matrix",
        "",
        "<!-- Generated by `python -m tests.faults.matrix --markdown`; "
        "tests/faults/test_matrix.py fails when this file differs. -->",
        "",
        "Every row below is a test in `tests/faults/`: the real `proxmox_lxc`, `proxmox_qemu`,",
        "`proxmox_network.applied`, `proxmox_sdn.applied`, `proxmox_firewall` and `pbs_datastore` states",
        "(through the library, with a context",
        "built as the Salt module builds it, or through a real `salt-call`) against a freshly seeded fake",
        "cluster and a real",
        "OpenBao dev server, with the fault injected by fakepve's own switches (`fail()`, `lose_quorum()`,",
        "`set_node_offline()`, `hold_config_lock()`, `time_scale`, revoked tokens), by the suite's network",
        "fake (a reload task that fails, a task status that cannot be read, a node that drops out after a",
        "reload, a failing SDN commit task), by the staging PBS fake (a token's ACL entries or secret, a",
        "task still running, a datastore made meanwhile), by the root lane's fake `pvesh` and config files",
        "(a pvesh missing, not root or on another cluster, one that never exits or whose output is cut off,",
        "a config file edited, locked or not there) or by OpenBao (a sealed server, a token without",
        "a policy).",
        "",
        "Besides the outcome in its row, every scenario is held to the same promises:",
        "",
        "- **No forbidden write.** fakepve's request log shows exactly the writes in the row, in order:",
        "  never a create over a guest that existed, never a second create, never a write after a",
        "  refusal or after an uncertain task. A plan (`test=True`) writes nothing, not even grains.",
        "- **Grains and cluster agree.** No `owned` row for a guest the cluster does not have, no",
        "  `creating` row unless a create was really sent, no guest made without a row.",
        "- **No secret anywhere.** No token secret, OpenBao token, AppRole secret id or lease id in the",
        "  state return, the debug log (the minion log under `salt-call`), an exception text or grains.",
        "- **A comment an operator can act on.** It names the cause and the remedy, and says whether",
        "  anything was written; echoed input is shortened.",
        "",
        f"{len(SCENARIOS)} scenarios.",
    ]
    for group, title in GROUPS.items():
        rows = [s for s in SCENARIOS if s.group == group]
        lines += ["", f"## {title}", "", "| Scenario | Fault | Promise | Outcome |", "|---|---|---|---|"]
        for s in rows:
            lines.append(f"| `{s.id}` | {_cell(s.fault)} | {_cell(s.promise)} | {_cell(s.outcome())} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.faults.matrix --markdown``: print docs/reliability.md."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.faults.matrix", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--markdown", action="store_true", help="print the matrix as docs/reliability.md")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown())
        return 0
    for s in SCENARIOS:
        print(f"{s.group:12} {s.id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
