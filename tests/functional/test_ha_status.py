"""``salt-call --local state.apply proxmox`` for real: a guest declaring ``status:`` while an HA resource of
the same run manages it is refused at plan, naming the ``ha_state`` to declare (pve-ha-manager
``HA/Config.pm`` ``vm_is_ha_managed``: PVE hands an HA-managed guest's start and shutdown to the HA
manager); the run's HA resources reach the guest's state through the run's lowstate."""

from __future__ import annotations

import pytest

from tests.support.saltrun import edited_pillar, salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional


def test_status_on_a_guest_an_ha_resource_of_the_run_manages_is_refused(fresh_cluster, bao_creds, tmp_path):
    def change(data):
        # web (CT 150) declares status: running; make it an HA resource too.
        data["proxmox"]["ha_resources"]["ct:150"] = {"ha_state": "started"}

    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(edited_pillar(tmp_path, change))],
    )
    start = len(fresh_cluster.pve.requests)
    ret, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    rows = {row["id"]: row for row in state_rows(ret)}
    web = rows["proxmox-lxc-web"]
    assert web["result"] is False, raw
    assert "HA resource ct:150 (declared in this run, state started) owns its power state" in web["comment"]
    assert "declare proxmox:ha_resources:ct:150: {ha_state: started}" in web["comment"]
    # The other guests plan as before: dns, an HA resource too, declares no status.
    assert rows["proxmox-lxc-dns"]["result"] is not False and rows["proxmox-qemu-app"]["result"] is not False
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:]), "a plan never writes"
