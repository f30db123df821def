"""Removal and ownership through ``salt-call --local``, as an operator runs them on the example estate:
a pool emptied and deleted in one apply, a destroy plan naming the volumes it deletes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from salt_proxmox.ownership.stores import ROWS_FILE
from salt_proxmox.registry import FAMILIES
from tests.support.saltrun import (
    example_pillar,
    salt_call,
    salt_call_text,
    state_rows,
    write_minion_config,
)

pytestmark = pytest.mark.functional


def _configure(config_dir: Path, cluster, bao_creds, tmp_path: Path, change=None) -> None:
    write_minion_config(
        config_dir,
        cluster.url,
        cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(example_pillar(tmp_path, change))],
    )


def _applied(config_dir: Path) -> dict[str, dict]:
    ret, raw = salt_call(config_dir, "state.apply", "proxmox")
    rows = {row["id"]: row for row in state_rows(ret)}
    assert all(row["result"] is True for row in rows.values()), raw
    return rows


def test_a_pool_emptied_and_deleted_in_one_apply(fresh_cluster, bao_creds, tmp_path):
    """Container web leaves pool prod (``pool: ''``) and prod is declared absent with ``removal:
    destroy`` in the same pillar change: the plan deletes the pool (it knows web moves out first), and
    one apply does both. PVE deletes only an empty pool (pve-manager ``PVE/API2/Pool.pm``
    ``delete_pool``), so the pool's state runs after the guests'."""
    config_dir = tmp_path / "etc"
    _configure(config_dir, fresh_cluster, bao_creds, tmp_path)
    _applied(config_dir)
    assert fresh_cluster.pve.pools["prod"] == {150}, "web is in prod"

    def change(data):
        data["proxmox"]["lxc"]["web"]["pool"] = ""
        data["proxmox"]["pools"]["prod"] = {"ensure": "absent", "removal": "destroy"}

    _configure(config_dir, fresh_cluster, bao_creds, tmp_path, change)
    plan, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    rows = {row["id"]: row for row in state_rows(plan)}
    assert rows["proxmox-pool-prod"]["result"] is None, raw
    assert rows["proxmox-pool-prod"]["changes"] == {"deleted": {"old": "pool prod", "new": None}}
    assert rows["proxmox-lxc-web"]["changes"]["pool"] == {"old": "prod", "new": None}
    order = list(rows)
    assert order.index("proxmox-lxc-web") < order.index("proxmox-pool-prod"), "members move out first"

    done = _applied(config_dir)
    assert done["proxmox-pool-prod"]["changes"] == {"deleted": {"old": "pool prod", "new": None}}
    assert "prod" not in fresh_cluster.pve.pools
    again, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    assert all(row["result"] is True and not row["changes"] for row in state_rows(again)), raw


def test_owned_lists_an_orphan_the_plan_notes_it_once_and_forget_drops_its_row(
    fresh_cluster, bao_creds, tmp_path
):
    """After the example estate is applied, container db is dropped from the pillar: it stays owned,
    ``proxmox.owned`` lists it ``declared: false`` (data with ``--out=json``, a table by default), the
    plan notes it once (one line, no write), ``check=True`` finds it still carrying its fingerprint,
    and ``proxmox.forget`` drops its row (and refuses a row that does not exist) without touching PVE."""
    config_dir = tmp_path / "etc"
    _configure(config_dir, fresh_cluster, bao_creds, tmp_path)
    _applied(config_dir)

    def change(data):
        del data["proxmox"]["lxc"]["db"]

    _configure(config_dir, fresh_cluster, bao_creds, tmp_path, change)
    listed, raw = salt_call(config_dir, "proxmox.owned")
    by_row = {entry["row"]: entry for entry in listed}
    assert by_row["demo/lxc/151"] == {
        "family": "lxc",
        "target": "demo",
        "id": "151",
        "state_id": "db",  # a guest row records its state's name (the pillar key)
        "phase": "owned",
        "declared": False,
        "row": "demo/lxc/151",
    }, raw
    assert by_row["demo/lxc/150"]["declared"] is True and by_row["demo/pool/prod"]["declared"] is True
    assert by_row["openbao/policy/salt-proxmox-creds"]["declared"] is True
    assert [entry["row"] for entry in listed if entry["declared"] is False] == ["demo/lxc/151"], raw

    checked, raw = salt_call(config_dir, "proxmox.owned", "check=True")
    checked = {entry["row"]: entry for entry in checked}
    assert checked["demo/lxc/151"]["live"] == "present" and checked["demo/lxc/151"]["fingerprint"] is True, (
        raw
    )
    assert checked["demo/pool/prod"]["fingerprint"] is True, raw

    table = salt_call_text(config_dir, "proxmox.owned", out="proxmox_owned")
    line = next(line for line in table.splitlines() if line.startswith("lxc") and " 151 " in line)
    assert line.split() == ["lxc", "demo", "151", "db", "owned", "NO"], table
    assert table.splitlines()[-1].startswith(f"{len(listed)} owned, 1 no longer declared"), table

    start = len(fresh_cluster.pve.requests)
    plan, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:]), "a plan never writes"
    noted = [note for ret in plan.values() for note in ret.get("notes") or () if "no longer declared" in note]
    assert len(noted) == 1 and "lxc 151 on demo" in noted[0], raw
    text = salt_call_text(config_dir, "state.apply", "proxmox", "test=True")
    assert text.count("no longer declared: lxc 151") == 1, text

    with pytest.raises(RuntimeError) as refused:
        salt_call(config_dir, "proxmox.forget", "demo/lxc/999")
    assert "no ownership row demo/lxc/999" in str(refused.value) and "demo/lxc/151" in str(refused.value)
    start = len(fresh_cluster.pve.requests)
    forgot, raw = salt_call(config_dir, "proxmox.forget", "demo/lxc/151")
    assert forgot["forgotten"] == "demo/lxc/151" and forgot["state_id"] == "db", raw
    assert len(fresh_cluster.pve.requests) == start, "forget never touches PVE"
    after, raw = salt_call(config_dir, "proxmox.owned")
    assert "demo/lxc/151" not in {entry["row"] for entry in after} and fresh_cluster.pve.ct(151) is not None


def test_export_of_a_foreign_cluster_applied_as_it_is_plans_only_ownership(
    fresh_cluster, bao_creds, tmp_path
):
    """The example estate is built, then its ownership rows are removed: a cluster full of objects this
    minion did not create (aliases, pools, roles, ACL entries, storage, bridges, SDN, containers, VMs,
    OpenBao policies, besides what the cluster came with). ``proxmox.export path=<file>`` writes them as
    pillar; that pillar, applied as it is, plans nothing but the ownership rows it records, and once
    applied plans clean."""
    config_dir = tmp_path / "etc"

    def with_ceph(data):  # every family: the example estate has no Ceph pool
        data["proxmox"]["ceph_pools"] = {"vmstore": {"node": "pve1", "size": 3, "pg_num": 32}}

    _configure(config_dir, fresh_cluster, bao_creds, tmp_path, with_ceph)
    _applied(config_dir)
    (config_dir / ROWS_FILE).unlink()

    exported = tmp_path / "exported" / "proxmox.sls"
    exported.parent.mkdir()
    pillar, raw = salt_call(config_dir, "proxmox.export", f"path={exported}")
    assert exported.stat().st_mode & 0o777 == 0o600
    text = exported.read_text()
    assert yaml.safe_load(text) == pillar, "the file holds the pillar the call returned"
    assert "# NOTE: VM 210 on pve1: cipassword is set but not exported (a secret)" in text, text
    assert "openbao" in pillar, text
    sections = {**pillar["proxmox"], **{f"openbao:{k}": v for k, v in pillar["openbao"].items()}}
    assert {"lxc", "qemu", "firewall_aliases", "pools", "roles", "acls", "storage", "ceph_pools", "networks",
            "sdn", "openbao:policies"} <= set(sections), sorted(sections)  # fmt: skip
    # Every family's section, but those this cluster cannot hold or that are exported elsewhere, each for
    # its reason.
    elsewhere = {
        "tokens": "a token's secret cannot be read back (ObjectSpec.not_exported)",
        "{lxc,qemu}": "a guest's snapshots are exported under its entry (snapshots:)",
        "realms": "the example declares no realm, and pam and pve are PVE's own",
        "ha_groups": "PVE 9 has no HA groups (pve-ha-manager migrated them to rules)",
        "pbs": "no proxmox:pbs_targets is configured here",
        "snippets": "a snippet is a file on a node, which no export reads (it may hold secrets)",
        "certificates": "a custom certificate's key cannot be read back (ObjectSpec.not_exported)",
        "content": "PVE keeps no URL or checksum of a stored file (content/adhoc.py NOT_EXPORTED)",
    }
    families = {family.section.split(":")[1] for family in FAMILIES} - set(elsewhere)
    assert families <= {key.split(":")[-1] for key in sections}, sorted(sections)
    assert any(entry.get("snapshots") for entry in pillar["proxmox"]["lxc"].values()), text
    assert (
        pillar["proxmox"]["lxc"]["dns1"]["vmid"] == 120 and pillar["proxmox"]["lxc"]["dns1"]["adopt"] is True
    )
    assert "password" not in json.dumps(pillar["proxmox"]["lxc"]) and "cipassword" not in json.dumps(pillar)

    (exported.parent / "top.sls").write_text("base:\n  '*':\n    - proxmox\n")
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(exported.parent)],
    )
    start = len(fresh_cluster.pve.requests)
    plan, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    rows = state_rows(plan)
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:]), "a plan never writes"
    assert all(row["result"] in (None, True) for row in rows), raw
    assert all(set(row["changes"]) <= {"ownership"} for row in rows), raw
    assert sum(1 for row in rows if row["changes"]) >= 15, raw

    start = len(fresh_cluster.pve.requests)
    _applied(config_dir)
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:]), (
        "adopting writes no PVE"
    )
    again, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    assert all(row["result"] is True and not row["changes"] for row in state_rows(again)), raw
