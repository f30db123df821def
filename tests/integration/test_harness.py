"""The harness itself: the seeded cluster answers as the library expects, OpenBao serves its tokens, and the
two ``python -m`` entry points the sandbox uses start, report ready and stop without leaving a process.

Every request passes ``verify=cafile`` per call: a Session's ``verify`` loses to REQUESTS_CA_BUNDLE when
that is set in the environment (requests merges the environment into each request).

No assertion compares a secret with ``==``: on failure pytest prints both sides. Secrets are compared into
a boolean first, and the failure message names the token id.
"""

from __future__ import annotations

import hmac
import json
import re
import stat
import time
from pathlib import Path
from typing import Any

import hvac
import pytest
import requests

from salt_proxmox.openbao.creds import CredentialBroker, CredentialError
from salt_proxmox.pve.client import Target
from tests.support.cluster import PROVISION_TOKEN_ID, READ_TOKEN_ID, TEMPLATE, ServedCluster
from tests.support.openbao import CREDS_PATH, DevOpenBao, make_approle, publish_creds
from tests.support.processes import start_entry_point, stop_entry_point

REPO = Path(__file__).resolve().parents[2]
API = "/api2/json"

# GET /nodes/pve1/lxc/120/config of the seeded cluster, less its digest: the spelling the example pillar
# adopts.
DNS1 = {
    "hostname": "dns1",
    "memory": 512,
    "swap": 512,
    "cores": 1,
    "rootfs": "local-zfs:subvol-120-disk-0,size=4G",
    "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:5E:12:0A,ip=10.0.0.53/24,gw=10.0.0.1,type=veth",
    "features": "nesting=1",
    "tags": "dns;infra",
    "onboot": 1,
    "startup": "order=1",
    "ostype": "debian",
    "arch": "amd64",
    "unprivileged": 1,
    "description": "Resolver for the lab\n",
}


def auth(token: tuple[str, str]) -> dict[str, str]:
    """The header of a PVE API token request."""
    token_id, secret = token
    return {"Authorization": f"PVEAPIToken={token_id}={secret}"}


def pve_get(served: ServedCluster, path: str, token: tuple[str, str], **params: str) -> requests.Response:
    """GET /api2/json<path>?<params> of served as token; the answer's JSON is ``{"data": ...}``."""
    return requests.get(
        served.url + API + path, params=params, headers=auth(token), verify=served.cafile, timeout=10
    )


def create_body(vmid: int) -> dict[str, str | int]:
    """The form of a container create (POST /nodes/pve1/lxc) from the seeded template, rootfs 8 GiB on zfs."""
    return {
        "vmid": vmid,
        "ostemplate": TEMPLATE,
        "hostname": "web1",
        "rootfs": "local-zfs:8",
        "memory": 1024,
        "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
    }


def check_creds(data: dict[str, str], token: tuple[str, str]) -> None:
    """Assert that data, an OpenBao answer's data, publishes token with ttl 300s.

    A failure names the token id only: pytest would print both sides of a plain comparison of secrets.
    """
    assert sorted(data) == ["secret", "token_id", "ttl"]
    assert (data["token_id"], data["ttl"]) == (token[0], "300s")
    same = hmac.compare_digest(data["secret"], token[1])
    assert same, f"the secret published for {token[0]} is not the cluster's"


# ------------------------------------------------------------------------------------------ the cluster


def test_resources_list_the_seeded_guests(cluster: ServedCluster) -> None:
    assert cluster.seeded is not None
    answer = pve_get(cluster, "/cluster/resources", cluster.seeded.read_token, type="vm")
    assert answer.status_code == 200
    rows = {
        (row["vmid"], row["type"], row["node"], row["name"], row["status"], row.get("template", 0))
        for row in answer.json()["data"]
    }
    assert rows == {
        (120, "lxc", "pve1", "dns1", "running", 0),
        (220, "qemu", "pve2", "build", "stopped", 0),
        (300, "qemu", "pve2", "router", "running", 0),
        (9000, "qemu", "pve1", "debian-13-cloud", "stopped", 1),
    }


def test_nodes_and_storages(cluster: ServedCluster) -> None:
    assert cluster.seeded is not None
    nodes = pve_get(cluster, "/nodes", cluster.seeded.read_token).json()["data"]
    assert sorted(node["node"] for node in nodes) == ["pve1", "pve2"]
    for node in ("pve1", "pve2"):
        storages = pve_get(cluster, f"/nodes/{node}/storage", cluster.seeded.read_token).json()["data"]
        assert {(s["storage"], s["type"], s["content"]) for s in storages} == {
            ("local", "dir", "iso,vztmpl,backup"),
            ("local-lvm", "lvmthin", "images,rootdir"),
            ("local-zfs", "zfspool", "images,rootdir"),
        }
    content = pve_get(
        cluster, "/nodes/pve1/storage/local/content", cluster.seeded.read_token, content="vztmpl"
    )
    assert [volume["volid"] for volume in content.json()["data"]] == [TEMPLATE]


def test_dns1_config_reads_back_as_seeded(cluster: ServedCluster) -> None:
    assert cluster.seeded is not None
    answer = pve_get(cluster, "/nodes/pve1/lxc/120/config", cluster.seeded.read_token)
    assert answer.status_code == 200
    config = answer.json()["data"]
    assert re.fullmatch(r"[0-9a-f]{40}", config.pop("digest"))
    assert config == DNS1
    # Exact types too: the integers are JSON numbers, not strings.
    assert [type(config[key]) for key in ("memory", "swap", "cores", "onboot", "unprivileged")] == [int] * 5


def test_tokens_hold_their_privileges_and_no_more(cluster: ServedCluster) -> None:
    assert cluster.seeded is not None
    assert cluster.seeded.read_token[0] == READ_TOKEN_ID
    assert cluster.seeded.provision_token[0] == PROVISION_TOKEN_ID
    held = pve_get(cluster, "/access/permissions", cluster.seeded.read_token).json()["data"]
    assert held == {
        # Mapping.Audit: resource mappings and notifications (pve-manager API2/Cluster/Mapping/*.pm,
        # Notifications.pm); never a write privilege.
        "/": {
            "Datastore.Audit": 1,
            "Mapping.Audit": 1,
            "Pool.Audit": 1,
            "SDN.Audit": 1,
            "Sys.Audit": 1,
            "VM.Audit": 1,
        },
        # Reading the seeded backup archives (pve-storage Storage.pm check_volume_access), there only.
        "/storage/local": {"Datastore.AllocateSpace": 1},
        "/vms/150": {"VM.Backup": 1},
        "/vms/250": {"VM.Backup": 1},
    }
    wrong = (READ_TOKEN_ID, "0" * 32)
    refused = pve_get(cluster, "/cluster/resources", wrong, type="vm")
    assert (refused.status_code, refused.json()) == (
        401,
        {"data": None, "message": "authentication failure\n"},
    )


def test_read_token_may_not_create_a_container(cluster: ServedCluster) -> None:
    assert cluster.seeded is not None
    answer = requests.post(
        f"{cluster.url}{API}/nodes/pve1/lxc",
        data=create_body(130),
        headers=auth(cluster.seeded.read_token),
        verify=cluster.cafile,
        timeout=10,
    )
    assert answer.status_code == 403
    assert answer.json() == {"data": None, "message": "Permission check failed\n"}
    assert cluster.pve is not None
    assert cluster.pve.ct(130) is None


def test_provision_token_creates_from_the_seeded_template(fresh_cluster: ServedCluster) -> None:
    assert fresh_cluster.seeded is not None
    token = fresh_cluster.seeded.provision_token
    answer = requests.post(
        f"{fresh_cluster.url}{API}/nodes/pve1/lxc",
        data=create_body(130),
        headers=auth(token),
        verify=fresh_cluster.cafile,
        timeout=10,
    )
    assert answer.status_code == 200
    upid = answer.json()["data"]
    assert upid.startswith("UPID:pve1:") and ":vzcreate:130:salt-provision@pve!apply:" in upid
    task = pve_get(fresh_cluster, f"/nodes/pve1/tasks/{upid}/status", token).json()["data"]
    assert (task["status"], task["exitstatus"]) == ("stopped", "OK")
    config = pve_get(fresh_cluster, "/nodes/pve1/lxc/130/config", token).json()["data"]
    assert config["rootfs"] == "local-zfs:subvol-130-disk-0,size=8G"
    assert re.fullmatch(
        r"name=eth0,bridge=vmbr0,hwaddr=BC:24:11(:[0-9A-F]{2}){3},ip=dhcp,type=veth", config["net0"]
    )


def test_vmid_300_is_held_by_a_qemu_guest(cluster: ServedCluster) -> None:
    assert cluster.seeded is not None
    answer = requests.post(
        f"{cluster.url}{API}/nodes/pve1/lxc",
        data=create_body(300),
        headers=auth(cluster.seeded.provision_token),
        verify=cluster.cafile,
        timeout=10,
    )
    assert (answer.status_code, answer.json()["message"]) == (500, "VM 300 already exists on node 'pve2'\n")


@pytest.mark.pve_time_scale(0.01)
def test_run_coro_holds_the_config_lock(fresh_cluster: ServedCluster) -> None:
    assert fresh_cluster.pve is not None and fresh_cluster.seeded is not None
    fresh_cluster.run_coro(fresh_cluster.pve.hold_config_lock(120, None))
    answer = requests.put(
        f"{fresh_cluster.url}{API}/nodes/pve1/lxc/120/config",
        data={"cores": 2},
        headers=auth(fresh_cluster.seeded.provision_token),
        verify=fresh_cluster.cafile,
        timeout=10,
    )
    assert answer.status_code == 500
    assert answer.json()["message"] == "can't lock file '/run/lock/lxc/pve-config-120.lock' - got timeout\n"


def test_seeded_repr_hides_the_secrets(cluster: ServedCluster) -> None:
    assert cluster.seeded is not None
    shown = repr(cluster.seeded) + repr(cluster)
    assert READ_TOKEN_ID in shown
    hidden = cluster.seeded.read_token[1] not in shown and cluster.seeded.provision_token[1] not in shown
    assert hidden, "a repr shows a token secret"


# ------------------------------------------------------------------------------------------ OpenBao


def test_openbao_serves_the_fresh_clusters_tokens(
    fresh_cluster: ServedCluster, bao_creds: dict[str, str]
) -> None:
    assert fresh_cluster.seeded is not None
    assert bao_creds["path"] == CREDS_PATH
    for role, token in (
        ("read", fresh_cluster.seeded.read_token),
        ("provision", fresh_cluster.seeded.provision_token),
    ):
        answer = requests.get(
            f"{bao_creds['url']}/v1/{bao_creds['path']}/{role}",
            headers={"X-Vault-Token": bao_creds["token"]},
            timeout=10,
        )
        assert answer.status_code == 200
        body = answer.json()
        assert body["lease_duration"] == 300
        check_creds(body["data"], token)
        # The published token works against the cluster it came from.
        status = pve_get(fresh_cluster, "/cluster/resources", (token[0], body["data"]["secret"])).status_code
        assert status == 200


def test_creds_token_may_only_read_the_creds(bao_creds: dict[str, str]) -> None:
    client = hvac.Client(url=bao_creds["url"], token=bao_creds["token"])
    me = client.auth.token.lookup_self()["data"]
    assert sorted(me["policies"]) == ["default", "salt-proxmox-creds"]
    assert 3500 < me["ttl"] <= 3600
    with pytest.raises(hvac.exceptions.Forbidden):
        client.secrets.kv.v1.create_or_update_secret(path="read", secret={"x": "y"}, mount_point=CREDS_PATH)


def test_publish_creds_ttl_sets_the_lease(openbao: DevOpenBao) -> None:
    client = openbao.client()
    publish_creds(client, "harness/ttl", "probe", "x@pve!y", "s", ttl="90s")
    assert client.secrets.kv.v1.read_secret("probe", mount_point="harness/ttl")["lease_duration"] == 90


def test_credentials_from_a_kv_version_2_mount(openbao: DevOpenBao) -> None:
    # A KV v2 mount answers GET <mount>/data/<path> with data: {data: {...}, metadata: {...}}; the
    # broker reads the pair there, and the same path without data/ answers nothing.
    client = openbao.client()
    client.sys.enable_secrets_engine("kv", path="harness-kv2", options={"version": "2"})
    client.secrets.kv.v2.create_or_update_secret(
        path="pve/read",
        secret={"token_id": "probe@pve!read", "secret": "kv2-probe-secret"},
        mount_point="harness-kv2",
    )
    config = {"url": openbao.url, "auth": {"method": "token", "token": openbao.root_token}}
    for path, expected in (("harness-kv2/data/pve", "probe@pve!read"), ("harness-kv2/pve", None)):
        target = Target("lab", ("https://127.0.0.1:1",), credentials={"source": "openbao", "path": path})
        broker = CredentialBroker(target, {}, openbao=config)
        if expected:
            assert broker.read().token_id == expected
        else:
            with pytest.raises(CredentialError, match="answered nothing") as caught:
                broker.read()
            assert "kv2-probe-secret" not in str(caught.value)


def test_make_approle_logs_in_with_the_policies(openbao: DevOpenBao) -> None:
    role_id, secret_id = make_approle(openbao.client(), "salt-master", ["salt-proxmox-creds"])
    login = hvac.Client(url=openbao.url).auth.approle.login(role_id, secret_id)
    assert sorted(login["auth"]["policies"]) == ["default", "salt-proxmox-creds"]
    assert make_approle(openbao.client(), "salt-master", ["salt-proxmox-creds"])[1] != secret_id


def test_dev_openbao_stops_by_its_pid() -> None:
    bao = DevOpenBao().start()
    pid, log = bao.pid, bao.log_path
    assert pid is not None and log is not None
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    hidden = bao.root_token not in Path(f"/proc/{pid}/cmdline").read_text()
    assert hidden, "the root token is on the command line"
    bao.stop()
    assert not Path(f"/proc/{pid}").exists()
    assert not log.parent.exists()


# ------------------------------------------------------------------------------------------ the processes


def private_file(path: Path) -> dict[str, Any]:
    """The JSON in path, after checking the file is 0600 in a 0700 directory."""
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return json.loads(path.read_text())


def test_cluster_entry_point(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc, url = start_entry_point("tests.support.cluster", "--state-dir", str(state))
    try:
        assert re.fullmatch(r"https://127\.0\.0\.1:\d+", url)
        info = private_file(state / "cluster.json")
        assert info["url"] == url
        assert info["read"]["token_id"] == READ_TOKEN_ID
        assert info["provision"]["token_id"] == PROVISION_TOKEN_ID
        read = (info["read"]["token_id"], info["read"]["secret"])
        answer = requests.get(
            f"{url}{API}/cluster/resources",
            params={"type": "vm"},
            headers=auth(read),
            verify=info["cafile"],
            timeout=10,
        )
        assert sorted(row["vmid"] for row in answer.json()["data"]) == [120, 220, 300, 9000]
    finally:
        out, err = stop_entry_point(proc)
    assert proc.returncode == 0, err
    quiet = not out and not err
    assert quiet, "the process wrote more than its ready line"
    assert not (state / "cluster.json").exists()
    assert not Path(info["cafile"]).exists()


def test_openbao_entry_point(tmp_path: Path) -> None:
    state = tmp_path / "state"
    cluster, _ = start_entry_point("tests.support.cluster", "--state-dir", str(state))
    try:
        creds = state / "cluster.json"
        bao, url = start_entry_point(
            "tests.support.openbao", "--state-dir", str(state), "--creds-from", str(creds)
        )
        try:
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
            info = private_file(state / "openbao.json")
            assert info["url"] == url
            assert Path(f"/proc/{info['pid']}").exists()
            published = private_file(creds)
            for role in ("read", "provision"):
                answer = requests.get(
                    f"{url}/v1/proxmox/creds/{role}", headers={"X-Vault-Token": info["token"]}, timeout=10
                )
                assert answer.json()["lease_duration"] == 300
                check_creds(answer.json()["data"], (published[role]["token_id"], published[role]["secret"]))
        finally:
            out, err = stop_entry_point(bao)
        assert bao.returncode == 0, err
        quiet = not out and not err
        assert quiet, "the process wrote more than its ready line"
        assert not (state / "openbao.json").exists()
        deadline = time.monotonic() + 5
        while Path(f"/proc/{info['pid']}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{info['pid']}").exists(), "the bao server outlived its parent"
    finally:
        stop_entry_point(cluster)
    assert cluster.returncode == 0
    assert processes_mentioning(str(state)) == []


def processes_mentioning(text: str) -> list[int]:
    """Pids of the processes whose command line contains text."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:  # it ended while we looked, or is not ours to read
            continue
    return found
