"""The node lane through ``salt-call --local state.apply``: a container with a bind mount and a GPU
(``dev0`` plus two ``lxc.cgroup2.devices.allow`` lines) and a VM whose ``cicustom`` names a snippet the
same pillar declares, planned, applied and planned clean with ``root_lane: pvesh``, and the same pillar
refused at plan without a lane, naming the lane to configure; and a bind mount through the ticket lane,
root@pam's password and tickets in no file of the minion.

The lane is ``tests.support.lanes.node_lane``: a fake ``pvesh`` (``tests.support.pvesh``) forwarding to the
fake cluster as root@pam; the node's ``/etc/pve`` and ``/run/lock`` are temporary directories
(``tests.support.pmxcfs``) and storage ``snip`` a ``dir`` storage in another, all pointed at by the
target's configuration. The snippet's content is read from pillar by its state, and no file under the
minion's directories (Salt's cache among them) holds it."""

from __future__ import annotations

import yaml

from tests.support.cluster import TEMPLATE, ServedCluster
from tests.support.guests import TARGET
from tests.support.lanes import node_lane, ticket_lane
from tests.support.saltrun import files_holding, salt_call, state_rows, write_minion_config

USER_DATA = "#cloud-config\nhostname: app\npackages: [nginx]\n"
GPU = [["lxc.cgroup2.devices.allow", "c 226:0 rwm"], ["lxc.cgroup2.devices.allow", "c 226:128 rwm"]]
PILLAR = {
    "proxmox": {
        "snippets": {"snip": {"user.yaml": {"content": USER_DATA}}},
        "lxc": {
            "gpu": {
                "vmid": 160,
                "node": "pve1",
                "ostemplate": TEMPLATE,
                "unprivileged": True,
                "hostname": "gpu",
                "memory": 1024,
                "rootfs": "local-lvm:8",
                "mp0": "/srv/models,mp=/models,ro=1",
                "dev0": "/dev/dri/renderD128,gid=104,mode=0660",
                "lxc": GPU,
            }
        },
        "qemu": {
            "app": {
                "vmid": 260,
                "node": "pve1",
                "memory": 1024,
                "scsi0": "local-lvm:8",
                "ide0": "local-lvm:cloudinit",
                "net0": "virtio,bridge=vmbr0",
                "cicustom": "user=snip:snippets/user.yaml",
            }
        },
    }
}


def _config(cluster, tmp_path, lane):
    pillar = tmp_path / "pillar"
    pillar.mkdir(exist_ok=True)
    (pillar / "top.sls").write_text("base:\n  '*':\n    - lane\n")
    (pillar / "lane.sls").write_text(yaml.safe_dump(PILLAR))
    seeded = cluster.seeded
    static = {
        role: {"token_id": token[0], "secret": token[1]}
        for role, token in (("read", seeded.read_token), ("provision", seeded.provision_token))
    }
    config_dir = tmp_path / ("etc-lane" if lane else "etc")
    write_minion_config(
        config_dir, cluster.url, cluster.cafile, static=static, pillar_roots=[str(pillar)], root_lane=lane
    )
    return config_dir


def _failed(rows):
    return {row["id"]: row["comment"] for row in rows if row["result"] is False}


def test_root_only_keys_and_a_snippet_plan_apply_and_replan_clean_through_the_pvesh_lane(tmp_path):
    with ServedCluster(time_scale=0.0) as cluster:
        lane = node_lane(cluster, tmp_path / "node", storage="snip")

        # Without a lane: refused at plan, each naming the lane to configure; nothing written.
        plain = _config(cluster, tmp_path, None)
        start = len(cluster.pve.requests)
        rows = state_rows(salt_call(plain, "state.apply", "proxmox", "test=True")[0])
        failed = _failed(rows)
        assert set(failed) == {"proxmox-lxc-gpu", "proxmox-snippet-snip-user.yaml", "proxmox-qemu-app"}, rows
        for sid in ("proxmox-lxc-gpu", "proxmox-snippet-snip-user.yaml"):
            assert "proxmox:targets:demo:root_lane" in failed[sid], failed[sid]
        # The VM requires the snippet its cicustom names (the formula's requisite).
        assert "requisite failed" in failed["proxmox-qemu-app"]
        assert [r for r in cluster.pve.requests[start:] if r[0] != "GET"] == []

        laned = _config(cluster, tmp_path, lane)
        plan = state_rows(salt_call(laned, "state.apply", "proxmox", "test=True")[0])
        assert _failed(plan) == {}, plan
        planned = {row["id"]: row for row in plan}
        assert "via root lane (pvesh on pve1)" in planned["proxmox-lxc-gpu"]["comment"]
        assert planned["proxmox-snippet-snip-user.yaml"]["changes"]

        done = state_rows(salt_call(laned, "state.apply", "proxmox")[0])
        assert _failed(done) == {}, done
        ct = cluster.pve.ct(160)
        assert ct.config["lxc"] == GPU
        assert "/srv/models" in ct.config["mp0"] and "renderD128" in ct.config["dev0"]
        assert (tmp_path / "node" / "store" / "snippets" / "user.yaml").read_text() == USER_DATA
        assert cluster.pve.vm(260).config["cicustom"] == "user=snip:snippets/user.yaml"
        senders = {(m, p, who) for m, p, who in cluster.pve.senders if m == "PUT" and "/lxc/160/" in p}
        assert ("PUT", "/nodes/pve1/lxc/160/config", "root@pam") in senders

        again = state_rows(salt_call(laned, "state.apply", "proxmox", "test=True")[0])
        assert [
            (row["id"], row["changes"]) for row in again if row["changes"] or row["result"] is not True
        ] == []
        # The state read the content from pillar (secrets_pillar): Salt's cache (highstate.cache.p, sls.p,
        # proc/), the debug log and the rows file hold none of it, and no output shows it.
        assert files_holding(laned, [USER_DATA, "packages: [nginx]"]) == {}
        assert (laned / "root" / "cache" / "highstate.cache.p").is_file(), "the scan saw Salt's state cache"


#: A bind mount alone: what the ticket lane can write (raw lxc lines and snippets are files on a node).
TICKET_PILLAR = {
    "proxmox": {
        "lxc": {
            "share": {
                "vmid": 161,
                "node": "pve1",
                "ostemplate": TEMPLATE,
                "unprivileged": True,
                "hostname": "share",
                "memory": 512,
                "rootfs": "local-lvm:4",
                "mp0": "/srv/share,mp=/share",
            }
        }
    }
}


def test_a_bind_mount_goes_with_a_root_ticket_and_root_s_password_reaches_no_file_of_the_minion(
    fresh_cluster, bao_creds, openbao, tmp_path
):
    """``root_lane: {via: ticket}``: root@pam's password is read from OpenBao through the target's own
    credentials and exchanged for a ticket (pve-access-control AccessControl.pm create_ticket); the bind
    mount goes as root@pam, planned, applied and replanned clean through salt-call. Neither the password
    nor any ticket or CSRF token fakepve issued is in any file under the minion's directories: Salt's
    cache (highstate.cache.p, sls.p, proc/), the grains, the rows file and the debug log."""
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    pillar = tmp_path / "pillar"
    pillar.mkdir()
    (pillar / "top.sls").write_text("base:\n  '*':\n    - lane\n")
    (pillar / "lane.sls").write_text(yaml.safe_dump(TICKET_PILLAR))
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao={**bao_creds, "token": bao["auth"]["token"]},
        pillar_roots=[str(pillar)],
        root_lane=targets[TARGET]["root_lane"],
    )
    plan = state_rows(salt_call(config_dir, "state.apply", "proxmox", "test=True")[0])
    assert _failed(plan) == {}, plan
    (row,) = [r for r in plan if r["id"] == "proxmox-lxc-share"]
    assert "mp0 via root lane (ticket for root@pam)" in row["comment"], row["comment"]

    done = state_rows(salt_call(config_dir, "state.apply", "proxmox")[0])
    assert _failed(done) == {}, done
    assert "/srv/share" in fresh_cluster.pve.ct(161).config["mp0"]
    laned = [
        (m, p, who) for m, p, who in fresh_cluster.pve.senders if m == "PUT" and p.endswith("/lxc/161/config")
    ]
    assert laned and {who for _, _, who in laned} == {"root@pam"}

    again = state_rows(salt_call(config_dir, "state.apply", "proxmox", "test=True")[0])
    assert [(r["id"], r["changes"]) for r in again if r["changes"] or r["result"] is not True] == []
    issued = [
        value for ticket, session in fresh_cluster.pve.tickets.items() for value in (ticket, session["csrf"])
    ]
    assert issued, "the runs logged in"
    assert files_holding(config_dir, [fresh_cluster.pve.password, *issued]) == {}
    assert (config_dir / "root" / "cache" / "highstate.cache.p").is_file(), "the scan saw Salt's state cache"
