"""The ``proxmox_plan`` outputter on a real ``salt-call``: a known estate planned against the seeded
cluster reads as a diff — a NIC by the sub-key that changes, a description as a multi-line unified
diff, a refusal marked, and the summary line counting each family's creates, updates and refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def _static(cluster) -> dict:
    read_id, read_secret = cluster.seeded.read_token
    prov_id, prov_secret = cluster.seeded.provision_token
    return {
        "read": {"token_id": read_id, "secret": read_secret},
        "provision": {"token_id": prov_id, "secret": prov_secret},
    }


def _minion(cluster, tmp_path: Path, estate: dict) -> tuple[Path, Path]:
    """A masterless minion with static credentials whose pillar is ``proxmox: estate``: (its config
    dir, its estate file, to rewrite)."""
    pillar = tmp_path / "pillar"
    pillar.mkdir()
    (pillar / "top.sls").write_text("base:\n  '*':\n    - estate\n")
    path = pillar / "estate.sls"
    path.write_text(yaml.safe_dump({"proxmox": estate}))
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir, cluster.url, cluster.cafile, static=_static(cluster), pillar_roots=[str(pillar)]
    )
    return config_dir, path


def _summary(text: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith(("Plan:", "Apply:"))]
    return line


def test_an_apply_is_labelled_apply_when_nothing_changed_and_when_everything_failed(fresh_cluster, tmp_path):
    """Salt hands the outputter an apply's returns with ``test`` nowhere in them (``state.apply``
    takes it as an argument, salt/modules/state.py ``_get_test_value``): a no-change apply and an
    all-failed apply look like plans unless the outputter reads the command (``__opts__['arg']``)."""
    config_dir, estate = _minion(fresh_cluster, tmp_path, {"pools": {"prod": {"comment": "Production"}}})
    apply = ("state.apply", "proxmox")
    assert _summary(salt_call_text(config_dir, *apply, "test=True")).startswith("Plan: 1 to create")
    assert _summary(salt_call_text(config_dir, *apply)).startswith("Apply: 1 created")
    assert _summary(salt_call_text(config_dir, *apply)) == (
        "Apply: 0 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 1 no change."
    )
    assert _summary(salt_call_text(config_dir, *apply, "test=True")) == (
        "Plan: 0 to create, 0 to update, 0 to destroy, 0 pending restart, 0 refused, 1 no change."
    )
    estate.write_text(yaml.safe_dump({"proxmox": {"pools": {"bad name": {}}}}))
    assert _summary(salt_call_text(config_dir, *apply)) == (
        "Apply: 0 created, 0 updated, 0 destroyed, 0 pending restart, 1 failed, 0 no change."
    )
    assert _summary(salt_call_text(config_dir, *apply, "test=True")) == (
        "Plan: 0 to create, 0 to update, 0 to destroy, 0 pending restart, 1 refused, 0 no change."
    )


@pytest.mark.parametrize(("level", "times"), [("warning", 2), ("critical", 1)])
def test_a_refusal_prints_once_at_the_log_level_the_readme_gives(fresh_cluster, tmp_path, level, times):
    """Salt logs every failed state's comment at ERROR (salt/state.py ``format_log``), so at salt-call's
    default console level (warning) a refusal prints in the log and again in the output; the README's
    ``--log-level=critical`` leaves the output alone to say it."""
    config_dir, _ = _minion(fresh_cluster, tmp_path, {"pools": {"bad name": {}}})
    salt_call = Path(sys.executable).parent / "salt-call"
    proc = subprocess.run(
        [str(salt_call), "--local", "-c", str(config_dir), "--out=proxmox_plan", "--no-color",
         f"--log-level={level}", "state.apply", "proxmox", "test=True"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    said = proc.stdout + proc.stderr
    assert said.count("pool name 'bad name' contains invalid characters") == times, said
