"""``salt-call --local state.apply proxmox`` on the formula with ``pillar_examples``, for real: plan,
apply, plan again against a fake cluster with credentials minted from a real OpenBao dev server."""

from __future__ import annotations

import pytest
import yaml

from salt_proxmox.ownership import ROWS_FILE
from tests.support.saltrun import PILLAR, salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional


def test_plan_apply_plan_is_clean_and_leaks_no_secret(fresh_cluster, bao_creds, tmp_path):
    config_dir = tmp_path / "etc"
    write_minion_config(config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds)
    seeded = fresh_cluster.seeded
    # The example's create secret (pillar_examples/secrets.sls) is a secret like the tokens.
    password = yaml.safe_load((PILLAR / "secrets.sls").read_text())["proxmox"]["lxc"]["web"]["password"]
    secrets = [seeded.read_token[1], seeded.provision_token[1], bao_creds["token"], password]

    outputs = []
    runs = []
    for args in (["test=True"], [], ["test=True"]):
        start = len(fresh_cluster.pve.requests)
        ret, raw = salt_call(config_dir, "state.apply", "proxmox", *args)
        outputs.append(raw)
        runs.append((state_rows(ret), fresh_cluster.pve.requests[start:]))

    (plan, plan_log), (apply, _), (replan, replan_log) = runs
    lxc = [row for row in plan if row["function"] == "proxmox_lxc.present"]
    assert {row["id"] for row in lxc} == {"proxmox-lxc-web", "proxmox-lxc-db", "proxmox-lxc-dns"}
    every = plan + apply + replan
    assert all(row["result"] is not False for row in every), [row["comment"] for row in every]
    assert all(method == "GET" for method, _, _ in plan_log + replan_log), "a plan never writes"
    # The apply changed exactly what the plan showed, state by state and key by key.
    assert {r["id"]: sorted(r["changes"]) for r in plan} == {r["id"]: sorted(r["changes"]) for r in apply}
    assert all(row["result"] is True and not row["changes"] for row in replan)
    assert fresh_cluster.pve.ct(150) is not None and fresh_cluster.pve.ct(151).node == "pve2"
    # pool: web was created in pool prod, which the same run created first (the formula's requisite).
    assert 150 in fresh_cluster.pve.pools["prod"]
    web = next(row for row in plan if row["id"] == "proxmox-lxc-web")
    assert web["changes"]["pool"] == {"old": None, "new": "prod"}, web["changes"]
    # The create secret went with web's create and with no other request (fakepve logs it as ***).
    _, apply_log = runs[1]
    carried = [(method, path) for method, path, body in apply_log if b"password" in bytes(body or b"")]
    assert carried == [("POST", "/api2/json/nodes/pve1/lxc")], carried
    assert all("password" not in str(row["changes"]) for row in every)

    grains = (config_dir / ROWS_FILE).read_text()  # the rows the salt_proxmox:owned grain shows
    assert "proxmox/creds" not in grains
    for text in [*outputs, grains, (config_dir / "root" / "minion.log").read_text()]:
        for secret in secrets:
            assert secret not in text
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert {key: row["phase"] for key, row in owned.items() if "/lxc/" in key} == {
        "demo/lxc/120": "owned",
        "demo/lxc/150": "owned",
        "demo/lxc/151": "owned",
    }
    assert all("description" not in row["declared"] for row in owned.values())
