"""A container and its own firewall (options, an IP set, a rule list) in one SLS, through a real
``salt-call --local state.apply``: Salt hands every state the run as ``__lowstate__``, so the plan places
the guest's firewall on the node the container's state declares and plans it from nothing; the apply
creates the container, then writes exactly what the plan listed; the next plan is clean
(docs/design.md §7, ``firewall.scope.locate``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.saltrun import FORMULA, salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional

VMID = 150
SCOPE = f"ct/{VMID}"
GUEST = {"proxmox_lxc": "ct-web"}
SLS = {
    "ct-web": {
        "proxmox_lxc.present": [
            {"vmid": VMID},
            {"node": "pve1"},
            {"hostname": "web"},
            {"ostemplate": "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst"},
            {"unprivileged": True},
            {"rootfs": "local-zfs:8"},
            {"memory": 512},
        ]
    },
    "fw-admins": {
        "proxmox_firewall.ipset": [
            {"name": "admins"},
            {"scope": SCOPE},
            {"cidrs": ["192.0.2.0/24"]},
            {"require": [GUEST]},
        ]
    },
    "fw-options": {"proxmox_firewall.options": [{"name": SCOPE}, {"enable": 1}, {"require": [GUEST]}]},
    "fw-rules": {
        "proxmox_firewall.rules": [
            {"name": SCOPE},
            {"rules": [{"type": "in", "action": "ACCEPT", "macro": "SSH", "source": "+admins", "enable": 1}]},
            {"require": [GUEST, {"proxmox_firewall": "fw-admins"}]},
        ]
    },
}


def _writes(cluster, start: int) -> list[tuple[str, str]]:
    return [(m, p.removeprefix("/api2/json")) for m, p, _ in cluster.pve.requests[start:] if m != "GET"]


def test_a_container_and_its_firewall_plan_apply_and_replan_clean(fresh_cluster, tmp_path: Path):
    roots = tmp_path / "sls"
    roots.mkdir()
    (roots / "guestfw.sls").write_text(yaml.safe_dump(SLS))
    seeded = fresh_cluster.seeded
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        static={
            "read": {"token_id": seeded.read_token[0], "secret": seeded.read_token[1]},
            "provision": {"token_id": seeded.provision_token[0], "secret": seeded.provision_token[1]},
        },
        extra={"file_roots": {"base": [str(FORMULA), str(roots)]}},
    )
    start = len(fresh_cluster.pve.requests)
    ret, raw = salt_call(config_dir, "state.apply", "guestfw", "test=True")
    plan = {row["id"]: row for row in state_rows(ret)}
    assert {row["result"] for row in plan.values()} == {None}, raw
    assert _writes(fresh_cluster, start) == []
    for state in ("fw-admins", "fw-options", "fw-rules"):
        assert f"CT {VMID} is created earlier in this run (on pve1)" in plan[state]["comment"], plan[state]

    start = len(fresh_cluster.pve.requests)
    ret, raw = salt_call(config_dir, "state.apply", "guestfw")
    done = {row["id"]: row for row in state_rows(ret)}
    assert {row["result"] for row in done.values()} == {True}, raw
    base = f"/nodes/pve1/lxc/{VMID}/firewall"
    assert _writes(fresh_cluster, start) == [
        ("POST", "/nodes/pve1/lxc"),
        ("POST", f"{base}/ipset"),
        ("POST", f"{base}/ipset/admins"),
        ("PUT", f"{base}/options"),
        ("POST", f"{base}/rules"),
    ]

    start = len(fresh_cluster.pve.requests)
    ret, raw = salt_call(config_dir, "state.apply", "guestfw", "test=True")
    again = state_rows(ret)
    assert {row["result"] for row in again} == {True} and all(not row["changes"] for row in again), raw
    assert _writes(fresh_cluster, start) == []
