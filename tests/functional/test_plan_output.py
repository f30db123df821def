"""The ``proxmox_plan`` outputter on a real ``salt-call``: a known estate planned against the seeded
cluster reads as a diff — a NIC by the sub-key that changes, a description as a multi-line unified
diff, a refusal marked, and the summary line counting each family's creates, updates and refusals."""

from __future__ import annotations

import pytest
import yaml

from tests.support.saltrun import salt_call_text, write_minion_config

pytestmark = pytest.mark.functional

TEMPLATE = "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst"
ESTATE = {
    "proxmox": {
        "lxc": {
            "dns": {
                "vmid": 120,
                "node": "pve1",
                "adopt": True,
                "hostname": "dns1",
                "net0": "name=eth0,bridge=vmbr0,ip=10.0.0.53/24,gw=10.0.0.1,tag=43",
                "description": "Resolver for the lab\nForwards to 10.0.0.1",
            },
            "web": {
                "vmid": 150,
                "node": "pve1",
                "ostemplate": TEMPLATE,
                "unprivileged": True,
                "rootfs": "local-zfs:8",
                "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
            },
        },
        "pools": {"prod": {"comment": "Production guests"}, "bad name": {}},
        "firewall_aliases": {"lab_net": {"cidr": "10.0.0.0/24"}},
    }
}


def test_plan_reads_like_a_diff(fresh_cluster, bao_creds, tmp_path):
    # The live NIC carries VLAN tag 42 in PVE's own key order (hwaddr before ip, type last).
    ct = fresh_cluster.pve.ct(120)
    ct.config["net0"] = (
        "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:5E:12:0A,ip=10.0.0.53/24,gw=10.0.0.1,tag=42,type=veth"
    )
    pillar = tmp_path / "pillar"
    pillar.mkdir()
    (pillar / "top.sls").write_text("base:\n  '*':\n    - estate\n")
    (pillar / "estate.sls").write_text(yaml.safe_dump(ESTATE))
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds, pillar_roots=[str(pillar)]
    )
    text = salt_call_text(config_dir, "state.apply", "proxmox", "test=True")
    lines = text.splitlines()
    at = lines.index("~ proxmox-lxc-dns (proxmox_lxc.present)")
    block = lines[at + 1 : at + 12]
    # Only the sub-key that changes, not two whole NIC strings.
    assert "    net0: tag 42 → 43" in block, text
    # The description as a unified diff, one line per line (PVE hands it back with "\n" appended).
    diff = block[block.index("    description:") + 1 :][:5]
    assert diff == [
        "      --- description (PVE)",
        "      +++ description (declared)",
        "      @@ -1 +1,2 @@",
        "       Resolver for the lab",
        "      +Forwards to 10.0.0.1",
    ], text
    assert "    ownership: (none) → owned" in block
    at = lines.index("+ proxmox-lxc-web (proxmox_lxc.present)")
    assert lines[at + 1 : at + 3] == ["    created: CT 150 on pve1", f"    ostemplate: {TEMPLATE}"], text
    assert "! proxmox-pool-bad name (proxmox_pool.present)" in lines
    assert lines[-6:] == [
        "Plan: 3 to create, 1 to update, 0 to destroy, 0 pending restart, 1 refused, 0 no change.",
        "  firewall_alias: 1 to create, 0 to update, 0 to destroy, 0 pending restart, 0 refused, 0 no change",
        "  lxc: 1 to create, 1 to update, 0 to destroy, 0 pending restart, 0 refused, 0 no change",
        "  pool: 1 to create, 0 to update, 0 to destroy, 0 pending restart, 1 refused, 0 no change",
        # The run's backup coverage, once, whichever state carried it: no job covers the two containers.
        "Notes:",
        "  * backup coverage: no enabled backup job covers CT 120, CT 150",
    ], text
    assert text.count("backup coverage:") == 1, text
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests), "a plan never writes"
