"""Two states declaring one object in one run, through a real ``salt-call --local state.apply``: Salt hands
every state module the whole run as ``__lowstate__``, so both declarations are refused, each naming the
other, in the plan and in the apply, before either writes (docs/design.md §8 "One object, one state")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.saltrun import FORMULA, salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional

CT = {
    "node": "pve1",
    "ostemplate": "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst",
    "unprivileged": True,
    "rootfs": "local-zfs:8",
    "memory": 512,
}

#: Pairs that declare one object: one vmid (vmids are cluster-wide: another node is no other guest), a
#: firewall alias in two cases (PVE keys aliases in lower case), one ACL entry with a trailing slash
#: (PVE normalizes the path), an OpenBao policy in two cases (OpenBao lower-cases policy names), and a
#: pool declared present and absent. ``pool-solo`` declares an object nobody else does.
SLS = {
    "ct-web": {"proxmox_lxc.present": [{"vmid": 150, "hostname": "web"}, *({k: v} for k, v in CT.items())]},
    "ct-web-again": {
        "proxmox_lxc.present": [
            {"vmid": 150, "hostname": "web2"},
            *({k: v} for k, v in {**CT, "node": "pve2"}.items()),
        ]
    },
    "alias-web": {"proxmox_firewall_alias.present": [{"name": "Web"}, {"cidr": "10.0.0.0/24"}]},
    "alias-web-lower": {"proxmox_firewall_alias.present": [{"name": "web"}, {"cidr": "10.0.0.1"}]},
    "acl-read": {"proxmox_acl.present": [{"path": "/vms"}, {"role": "PVEAuditor"}, {"user": "alice@pve"}]},
    "acl-read-slash": {
        "proxmox_acl.present": [
            {"path": "/vms/"},
            {"role": "PVEAuditor"},
            {"user": "alice@pve"},
            {"propagate": False},
        ]
    },
    "policy-ops": {
        "openbao_policy.present": [
            {"name": "Ops-Read"},
            {"fragments": ['path "kv/ops/*" {\n  capabilities = ["read"]\n}\n']},
        ]
    },
    "policy-ops-gone": {"openbao_policy.absent": [{"name": "ops-read"}]},
    "pool-lab": {"proxmox_pool.present": [{"name": "lab"}]},
    "pool-lab-gone": {"proxmox_pool.absent": [{"name": "lab"}, {"removal": "destroy"}]},
    "pool-solo": {"proxmox_pool.present": [{"name": "solo"}]},
}
PAIRS = [
    ("ct-web", "ct-web-again"),
    ("alias-web", "alias-web-lower"),
    ("acl-read", "acl-read-slash"),
    ("policy-ops", "policy-ops-gone"),
    ("pool-lab", "pool-lab-gone"),
]


def _roots(tmp_path: Path) -> Path:
    root = tmp_path / "sls"
    root.mkdir()
    (root / "twins.sls").write_text(yaml.safe_dump(SLS))
    return root


@pytest.mark.parametrize("test", [True, False], ids=["plan", "apply"])
def test_two_states_one_object_are_both_refused_before_either_writes(
    fresh_cluster, bao_creds, tmp_path, test
):
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        extra={"file_roots": {"base": [str(FORMULA), str(_roots(tmp_path))]}},
    )
    start = len(fresh_cluster.pve.requests)
    ret, raw = salt_call(config_dir, "state.apply", "twins", *(["test=True"] if test else []))
    rows = {row["id"]: row for row in state_rows(ret)}
    assert set(rows) == set(SLS), raw
    for first, second in PAIRS:
        for this, other in ((first, second), (second, first)):
            row = rows[this]
            assert row["result"] is False and row["changes"] == {}, (this, row)
            assert f"state {this} " in row["comment"] and f"state {other} " in row["comment"], row["comment"]
            assert "would be created" not in row["comment"] and "Nothing was written." in row["comment"]
    solo = rows["pool-solo"]
    assert solo["result"] is (None if test else True), solo
    writes = [(method, path) for method, path, _ in fresh_cluster.pve.requests[start:] if method != "GET"]
    if test:
        assert writes == [], "a plan never writes"
    else:
        assert writes == [("POST", "/api2/json/pools")], "only pool solo is created"
        assert fresh_cluster.pve.ct(150) is None, "neither declaration of CT 150 created it"
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert set(owned or {}) <= {"demo/pool/solo"}, "no row for a refused declaration"
