"""``proxmox:nodes:all`` through ``salt-call --local state.apply proxmox``: the formula reads the fake
cluster's nodes at render (``proxmox.cluster_resources type=node``, the read credential) and plans one
state per node, a node declared by name keeping its own kind; with a read credential PVE refuses, the
render is one failing state naming why, and none of all's kinds is planned for any node."""

from __future__ import annotations

import pytest
import yaml

from tests.support.cluster import ServedCluster
from tests.support.saltrun import salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional

PILLAR = {
    "proxmox": {
        "nodes": {
            "all": {"time": {"timezone": "Europe/Vienna", "adopt": True}},
            "pve2": {"time": {"timezone": "Europe/Berlin", "adopt": True}},
        }
    }
}


def _config(cluster, tmp_path, read_secret=None):
    pillar = tmp_path / "pillar"
    pillar.mkdir(exist_ok=True)
    (pillar / "top.sls").write_text("base:\n  '*':\n    - nodes\n")
    (pillar / "nodes.sls").write_text(yaml.safe_dump(PILLAR))
    read_id, secret = cluster.seeded.read_token
    provision_id, provision = cluster.seeded.provision_token
    static = {
        "read": {"token_id": read_id, "secret": read_secret or secret},
        "provision": {"token_id": provision_id, "secret": provision},
    }
    config_dir = tmp_path / ("etc-bad" if read_secret else "etc")
    write_minion_config(config_dir, cluster.url, cluster.cafile, static=static, pillar_roots=[str(pillar)])
    return config_dir


def test_all_plans_each_node_of_the_cluster_and_a_refused_read_is_one_failing_state(tmp_path):
    with ServedCluster(time_scale=0.0) as cluster:
        start = len(cluster.pve.requests)
        plan = state_rows(salt_call(_config(cluster, tmp_path), "state.apply", "proxmox", "test=True")[0])
        assert [(row["id"], row["function"]) for row in plan] == [
            ("proxmox-node-pve1-time", "proxmox_node.time"),
            ("proxmox-node-pve2-time", "proxmox_node.time"),
        ], plan
        assert all(row["result"] is None for row in plan), [row["comment"] for row in plan]
        changes = {row["id"]: row["changes"] for row in plan}
        assert "Europe/Vienna" in repr(changes["proxmox-node-pve1-time"]), changes
        assert "Europe/Berlin" in repr(changes["proxmox-node-pve2-time"]), changes
        assert [r for r in cluster.pve.requests[start:] if r[0] != "GET"] == [], "a plan never writes"

        bad = _config(cluster, tmp_path, read_secret="00000000-0000-0000-0000-000000000000")
        rows = state_rows(salt_call(bad, "state.apply", "proxmox", "test=True")[0])
        # One failing state for all, none of its kinds for any node; pve2's own kind is still its state
        # (it needs no node list), refused at plan by the same credential.
        assert [row["id"] for row in rows] == ["proxmox-node-all", "proxmox-node-pve2-time"], rows
        assert all(row["result"] is False for row in rows), rows
        assert "the nodes of the default target could not be read" in rows[0]["comment"], rows[0]
