"""What a downloaded file's decision reads, each read a failure when it fails (never absence):

- the cluster's nodes (``GET /nodes``, pve-manager ``PVE/API2/Nodes.pm`` ``index``: ``node``, ``status``);
- the storage's config (``GET /storage``, ``pve.facts.storages``): its type keeps files under a ``path``
  (``download_url``: ``can't upload to storage type '<type>', not a file based storage!``), its
  ``content`` includes the declared one (``storage '<id>' is not configured for content-type
  '<content>'``), it is not disabled and its ``nodes`` include the node (``PVE/Storage.pm``
  ``storage_check_enabled``);
- whether it is active on the node (``GET /nodes/{node}/storage``, pve-storage
  ``API2/Storage/Status.pm`` ``index``: ``active``, ``enabled``; ``download_url`` calls
  ``activate_storage``, which dies for a storage that cannot be activated);
- the file on the node (``GET /nodes/{node}/storage/{storage}/content?content=<content>``,
  ``API2/Storage/Content.pm`` ``index``: ``volid``, ``size``, ``format``). PVE shows no checksum of a
  file, so the row keeps the declared one;
- the guests whose config names the volid as a drive (``guests_using``);
- the download's size (``GET /nodes/{node}/query-url-metadata``, pve-manager ``Nodes.pm``
  ``query_url_metadata``: ``size``, ``filename``, ``mimetype`` from the URL's HEAD), a note only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.content.declare import Download
from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.guest.absence import guest_configs
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.facts import node_storages, storages
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.run.context import PveContext
from salt_proxmox.storage.types import TYPES

#: A VM's drive keys (qemu-server ``QemuServer/Drive.pm`` ``$MAX_IDE_DISKS`` ...: ``ideN``, ``sataN``,
#: ``scsiN``, ``virtioN``): the first part of each value is its volume.
DRIVE = re.compile(r"^(?:ide|sata|scsi|virtio)\d+\Z")


@dataclass(frozen=True)
class Live:
    """The file on one node: ``size`` in bytes, ``format`` as PVE lists it."""

    volid: str
    size: int
    format: str


def cluster_nodes(ctx: PveContext) -> dict[str, str]:
    """``{node: status}`` of every node (``GET /nodes``). Raises PveMalformed for a row without its
    name, and what ``get_rows`` raises."""
    rows = get_rows(ctx.client, "nodes", ctx.broker.read(), what="nodes")
    found = {row.get("node"): str(row.get("status") or "unknown") for row in rows}
    if not found or not all(isinstance(name, str) and name for name in found):
        raise PveMalformed(
            "GET", "nodes", "not every node is listed by its name (pve-manager Nodes.pm index)"
        )
    return found  # type: ignore[return-value]


def storage_refusals(download: Download, config: Mapping[str, object] | None) -> list[str]:
    """Why ``download``'s storage cannot hold it anywhere (module docstring): [] when it can."""
    storage, content = download.storage, download.content
    if config is None:
        return [
            f"storage: {storage} is not listed by GET /storage (it does not exist, or the read "
            "credential lacks "
            f"Datastore.Audit on /storage/{storage}): declare it (proxmox:storage) or name another."
        ]
    kind = TYPES.get(str(config.get("type")))
    if kind is None or "path" not in kind.options:
        return [
            f"storage: {storage} is of type {config.get('type')}, not a file based storage (pve-storage "
            "API2/Storage/Status.pm download_url: can't upload to storage type): name a dir, "
            "nfs, cifs, cephfs "
            "or btrfs storage."
        ]
    problems = []
    if content not in {part.strip() for part in str(config.get("content") or "").split(",")}:
        problems.append(
            f"storage: {storage}'s content ({config.get('content') or 'none'}) does not include {content} "
            f"(download_url: storage '{storage}' is not configured for content-type '{content}'): add it "
            f"(pvesm set {storage} --content ...,{content}, or its proxmox:storage declaration)."
        )
    if config.get("disable"):
        problems.append(
            f"storage: {storage} is disabled (PVE/Storage.pm storage_check_enabled): enable it first."
        )
    return problems


def where_needed(ctx: PveContext, download: Download) -> tuple[list[str], bool, list[str]]:
    """``(nodes, shared, refusals)``: the nodes that must hold the file — each declared one (all of the
    cluster's by default) the storage is enabled on; only the first online one for a shared storage,
    which holds it once — or the refusals. Raises what the reads raise."""
    config = storages(ctx).get(download.storage)
    refusals = storage_refusals(download, config)
    if refusals:
        return [], False, refusals
    assert config is not None
    nodes = cluster_nodes(ctx)
    enabled = {part.strip() for part in str(config.get("nodes") or "").split(",") if part.strip()}
    wanted = list(download.nodes or sorted(nodes))
    for node in wanted:
        if node not in nodes:
            refusals.append(
                f"nodes: {node} is not a node of the cluster (GET /nodes lists {', '.join(sorted(nodes))})."
            )
        elif enabled and node not in enabled:
            refusals.append(
                f"nodes: storage {download.storage} is not available on node {node} (its nodes: "
                f"{', '.join(sorted(enabled))}; PVE/Storage.pm storage_check_enabled)."
            )
        elif nodes[node] != "online":
            refusals.append(
                f"nodes: node {node} is {nodes[node]}, so nothing can be checked or downloaded there."
            )
    if download.nodes is None:
        # All nodes by default: those the storage is not enabled on are not asked to hold it.
        wanted = [node for node in wanted if not enabled or node in enabled]
        refusals = [r for r in refusals if "not available on node" not in r]
    shared = bool(config.get("shared"))
    if shared and wanted and not refusals:
        wanted = [next((n for n in wanted if nodes[n] == "online"), wanted[0])]
    return wanted, shared, refusals


def active(ctx: PveContext, download: Download, node: str) -> str | None:
    """None when the storage is enabled and active on ``node`` (``GET /nodes/{node}/storage``), else why."""
    row = node_storages(ctx, node).get(download.storage)
    if row is None or not row.get("enabled", 1) or not row.get("active"):
        return (
            f"storage: {download.storage} is not active on node {node} (GET nodes/{node}/storage: "
            f"{'not listed' if row is None else 'inactive'}; download_url activates it and dies "
            "when it cannot): "
            "bring it online there first."
        )
    return None


def on_node(ctx: PveContext, download: Download, node: str) -> Live | None:
    """The file on ``node``, or None when the storage's listing answered without it. Raises
    PveMalformed for a row without its volid or a size that is no number, and what the read raises."""
    path = api_path("nodes", node, "storage", download.storage, "content")
    rows = get_rows(ctx.client, path, ctx.broker.read(), params={"content": download.content}, what="volumes")
    for row in rows:
        if row.get("volid") == download.volid:
            size = row.get("size")
            if not isinstance(size, int) or isinstance(size, bool):
                raise PveMalformed("GET", path, f"{download.volid} has no size in bytes")
            return Live(download.volid, size, str(row.get("format") or ""))
    return None


def guests_using(ctx: PveContext, volid: str) -> list[str]:
    """``VM <vmid> <key>`` for each VM whose config (pending values merged in, as PVE shows it) has a
    drive on ``volid`` (an ISO in a CD-ROM: ``ide2: local:iso/x.iso,media=cdrom``). A container made
    from a template holds a copy (pve-container ``Create.pm`` ``restore_archive`` unpacks it), so no
    container uses one. Raises what the reads raise."""
    found = []
    for row, config in guest_configs(ctx):
        if row.get("type") != "qemu":
            continue
        for key, value in sorted(config.items()):
            if DRIVE.match(str(key)) and isinstance(value, str) and value.split(",", 1)[0].strip() == volid:
                found.append(f"VM {row['vmid']} {key}")
    return found


def download_size(ctx: PveContext, download: Download, node: str) -> str:
    """The plan's note of what the URL says it holds (``query_url_metadata``), or why it is not known.
    Never raises for a failed read: the size is a note, not a decision."""
    params = {"url": download.url}
    if not download.verify_certificates:
        params["verify-certificates"] = "0"
    try:
        meta = ctx.client.request(
            "GET", api_path("nodes", node, "query-url-metadata"), ctx.broker.read(), params=params
        )
    except SaltProxmoxError as exc:
        return f"the download's size is not known (query-url-metadata: {exc})"
    size = meta.get("size") if isinstance(meta, Mapping) else None
    if not isinstance(size, int) or isinstance(size, bool):
        return "the download's size is not known (query-url-metadata names none)"
    return f"the download is {size} bytes ({size / 1024**2:.1f} MiB)"
