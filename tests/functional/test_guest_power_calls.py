"""The power calls of the ``proxmox`` execution module through a real ``salt-call --local`` (the
loader finds them, Salt parses their arguments): ``proxmox.guests``, ``guest_status``,
``guest_shutdown`` and ``guest_start`` against a fake cluster, credentials from a real OpenBao."""

from __future__ import annotations

import pytest

from tests.support.saltrun import salt_call, write_minion_config

pytestmark = pytest.mark.functional


def test_guest_list_status_and_power_calls_obey_ownership(fresh_cluster, bao_creds, tmp_path):
    config_dir = tmp_path / "etc"
    write_minion_config(config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds)

    rows, _ = salt_call(config_dir, "proxmox.guests")
    by_vmid = {row["vmid"]: row for row in rows}
    assert by_vmid[120]["type"] == "lxc" and by_vmid[120]["node"] == "pve1"
    assert by_vmid[120]["status"] == "running"
    assert by_vmid[9000]["type"] == "qemu" and by_vmid[9000]["template"] is True

    status, _ = salt_call(config_dir, "proxmox.guest_status", "vmid=120")
    assert status == {"vmid": 120, "node": "pve1", "type": "lxc", "status": "running"}

    start = len(fresh_cluster.pve.requests)
    with pytest.raises(RuntimeError, match="is not recorded as ours") as refused:
        salt_call(config_dir, "proxmox.guest_shutdown", "vmid=120")
    assert "Or pass adopt=True to act on it without taking it over." in str(refused.value)
    assert all(method == "GET" for method, _, _ in fresh_cluster.pve.requests[start:])
    assert fresh_cluster.pve.ct(120).status == "running"

    down, _ = salt_call(config_dir, "proxmox.guest_shutdown", "vmid=120", "adopt=True", "timeout=30")
    assert down["changed"] is True and down["status"] == "stopped", down
    assert fresh_cluster.pve.ct(120).status == "stopped"
    up, _ = salt_call(config_dir, "proxmox.guest_start", "vmid=120", "adopt=True")
    assert up["status"] == "running" and fresh_cluster.pve.ct(120).status == "running"
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert "demo/lxc/120" not in (owned or {}), "adopt=True acts without taking the guest over"


@pytest.mark.parametrize(
    ("args", "argument", "given"),
    [
        # Salt's command line reads each value as YAML: '"false"' and n stay strings, which Python's
        # bool() takes for True; 1 is the integer 1, not a boolean.
        (("proxmox.guest_stop", "vmid=120", "adopt='false'"), "adopt", "'false'"),
        (("proxmox.guest_stop", "vmid=120", "adopt=n"), "adopt", "'n'"),
        (("proxmox.guest_shutdown", "vmid=120", "adopt=True", "force_stop=n"), "force_stop", "'n'"),
        (("proxmox.guest_start", "vmid=120", "adopt=1"), "adopt", "1"),
        (("proxmox.lxc_present", "web", "test='no'", "vmid=120", "node=pve1"), "test", "'no'"),
    ],
    ids=["adopt-quoted-false", "adopt-n", "force_stop-n", "adopt-1", "test-quoted-no"],
)
def test_a_boolean_argument_that_is_not_a_boolean_is_refused_before_any_request(
    fresh_cluster, bao_creds, tmp_path, args, argument, given
):
    """Every boolean argument of an execution function is a real boolean (true/false; YAML's
    yes/no/on/off read as one) or the call is refused naming the argument: a quoted 'false' or an
    ``n`` is a string Python's bool() takes for True, which stopped a guest that is not ours or sent
    forceStop=1."""
    config_dir = tmp_path / "etc"
    write_minion_config(config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds)
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(RuntimeError) as refused:
        salt_call(config_dir, *args)
    # force_stop is PVE's forceStop: it takes PVE's boolean spellings (parse_boolean), and n is none.
    rule = (
        "a boolean as PVE spells it (true/false, 1/0, yes/no, on/off)"
        if argument == "force_stop"
        else ("true or false (a boolean, unquoted)")
    )
    assert f"{argument}: expected {rule}, got {given}" in str(refused.value)
    assert fresh_cluster.pve.requests[start:] == [], "nothing is sent, not even a read"
    assert fresh_cluster.pve.ct(120).status == "running"
