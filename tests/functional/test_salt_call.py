"""``salt-call --local state.apply proxmox`` on the formula with ``pillar_examples``, for real: plan,
apply, plan again against a fake cluster with credentials minted from a real OpenBao dev server, the
target's root lane a fake ``pvesh`` on pve1 (``tests.support.lanes.node_lane``), so ``node.sls``'s
bind mount and snippet are declared too, as in the demo."""

from __future__ import annotations

import re
from urllib.parse import parse_qs

import pytest

from salt_proxmox.ownership.stores import ROWS_FILE
from tests.support.lanes import LOGIN, api_writes, node_lane
from tests.support.saltrun import (
    files_holding,
    pillar_secrets,
    salt_call,
    snippet_contents,
    state_rows,
    write_minion_config,
)
from tests.support.ways import STARTED, expected_power, power_requests

pytestmark = pytest.mark.functional


def test_plan_apply_plan_is_clean_and_leaks_no_secret(fresh_cluster, bao_creds, openbao, tmp_path):
    config_dir = tmp_path / "etc"
    lane = node_lane(fresh_cluster, tmp_path / "node")
    write_minion_config(
        config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds, root_lane=lane
    )
    seeded = fresh_cluster.seeded
    # The example's secrets (pillar_examples/secrets.sls: web's create password, app's cloud-init
    # password) are secrets like the tokens, and so is a snippet's content (node.sls: cloud-init user
    # data may hold passwords), which its state reads from pillar.
    secrets = [seeded.read_token[1], seeded.provision_token[1], bao_creds["token"], *pillar_secrets()]
    (user_data,) = snippet_contents()
    secrets.append(user_data)

    outputs = []
    runs = []
    for args in (["test=True"], [], ["test=True"]):
        start = len(fresh_cluster.pve.requests)
        ret, raw = salt_call(config_dir, "state.apply", "proxmox", *args)
        outputs.append(raw)
        runs.append((state_rows(ret), fresh_cluster.pve.requests[start:]))

    (plan, plan_log), (apply, apply_log), (replan, replan_log) = runs
    lxc = [row for row in plan if row["function"] == "proxmox_lxc.present"]
    assert {row["id"] for row in lxc} == {
        "proxmox-lxc-web",
        "proxmox-lxc-db",
        "proxmox-lxc-dns",
        "proxmox-lxc-web2",
        "proxmox-lxc-files",
    }
    qemu = [row for row in plan if row["function"] == "proxmox_qemu.present"]
    assert {row["id"] for row in qemu} == {"proxmox-qemu-app", "proxmox-qemu-ci", "proxmox-qemu-build"}
    every = plan + apply + replan
    assert all(row["result"] is not False for row in every), [row["comment"] for row in every]
    assert api_writes(plan_log + replan_log) == [], "a plan never writes"
    # The apply changed exactly what the plan showed, state by state and key by key.
    assert {r["id"]: sorted(r["changes"]) for r in plan} == {r["id"]: sorted(r["changes"]) for r in apply}
    assert all(row["result"] is True and not row["changes"] for row in replan)
    # status: running on web (CT 150) and app (VM 210): created stopped, so the plan reads no status and
    # says each would start; the apply starts each by its own start task, awaited; the second plan reads
    # GET …/status/current of each and writes nothing.
    for sid in STARTED:
        assert next(r for r in plan if r["id"] == sid)["changes"]["status"] == {"old": None, "new": "running"}
        assert next(r for r in apply if r["id"] == sid)["comment"].count("has been started") == 1
    assert power_requests(plan_log) == expected_power("plan")
    assert power_requests(apply_log) == expected_power("apply")
    assert power_requests(replan_log) == expected_power("replan")
    # After the apply, GET …/status/current (proxmox.guest_status) says both run; guests declaring no
    # status are left as created: stopped.
    for kind, node, vmid in STARTED.values():
        now, raw = salt_call(config_dir, "proxmox.guest_status", f"vmid={vmid}")
        assert now == {"vmid": vmid, "node": node, "type": kind, "status": "running"}, raw
    for vmid in (151, 211):
        now, raw = salt_call(config_dir, "proxmox.guest_status", f"vmid={vmid}")
        assert now["status"] == "stopped", raw
    assert fresh_cluster.pve.ct(150) is not None and fresh_cluster.pve.ct(151).node == "pve2"
    # The VM from scratch: its disk allocated, the ISO in its CD-ROM, its cloud-init drive, a MAC drawn
    # by PVE for net0, a cloud-init password set (PVE shows it only as set).
    app = fresh_cluster.pve.vm(210).config
    assert app["scsi0"].startswith("local-lvm:vm-210-disk-0,")
    assert app["ide2"].startswith("local:iso/debian-13.2.0-amd64-netinst.iso,media=cdrom")
    assert app["ide0"] == "local-lvm:vm-210-cloudinit,media=cdrom"
    assert re.match(r"virtio=(?:[0-9A-F]{2}:){5}[0-9A-F]{2},bridge=vmbr0$", app["net0"])
    # create_vm keeps its form as sent; the config write after it (update_vm_api) stored it hashed.
    assert app["cipassword"].startswith("$5$") and not any(s in app["cipassword"] for s in secrets)
    # The clone of template 9000: its own disk, grown from 3 to 10 GiB by the resize task, its own
    # cloud-init drive and MAC, the declared config written onto it in the same apply.
    ci = fresh_cluster.pve.vm(211).config
    assert ci["scsi0"].startswith("local-lvm:vm-211-disk-0,") and ci["scsi0"].endswith(",size=10G")
    assert ci["ide2"] == "local-lvm:vm-211-cloudinit,media=cdrom"
    assert (str(ci["memory"]), ci["cores"], ci["ipconfig0"]) == ("4096", 4, "ip=10.0.0.31/24,gw=10.0.0.1")
    assert ci["net0"] != fresh_cluster.pve.vm(9000).config["net0"]
    assert fresh_cluster.pve.resized == [(211, "scsi0", 10 * 1024**3)]
    # Through the root lane: files' bind mount written by root@pam (an API token may not: pve-container
    # LXC.pm check_ct_modify_config_perm), and the snippet ci's cicustom names, written on pve1 as declared.
    assert fresh_cluster.pve.ct(153).config["mp0"].startswith("/srv/share,mp=/srv/share")
    assert ("PUT", "/nodes/pve1/lxc/153/config", "root@pam") in fresh_cluster.pve.senders
    assert (tmp_path / "node" / "store" / "snippets" / "ci-user.yaml").read_text() == user_data
    assert ci["cicustom"] == "user=snippets:snippets/ci-user.yaml"
    # pool: web was created in pool prod, which the same run created first (the formula's requisite).
    assert 150 in fresh_cluster.pve.pools["prod"]
    web = next(row for row in plan if row["id"] == "proxmox-lxc-web")
    assert web["changes"]["pool"] == {"old": None, "new": "prod"}, web["changes"]
    # Each create secret went with its object's create and with no other request (fakepve logs it as
    # ***): web's password with POST …/lxc, app's cloud-init password with the config write after
    # POST …/qemu (create_vm would keep it in clear in /etc/pve; update_vm_api hashes it).

    def carried(key):
        # The fake pvesh's logins left out: a real pvesh sends none (tests.support.lanes.LOGIN).
        return [
            (method, path)
            for method, path, body in apply_log
            if key in parse_qs(bytes(body or b"").decode(errors="replace"), keep_blank_values=True)
            and (method, path) != LOGIN
        ]

    # ci@pve's password (pve realm) went with its user's create only (User.pm create_user).
    assert carried("password") == [
        ("POST", "/api2/json/access/users"),
        ("POST", "/api2/json/nodes/pve1/lxc"),
    ], carried("password")
    assert carried("cipassword") == [("POST", "/api2/json/nodes/pve1/qemu/210/config")], carried("cipassword")
    assert all("password" not in str(row["changes"]) for row in every)

    grains = (config_dir / ROWS_FILE).read_text()  # the rows the salt_proxmox:owned grain shows
    assert "proxmox/creds" not in grains
    for text in outputs:
        for secret in secrets:
            assert secret not in text
    # Every file under the minion's config and root directories (its cachedir with highstate.cache.p,
    # sls.p and proc/, its pki, the debug log, the grains and rows files): the pillar's secrets and the
    # PVE tokens are in none; the OpenBao token only in the minion config the operator wrote. Salt keeps
    # a highstate's state arguments in highstate.cache.p, so a secret passed as one would be there.
    held = files_holding(config_dir, secrets)
    assert {path: [secrets[i] == bao_creds["token"] for i in found] for path, found in held.items()} == {
        "minion": [True]
    }, {path: len(found) for path, found in held.items()}
    assert (config_dir / "root" / "cache" / "highstate.cache.p").is_file(), "the scan saw Salt's state cache"
    # The API token the estate declares (ci@pve!deploy): PVE showed its secret once, at create; it is in
    # OpenBao at its store, works, and is in no output and no file of the minion (Salt's cache included).
    token_secret = fresh_cluster.pve.apitokens["ci@pve!deploy"]
    stored = openbao.client().read("secret/data/pve-tokens/ci-deploy")["data"]["data"]
    assert stored == {"token_id": "ci@pve!deploy", "secret": token_secret}
    assert not any(token_secret in text for text in outputs)
    assert files_holding(config_dir, [token_secret]) == {}
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert {key: row["phase"] for key, row in owned.items() if "/lxc/" in key} == {
        "demo/lxc/120": "owned",
        "demo/lxc/150": "owned",
        "demo/lxc/151": "owned",
        "demo/lxc/152": "owned",
        "demo/lxc/153": "owned",
    }
    assert {key: row["phase"] for key, row in owned.items() if "/qemu/" in key} == {
        "demo/qemu/210": "owned",
        "demo/qemu/211": "owned",
        "demo/qemu/220": "owned",
    }
    app_row = owned["demo/qemu/210"]["declared"]
    assert "cipassword" not in app_row and app_row["cipassword_serial"] == 1, "recorded by its serial only"
    assert all("description" not in row["declared"] for row in owned.values())
