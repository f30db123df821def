"""What the integration tests of guests share: a ``PveContext`` built against the harness the way the
Salt module builds it, the container and VM declarations they start from, and helpers that read
fakepve's request log and count the OpenBao requests a run sends."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.run import config as run_config
from salt_proxmox.run.context import PveContext
from tests.support.cluster import ISO, TEMPLATE, ServedCluster

TARGET = "lab"


def static_targets(served: ServedCluster) -> dict[str, Any]:
    """``proxmox:targets`` with the seeded tokens as static credentials."""
    assert served.seeded is not None
    read_id, read_secret = served.seeded.read_token
    prov_id, prov_secret = served.seeded.provision_token
    return {
        TARGET: {
            "members": [served.url],
            "verify": served.cafile,
            "credentials": {
                "source": "static",
                "read": {"token_id": read_id, "secret": read_secret},
                "provision": {"token_id": prov_id, "secret": prov_secret},
            },
        }
    }


def bao_targets(served: ServedCluster, creds: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``proxmox:targets`` minting from OpenBao, and the ``openbao:`` block."""
    targets = {
        TARGET: {
            "members": [served.url],
            "verify": served.cafile,
            "credentials": {"source": "openbao", "path": creds["path"]},
        }
    }
    openbao = {"url": creds["url"], "verify": True, "auth": {"method": "token", "token": creds["token"]}}
    return targets, openbao


def make_context(
    targets: dict[str, Any],
    openbao: dict[str, Any] | None = None,
    cache: dict | None = None,
    store: MemoryStore | None = None,
) -> PveContext:
    """A context as ``_modules/proxmox.py`` builds it, with a dict for ``__context__`` and a MemoryStore."""
    ctx = run_config.context_for(
        targets, TARGET, openbao, {} if cache is None else cache, store or MemoryStore()
    )
    ctx.sleep = lambda _seconds: None
    return ctx


def declaration(vmid: int = 150, node: str = "pve1", **over: Any) -> dict[str, Any]:
    """A creatable container declaration (the ``web`` container of the example pillar)."""
    declared: dict[str, Any] = {
        "vmid": vmid,
        "node": node,
        "ostemplate": TEMPLATE,
        "unprivileged": True,
        "hostname": f"ct{vmid}",
        "cores": 2,
        "memory": 1024,
        "rootfs": "local-zfs:8",
        "mp0": "local-zfs:10,mp=/srv/data,backup=1",
        "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
        "features": "nesting=1",
        "tags": "web;prod",
        "startup": "order=2,up=30",
        "description": "made by a test",
    }
    declared.update(over)
    return {key: value for key, value in declared.items() if value is not None}


def requests_since(served: ServedCluster, start: int) -> list[tuple[str, str, Any]]:
    """fakepve's log from index ``start``: (method, decoded path without /api2/json, body)."""
    out = []
    for method, path, body in served.pve.requests[start:]:
        out.append((method, unquote(path).removeprefix("/api2/json"), body))
    return out


def writes(log: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """The non-GET requests of a log."""
    return [entry for entry in log if entry[0] != "GET"]


#: The seeded running container 120 (``DNS1_CONFIG`` of tests.support.cluster), declared as it is:
#: PVE's spellings differ (tags order, description newline, rootfs as a volume id), the values do not.
DNS1_DECLARATION: dict[str, Any] = {
    "vmid": 120,
    "node": "pve1",
    "unprivileged": True,
    "hostname": "dns1",
    "cores": 1,
    "memory": 512,
    "rootfs": "local-zfs:4",
    "net0": "name=eth0,bridge=vmbr0,ip=10.0.0.53/24,gw=10.0.0.1",
    "features": "nesting=1",
    "tags": "infra;dns",
    "onboot": True,
    "startup": "order=1",
}


def dns1(**over: Any) -> dict[str, Any]:
    """Container 120 as declared, with ``over`` changed."""
    return {**DNS1_DECLARATION, **over}


KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq7Jx0s9Nn8sWQ2p5mE1cQH0b4aJXk0n4mZ8b1c2d3e ops@example"


def vm(vmid: int = 150, **over: Any) -> dict[str, Any]:
    """A VM created from scratch: a disk, a CD-ROM with the seeded ISO, a cloud-init drive, a NIC
    without a MAC."""
    declared: dict[str, Any] = {
        "vmid": vmid,
        "node": "pve1",
        "name": f"vm{vmid}",
        "memory": 2048,
        "cores": 2,
        "ostype": "l26",
        "scsihw": "virtio-scsi-single",
        "scsi0": "local-lvm:8,discard=on,iothread=1",
        "ide2": f"{ISO},media=cdrom",
        "ide0": "local-lvm:cloudinit",
        "net0": "virtio,bridge=vmbr0,tag=20",
        "ciuser": "ops",
        "sshkeys": KEY,
        "ipconfig0": "ip=dhcp",
        "tags": "web;prod",
    }
    declared.update(over)
    return {key: value for key, value in declared.items() if value is not None}


def count_openbao_requests(ctx) -> list[str]:
    """Record every HTTP request the run's hvac client sends to OpenBao (its paths)."""
    client = ctx.broker._client()
    session = client.adapter.session
    seen: list[str] = []
    original = session.request

    def counting(method, url, *args, **kwargs):
        seen.append(url.split("/v1/", 1)[-1])
        return original(method, url, *args, **kwargs)

    session.request = counting
    return seen
