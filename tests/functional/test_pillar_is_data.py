"""A pillar entry is data, through a real ``salt-call --local``: Salt's own keywords, a value Salt would
run, a misspelt ``ensure``, ``removal`` or section, and ``adopt: true`` on an entry that destroys are each
one failing state naming the key, in the plan and the apply; nothing they declare runs or is written,
and every other entry plans and applies. A secret reaches a state as the pillar path of its entry, and
a hand-written state handed a secret itself is refused."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import yaml

from tests.support.saltrun import (
    FORMULA,
    PILLAR,
    files_holding,
    pillar_secrets,
    salt_call,
    state_rows,
    write_minion_config,
)

pytestmark = pytest.mark.functional


def _pillar(tmp_path: Path, change) -> Path:
    """A copy of pillar_examples, edited by ``change(data)``."""
    root = tmp_path / "pillar"
    root.mkdir()
    for name in ("top.sls", "secrets.sls"):
        shutil.copy(PILLAR / name, root / name)
    data = yaml.safe_load((PILLAR / "proxmox.sls").read_text())
    change(data)
    (root / "proxmox.sls").write_text(yaml.safe_dump(data))
    return root


def _runs(fresh_cluster, config_dir):
    """Plan then apply: ``[(rows by id, the requests PVE saw)]``."""
    runs = []
    for args in (["test=True"], []):
        start = len(fresh_cluster.pve.requests)
        ret, raw = salt_call(config_dir, "state.apply", "proxmox", *args)
        runs.append(({row["id"]: row for row in state_rows(ret)}, fresh_cluster.pve.requests[start:], raw))
    return runs


def test_salt_keywords_in_entries_run_nothing_and_fail_by_name(fresh_cluster, bao_creds, tmp_path):
    """Before, ``unless``/``onlyif`` ran a command even under test=True (``onlyif: "false"`` skipped a
    state and reported success), ``names:`` made one VM entry two, ``retry:`` re-sent a create, a
    ``__slot__:`` value ran a function (salt/state.py ``_run_check``, ``compile_high_data``, ``call``,
    ``format_slots``)."""
    ran = tmp_path / "ran"
    ran.mkdir()

    def touch(what):
        return f"touch {ran / what}"

    def change(data):
        pve = data["proxmox"]
        pve["lxc"]["web"]["unless"] = touch("unless")
        pve["lxc"]["db"]["onlyif"] = "false"
        pve["qemu"]["app"]["names"] = ["app", "evil"]
        pve["qemu"]["ci"]["retry"] = {"attempts": 2, "interval": 1}
        pve["firewall_aliases"]["dns1"]["comment"] = f"__slot__:salt:cmd.run('{touch('slot')}')"
        pve["pools"]["lab"]["check_cmd"] = touch("check_cmd")
        data["openbao"]["policies"]["salt-proxmox-creds"]["fragments"].append(
            f"__slot__:salt:cmd.run('{touch('fragment')}')"
        )

    config_dir = tmp_path / "etc"
    pillar = [str(_pillar(tmp_path, change))]
    write_minion_config(
        config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds, pillar_roots=pillar
    )
    named = {
        "proxmox-lxc-web": "unless is a Salt keyword",
        "proxmox-lxc-db": "onlyif is a Salt keyword",
        "proxmox-qemu-app": "names is a Salt keyword",
        "proxmox-qemu-ci": "retry is a Salt keyword",
        "proxmox-pool-lab": "check_cmd is a Salt keyword",
        "proxmox-firewall-alias-dns1": "the value of comment starts with __slot__:",
        "openbao-policy-salt-proxmox-creds": "the value of fragments:2 starts with __slot__:",
        # The job names the guests those entries would have made: no state of the run declares them now.
        "proxmox-backup-job-nightly": "guest 150, 151, 210, 211 does not exist and no state of this run",
    }
    for rows, _requests, raw in _runs(fresh_cluster, config_dir):
        # One state per entry of the example (web's snapshot goes with web's refused entry).
        assert len(rows) == 56 and "evil" not in raw, raw
        failed = {sid: row["comment"] for sid, row in rows.items() if row["result"] is False}
        assert set(failed) == set(named), raw
        for sid, words in named.items():
            assert words in failed[sid] and failed[sid].endswith("Nothing was written."), failed[sid]
        assert (
            rows["proxmox-pool-prod"]["result"] is not False
            and rows["proxmox-lxc-dns"]["result"] is not False
        )
        assert list(ran.iterdir()) == [], "no command ran"
    # The apply wrote the other entries and none of these.
    assert (fresh_cluster.pve.ct(150), fresh_cluster.pve.ct(151)) == (None, None)
    assert (fresh_cluster.pve.vm(210), fresh_cluster.pve.vm(211)) == (None, None)
    assert "lab" not in fresh_cluster.pve.pools and "prod" in fresh_cluster.pve.pools
    assert set(fresh_cluster.pve.firewall_config("cluster")["aliases"]) == {"lab_net", "db"}


def test_values_that_steer_a_state_and_sections_are_checked(fresh_cluster, bao_creds, tmp_path):
    """Before, ``ensure: Absent`` or ``absnet`` created the guest, a misspelt ``removal`` on a present
    entry and a misspelt section (``lxcs:``, ``policy:``) declared nothing without a word, and
    ``adopt: true`` on an absent entry was dropped."""

    def change(data):
        pve = data["proxmox"]
        pve["lxc"]["web"]["ensure"] = "Absent"
        pve["qemu"]["ci"]["ensure"] = "absnet"
        pve["pools"]["lab"]["removal"] = "destory"
        pve["lxc"]["dns"].update(ensure="absent", removal="destroy")  # CT 120, which it adopts
        pve["lxcs"] = {"extra": {"vmid": 160, "node": "pve1"}}
        data["openbao"]["policy"] = {"extra": {"fragments": ['path "x" {}']}}

    config_dir = tmp_path / "etc"
    pillar = [str(_pillar(tmp_path, change))]
    write_minion_config(
        config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds, pillar_roots=pillar
    )
    named = {
        "proxmox-lxc-web": 'ensure: expected present or absent, got "Absent"',
        "proxmox-qemu-ci": 'ensure: expected present or absent, got "absnet"',
        "proxmox-pool-lab": 'removal: expected retain or destroy, got "destory"',
        "proxmox-lxc-dns": "adopt: true with ensure: absent and removal: destroy",
        "proxmox-pillar": "pillar proxmox has unknown section(s) lxcs: the sections are acls, ",
        "openbao-pillar": "pillar openbao has unknown section(s) policy: the sections are policies",
        "proxmox-backup-job-nightly": "guest 150, 211 does not exist and no state of this run declares it",
        # dns is refused above, so its replication job replicates a guest that is not ours.
        "proxmox-replication-120-0": "CT 120 is not ours",
    }
    for rows, requests, raw in _runs(fresh_cluster, config_dir):
        failed = {sid: row["comment"] for sid, row in rows.items() if row["result"] is False}
        assert set(failed) == set(named), raw
        for sid, words in named.items():
            assert words in failed[sid], failed[sid]
        assert (
            rows["proxmox-qemu-app"]["result"] is not False and rows["proxmox-lxc-db"]["result"] is not False
        )
        # CT 120's firewall rule list is an entry of its own (proxmox:firewall:rules:ct/120): it plans and
        # applies as if the refused container entry were not there, and writes only the rule list.
        assert not any(
            ("/lxc/120" in path and "/lxc/120/firewall/rules" not in path) or path[-15:] == "/nodes/pve1/lxc"
            for _m, path, _b in requests
            if _m != "GET"
        )
    assert fresh_cluster.pve.ct(150) is None and fresh_cluster.pve.vm(211) is None
    assert fresh_cluster.pve.ct(120) is not None and fresh_cluster.pve.ct(160) is None
    assert "lab" not in fresh_cluster.pve.pools
    assert fresh_cluster.pve.ct(151) is not None and fresh_cluster.pve.vm(210) is not None


HANDWRITTEN = """
direct:
  proxmox_lxc.present:
    - vmid: 150
    - node: pve1
    - ostemplate: local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst
    - rootfs: local-zfs:8
    - password: hand-written-5ecret
by-reference:
  proxmox_qemu.present:
    - vmid: 212
    - node: pve1
    - clone: 9000
    - secrets_pillar: proxmox:qemu:app
"""


def test_a_state_reads_its_secret_from_pillar_and_refuses_one_passed_itself(
    fresh_cluster, bao_creds, tmp_path
):
    """A hand-written SLS: ``password:`` as an argument is refused naming ``secrets_pillar`` (Salt keeps
    a state's arguments in its cachedir), and ``secrets_pillar`` sends the pillar's ``cipassword`` with
    the VM's config, leaving it in no file under the minion's directories."""
    roots = tmp_path / "sls"
    roots.mkdir()
    (roots / "handwritten.sls").write_text(HANDWRITTEN)
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        extra={"file_roots": {"base": [str(FORMULA), str(roots)]}},
    )
    (cipassword,) = [secret for secret in pillar_secrets() if secret.startswith("lab-only")]
    start = len(fresh_cluster.pve.requests)
    for args in (["test=True"], []):
        ret, raw = salt_call(config_dir, "state.apply", "handwritten", *args)
        rows = {row["id"]: row for row in state_rows(ret)}
        assert rows["direct"]["result"] is False, raw
        assert "password: a secret is never a state argument" in rows["direct"]["comment"]
        assert "secrets_pillar" in rows["direct"]["comment"]
        assert rows["by-reference"]["result"] is not False, raw
        assert cipassword not in raw
    assert fresh_cluster.pve.ct(150) is None
    sent = [
        (method, path)
        for method, path, body in fresh_cluster.pve.requests[start:]
        if "cipassword" in parse_qs(bytes(body or b"").decode(errors="replace"))
    ]
    assert sent == [("POST", "/api2/json/nodes/pve1/qemu/212/config")], sent
    assert fresh_cluster.pve.vm(212).config.get("cipassword")
    assert files_holding(config_dir, [cipassword]) == {}
