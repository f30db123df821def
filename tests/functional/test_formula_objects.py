"""The formula's simple objects and OpenBao policies through ``salt-call --local``: the requisites the SLS
renders from ``pillar_examples``, and a pillar change (a renamed alias, a changed role, a retired pool)
planned and applied like an operator would, with the grains holding state ids and no policy text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.saltrun import PILLAR, salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional


def _pillar(tmp_path: Path, change=None) -> Path:
    """A copy of pillar_examples, edited by ``change(data)``."""
    root = tmp_path / "pillar"
    root.mkdir(exist_ok=True)
    shutil.copy(PILLAR / "top.sls", root / "top.sls")
    data = yaml.safe_load((PILLAR / "proxmox.sls").read_text())
    if change is not None:
        change(data)
    (root / "proxmox.sls").write_text(yaml.safe_dump(data))
    return root


def test_rendered_requisites(tmp_path):
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir, "https://127.0.0.1:9", "", openbao={"url": "http://127.0.0.1:9", "token": "unused"}
    )
    low, raw = salt_call(config_dir, "state.show_low_sls", "proxmox")
    assert isinstance(low, list), raw
    by_id = {chunk["__id__"]: chunk for chunk in low}
    pve = [{chunk["state"]: chunk["__id__"]} for chunk in low if chunk["state"].startswith("proxmox_")]
    assert len(pve) == 12, "three containers, three aliases, two pools, two roles, two ACL entries"
    required_by = by_id["openbao-policy-salt-proxmox-creds"]["require_in"]
    assert sorted(map(json.dumps, required_by)) == sorted(map(json.dumps, pve)), (
        "policies before every PVE state"
    )
    assert {"proxmox_role": "proxmox-role-SaltProxmoxRead"} in by_id["proxmox-acl-salt-read-on-root"][
        "require"
    ]
    assert {"proxmox_role": "proxmox-role-SaltProxmoxProvision"} in by_id[
        "proxmox-acl-salt-provision-on-root"
    ]["require"]
    fragments = by_id["openbao-policy-salt-proxmox-creds"]["fragments"]
    assert (
        fragments[0] == "salt://proxmox/files/openbao/proxmox-creds.hcl"
        and 'path "sys/policy/' in fragments[1]
    )


def test_pillar_changes_plan_and_apply(fresh_cluster, bao_creds, tmp_path):
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(_pillar(tmp_path))],
    )
    first, raw = salt_call(config_dir, "state.apply", "proxmox")
    assert all(row["result"] is True for row in state_rows(first)), raw

    def change(data):
        aliases = data["proxmox"]["firewall_aliases"]
        aliases["db_primary"] = dict(aliases.pop("db"), rename_from="db")
        data["proxmox"]["roles"]["SaltProxmoxRead"]["privs"].append("SDN.Audit")
        data["proxmox"]["pools"]["lab"] = {"ensure": "absent", "removal": "destroy"}

    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(_pillar(tmp_path, change))],
    )
    grains_before = (config_dir / "grains").read_text()
    start = len(fresh_cluster.pve.requests)
    plan, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    rows = {row["id"]: row for row in state_rows(plan)}
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:]), "a plan never writes"
    assert (config_dir / "grains").read_text() == grains_before, "a plan writes no grains"
    assert rows["proxmox-firewall-alias-db_primary"]["changes"]["renamed"] == {
        "old": "db",
        "new": "db_primary",
    }
    assert rows["proxmox-role-SaltProxmoxRead"]["changes"]["privs"]["new"].count("SDN.Audit") == 1
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
        ("DELETE", "/pools"),
        ("PUT", "/access/roles/SaltProxmoxRead"),
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
