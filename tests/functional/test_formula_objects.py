"""The formula's simple objects and OpenBao policies through ``salt-call --local``: the requisites the SLS
renders from ``pillar_examples``, and a pillar change (a renamed alias, a changed role, a retired pool)
planned and applied like an operator would, with the grains holding state ids and no policy text."""

from __future__ import annotations

import json

import pytest

from salt_proxmox.ownership.stores import ROWS_FILE
from tests.support.saltrun import example_pillar, salt_call, snippet_contents, state_rows, write_minion_config

pytestmark = pytest.mark.functional


def test_rendered_requisites(tmp_path):
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir, "https://127.0.0.1:9", "", openbao={"url": "http://127.0.0.1:9", "token": "unused"}
    )
    low, raw = salt_call(config_dir, "state.show_low_sls", "proxmox")
    assert isinstance(low, list), raw
    by_id = {chunk["__id__"]: chunk for chunk in low}
    pve = [chunk for chunk in low if chunk["state"].startswith("proxmox_")]
    assert len(pve) == 56, (
        "the cluster's options, four containers, three VMs, three aliases, two pools, four roles, one "
        "group, one user, one token, six ACL entries, one Ceph pool, two storages, one download, one HA "
        "resource, one HA rule, one interface, two node applies, pve1's DNS, hosts, time and APT "
        "settings, one SDN controller, the pve IPAM, one SDN zone, one "
        "vnet, the SDN apply, one notification endpoint and one matcher, one PCI mapping, one ACME "
        "plugin, one backup job, one metric server, one replication job, the cluster's firewall "
        "options, one IP set, one security group, one firewall rule list and one snapshot (no PBS "
        "datastore nor pbs storage: no proxmox:pbs_targets is configured, so top.sls leaves pbs.sls out; "
        "nor node.sls's container and snippet: no target has a root_lane)"
    )
    policy = by_id["openbao-policy-salt-proxmox-creds"]
    # The policy runs first, yet is no requisite: a failed policy leaves the others to run.
    assert all(policy["order"] < chunk["order"] for chunk in pve), raw
    assert not any(key in chunk for chunk in low for key in ("require_in", "watch_in", "prereq"))
    required = {chunk["__id__"]: chunk["require"] for chunk in low if "require" in chunk}
    assert required == {
        # A user needs its groups, a token its user, an ACL entry its role, group or token and pool.
        "proxmox-user-ci@pve": [{"proxmox_group": "proxmox-group-automation"}],
        "proxmox-token-ci@pve!deploy": [{"proxmox_user": "proxmox-user-ci@pve"}],
        "proxmox-acl-automation-on-prod": [
            {"proxmox_role": "proxmox-role-CiDeploy"},
            {"proxmox_group": "proxmox-group-automation"},
            {"proxmox_pool": "proxmox-pool-prod"},
        ],
        "proxmox-acl-ci-deploy-on-prod": [
            {"proxmox_role": "proxmox-role-CiDeploy"},
            {"proxmox_token": "proxmox-token-ci@pve!deploy"},
            {"proxmox_pool": "proxmox-pool-prod"},
        ],
        "proxmox-acl-salt-read-on-root": [{"proxmox_role": "proxmox-role-SaltProxmoxRead"}],
        "proxmox-acl-salt-provision-on-root": [{"proxmox_role": "proxmox-role-SaltProxmoxProvision"}],
        "proxmox-acl-salt-read-on-backups": [{"proxmox_role": "proxmox-role-SaltProxmoxArchiveRead"}],
        "proxmox-acl-salt-read-on-web-backups": [{"proxmox_role": "proxmox-role-SaltProxmoxArchiveRead"}],
        # An HA resource needs its guest, an HA rule the resources it names (pve-ha-manager).
        "proxmox-ha-resource-ct:120": [{"proxmox_lxc": "proxmox-lxc-dns"}],
        "proxmox-ha-rule-dns-on-pve1": [{"proxmox_ha_resource": "proxmox-ha-resource-ct:120"}],
        "proxmox-network-apply-pve1": [{"proxmox_network": "proxmox-network-pve1-vmbr1"}],
        # An rbd storage requires the Ceph pool it names (pve-storage RBDPlugin: pool).
        "proxmox-storage-ceph-vm": [{"proxmox_ceph_pool": "proxmox-ceph-pool-vmdisks"}],
        # web names pool prod (pool:), which the pillar declares: PVE refuses a create into a pool
        # that does not exist.
        "proxmox-lxc-web": [{"proxmox_pool": "proxmox-pool-prod"}],
        # CT 120's rules name alias lab_net (PVE refuses a rule naming a missing alias: verify_rule)
        # and are the container's.
        "proxmox-firewall-rules-ct/120": [
            {"proxmox_firewall_alias": "proxmox-firewall-alias-lab_net"},
            {"proxmox_lxc": "proxmox-lxc-dns"},
        ],
        "proxmox-network-apply-pve2": [{"proxmox_network": "proxmox-network-apply-pve1"}],
        "proxmox-sdn-vnet-labnet": [{"proxmox_sdn": "proxmox-sdn-zone-lab"}],
        # A matcher needs the endpoints it targets (proxmox-notify api/mod.rs ensure_endpoints_exist).
        "proxmox-notification-matcher-backups-to-ops": [
            {"proxmox_notification": "proxmox-notification-endpoint-ops-mail"}
        ],
        "proxmox-sdn-apply": [
            {"proxmox_sdn": "proxmox-sdn-controller-evpnctl"},
            {"proxmox_sdn": "proxmox-sdn-zone-lab"},
            {"proxmox_sdn": "proxmox-sdn-vnet-labnet"},
            {"proxmox_network": "proxmox-network-apply-pve1"},
            {"proxmox_network": "proxmox-network-apply-pve2"},
        ],
        # The nightly job backs up what it lists, onto the storage it names; web's snapshot needs web.
        "proxmox-backup-job-nightly": [
            {"proxmox_storage": "proxmox-storage-backups"},
            {"proxmox_lxc": "proxmox-lxc-db"},
            {"proxmox_lxc": "proxmox-lxc-dns"},
            {"proxmox_lxc": "proxmox-lxc-web"},
            {"proxmox_lxc": "proxmox-lxc-web2"},
            {"proxmox_qemu": "proxmox-qemu-app"},
            {"proxmox_qemu": "proxmox-qemu-build"},
            {"proxmox_qemu": "proxmox-qemu-ci"},
        ],
        "proxmox-snapshot-web-first-boot": [{"proxmox_lxc": "proxmox-lxc-web"}],
    }
    fragments = policy["fragments"]
    assert (
        fragments[0] == "salt://proxmox/files/openbao/proxmox-creds.hcl"
        and 'path "sys/policy/' in fragments[1]
    )


def test_a_target_with_a_root_lane_adds_the_bind_mount_and_the_snippet_whose_content_is_no_argument(
    tmp_path,
):
    """top.sls includes node.sls where a target has a root_lane: container files (a bind mount point,
    root@pam's alone) and the snippet the cloned VM's cicustom names, which that VM's state requires. The
    lowstate Salt compiles (what it keeps in highstate.cache.p) holds the snippet's pillar path, never its
    content (cloud-init user data may hold secrets)."""
    config_dir = tmp_path / "etc"
    lane = {"via": "pvesh", "pvesh": str(tmp_path / "pvesh")}
    write_minion_config(
        config_dir,
        "https://127.0.0.1:9",
        "",
        openbao={"url": "http://127.0.0.1:9", "token": "unused"},
        root_lane=lane,
    )
    low, raw = salt_call(config_dir, "state.show_low_sls", "proxmox")
    assert isinstance(low, list), raw
    pve = [chunk for chunk in low if chunk["state"].startswith("proxmox_")]
    assert len(pve) == 59, (
        "the 56 states of the estate without a lane, container files, the snippet and the ACME account"
    )
    by_id = {chunk["__id__"]: chunk for chunk in low}
    assert by_id["proxmox-lxc-files"]["mp0"] == "/srv/share,mp=/srv/share"
    snippet = by_id["proxmox-snippet-snippets-ci-user.yaml"]
    assert (snippet["name"], snippet["storage"]) == ("ci-user.yaml", "snippets")
    assert snippet["secrets_pillar"] == ["proxmox", "snippets", "snippets", "ci-user.yaml"]
    assert "content" not in snippet
    (content,) = snippet_contents()
    assert content not in raw and "qemu-guest-agent" not in raw
    ci = by_id["proxmox-qemu-ci"]
    assert ci["cicustom"] == "user=snippets:snippets/ci-user.yaml"
    assert ci["require"] == [{"proxmox_snippet": "proxmox-snippet-snippets-ci-user.yaml"}]
    account = by_id["proxmox-acme-account-lab"]
    assert (account["fun"], account["contact"]) == ("account", ["pki@lab.example"])


INJECTED = "x\nproxmox-lxc-evil:\n  proxmox_lxc.absent:\n    - vmid: 120\n    - removal: destroy"


def test_pillar_keys_cannot_inject_states(fresh_cluster, bao_creds, tmp_path):
    """A pool key holding a newline and YAML is one failing state naming the key, and a pool key with a
    `#` one state the pool rule refuses: every other state still plans, nothing is written."""

    def change(data):
        data["proxmox"]["pools"][INJECTED] = {"comment": "c"}
        data["proxmox"]["pools"]["lab #prod"] = {"comment": "c"}

    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(example_pillar(tmp_path, change))],
    )
    start = len(fresh_cluster.pve.requests)
    plan, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    rows = {row["id"]: row for row in state_rows(plan)}
    assert len(rows) == 59, raw  # the example's 57 states and the two pool keys
    assert not any("evil" in row["id"] and row["function"].startswith("proxmox_lxc") for row in rows.values())
    failed = {key: row["comment"] for key, row in rows.items() if row["result"] is False}
    escaped = "proxmox-pool-" + INJECTED.replace("\n", "\\n")
    assert set(failed) == {escaped, "proxmox-pool-lab #prod"}, raw
    assert "pillar key proxmox:pools:x\\nproxmox-lxc-evil:" in failed[escaped]
    assert "lab #prod" in failed["proxmox-pool-lab #prod"]
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:])


def test_a_failing_policy_or_container_fails_alone(fresh_cluster, bao_creds, tmp_path):
    """The policy cannot be assembled (a fragment file that is not there) and container web declares a key
    no container has: both fail, and the other containers, the VMs, aliases, pools, roles and ACL entries
    still plan and apply."""

    def change(data):
        data["openbao"]["policies"]["salt-proxmox-creds"]["fragments"][0] = "salt://proxmox/files/missing.hcl"
        data["proxmox"]["lxc"]["web"]["no_such_key"] = 1

    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(example_pillar(tmp_path, change))],
    )
    broken = {"openbao-policy-salt-proxmox-creds", "proxmox-lxc-web"}
    # What really depends on web fails with it, and only that: the job that backs it up and its snapshot.
    needs_web = {"proxmox-backup-job-nightly", "proxmox-snapshot-web-first-boot"}
    for args, expect in ((["test=True"], None), ([], True)):
        ret, raw = salt_call(config_dir, "state.apply", "proxmox", *args)
        rows = {row["id"]: row for row in state_rows(ret)}
        assert len(rows) == 57, raw
        assert {key for key, row in rows.items() if row["result"] is False} == broken | needs_web, raw
        assert {key for key, row in rows.items() if "requisite" in str(row["comment"]).lower()} == needs_web
        assert rows["proxmox-lxc-db"]["result"] is expect and rows["proxmox-lxc-db"]["changes"], raw
        assert rows["proxmox-firewall-alias-lab_net"]["result"] is expect, raw
        assert rows["proxmox-qemu-app"]["result"] is expect and rows["proxmox-qemu-app"]["changes"], raw
    assert fresh_cluster.pve.ct(151) is not None and fresh_cluster.pve.ct(150) is None
    assert fresh_cluster.pve.vm(210) is not None and fresh_cluster.pve.vm(211) is not None
    # app's status: running is applied though web failed; app was started, ci (no status) was not.
    assert (fresh_cluster.pve.vm(210).status, fresh_cluster.pve.vm(211).status) == ("running", "stopped")


def test_pillar_changes_plan_and_apply(fresh_cluster, bao_creds, tmp_path):
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(example_pillar(tmp_path))],
    )
    first, raw = salt_call(config_dir, "state.apply", "proxmox")
    assert all(row["result"] is True for row in state_rows(first)), raw
    assert (fresh_cluster.pve.ct(150).status, fresh_cluster.pve.vm(210).status) == ("running", "running")

    def change(data):
        aliases = data["proxmox"]["firewall_aliases"]
        aliases["db_primary"] = dict(aliases.pop("db"), rename_from="db")
        data["proxmox"]["roles"]["SaltProxmoxRead"]["privs"].append("Sys.Syslog")
        data["proxmox"]["pools"]["lab"] = {"ensure": "absent", "removal": "destroy"}

    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(example_pillar(tmp_path, change))],
    )
    grains_before = (config_dir / ROWS_FILE).read_text()
    start = len(fresh_cluster.pve.requests)
    plan, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    rows = {row["id"]: row for row in state_rows(plan)}
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:]), "a plan never writes"
    assert (config_dir / ROWS_FILE).read_text() == grains_before, "a plan writes no ownership row"
    assert rows["proxmox-firewall-alias-db_primary"]["changes"]["renamed"] == {
        "old": "db",
        "new": "db_primary",
    }
    assert rows["proxmox-role-SaltProxmoxRead"]["changes"]["privs"]["new"].count("Sys.Syslog") == 1
    assert rows["proxmox-pool-lab"]["changes"] == {"deleted": {"old": "pool lab", "new": None}}
    pending = {key for key, row in rows.items() if row["result"] is None}
    assert pending == {
        "proxmox-firewall-alias-db_primary",
        "proxmox-role-SaltProxmoxRead",
        "proxmox-pool-lab",
    }, raw

    start = len(fresh_cluster.pve.requests)
    done, raw = salt_call(config_dir, "state.apply", "proxmox")
    applied = {row["id"]: row for row in state_rows(done)}
    assert all(row["result"] is True for row in applied.values()), raw
    assert {k: sorted(r["changes"]) for k, r in applied.items()} == {
        k: sorted(r["changes"]) for k, r in rows.items()
    }
    written = [
        (m, p.removeprefix("/api2/json")) for m, p, _ in fresh_cluster.pve.requests[start:] if m != "GET"
    ]
    assert written == [
        ("POST", "/cluster/firewall/aliases"),
        ("DELETE", "/cluster/firewall/aliases/db"),
        ("PUT", "/access/roles/SaltProxmoxRead"),
        # An absent pool runs after the guests, which may move its members out first.
        ("DELETE", "/pools"),
    ]
    assert set(fresh_cluster.pve.firewall_config("cluster")["aliases"]) == {"lab_net", "dns1", "db_primary"}

    again, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    assert all(row["result"] is True and not row["changes"] for row in state_rows(again)), raw

    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert owned["demo/firewall_alias/db_primary"]["state_id"] == "proxmox-firewall-alias-db_primary"
    assert "demo/firewall_alias/db" not in owned and "demo/pool/lab" not in owned
    policy_row = owned["openbao/policy/salt-proxmox-creds"]
    assert set(policy_row["declared"]) == {"name", "sha256", "fragments"}
    assert "capabilities" not in json.dumps(owned), "no policy text in grains"


def test_network_and_sdn_requisites(tmp_path):
    """Interfaces before their node's apply, node applies one after the other, zones → vnets →
    subnets → SDN apply after the node applies, and a container after the bridge or vnet its netN
    names and the apply that runs it."""

    def change(data):
        networks = data["proxmox"]["networks"]
        networks["pve2"] = {
            "apply": True,
            "interfaces": {"vmbr1": {"type": "bridge", "bridge_ports": "eno2"}},
        }
        data["proxmox"]["sdn"]["subnets"] = {"labnet-v4": {"cidr": "10.20.0.0/24", "vnet": "labnet"}}
        lxc = data["proxmox"]["lxc"]
        lxc["web"]["net1"] = "name=eth1,bridge=vmbr1,ip=dhcp"
        lxc["db"]["net1"] = "name=eth1,bridge=labnet,ip=dhcp"

    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        "https://127.0.0.1:9",
        "",
        openbao={"url": "http://127.0.0.1:9", "token": "unused"},
        pillar_roots=[str(example_pillar(tmp_path, change))],
    )
    low, raw = salt_call(config_dir, "state.show_low_sls", "proxmox")
    assert isinstance(low, list), raw
    need = {chunk["__id__"]: chunk.get("require", []) for chunk in low}
    assert need["proxmox-network-apply-pve1"] == [{"proxmox_network": "proxmox-network-pve1-vmbr1"}]
    assert need["proxmox-network-apply-pve2"] == [
        {"proxmox_network": "proxmox-network-pve2-vmbr1"},
        {"proxmox_network": "proxmox-network-apply-pve1"},
    ], "one node after the other"
    assert need["proxmox-sdn-vnet-labnet"] == [{"proxmox_sdn": "proxmox-sdn-zone-lab"}]
    assert need["proxmox-sdn-subnet-labnet-v4"] == [{"proxmox_sdn": "proxmox-sdn-vnet-labnet"}]
    assert {"proxmox_network": "proxmox-network-apply-pve2"} in need["proxmox-sdn-apply"]
    assert {"proxmox_sdn": "proxmox-sdn-subnet-labnet-v4"} in need["proxmox-sdn-apply"]
    assert need["proxmox-lxc-web"] == [
        {"proxmox_pool": "proxmox-pool-prod"},
        {"proxmox_network": "proxmox-network-pve1-vmbr1"},
        {"proxmox_network": "proxmox-network-apply-pve1"},
    ], "web (on pve1) waits for its pool and pve1's vmbr1, not pve2's"
    assert need["proxmox-lxc-db"] == [
        {"proxmox_sdn": "proxmox-sdn-vnet-labnet"},
        {"proxmox_sdn": "proxmox-sdn-apply"},
    ]
    assert need["proxmox-lxc-dns"] == []
