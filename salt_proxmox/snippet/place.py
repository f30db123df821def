"""Where a snippet goes: the target's root lane and its node, and the storage that holds it, each
refused at plan with why and the remedy (``place``).

- **the lane**: PVE has no API call that writes a snippet (pve-storage ``src/PVE/API2/Storage/Status.pm``
  ``upload``: ``content`` is one of ``iso``, ``vztmpl``, ``import``), so the file is written on a node,
  by the states running there as root: the target needs ``root_lane: pvesh`` whose preconditions hold
  (``guest.lane.lane_check``), and the node is the lane's; the ticket lane, which only calls the
  API, is refused naming the pvesh lane (``guest.lane.node_refusal``);
- **the storage** (``GET /storage``, ``pve.facts.storages``): it exists (or a state earlier in this run
  creates it); its type keeps files under a ``path`` and takes ``snippets`` (``plugindata`` ``content``:
  dir, nfs, cifs, cephfs, btrfs — ``storage.types.TYPES``); its ``content`` includes ``snippets``
  (PVE lists and uses only the content types a storage declares: ``Plugin.pm`` ``list_volumes``); it
  is not disabled and its ``nodes`` include the lane's node (``PVE/Storage.pm``
  ``storage_check_enabled``: ``storage '<id>' is not available on node '<node>'``);
- **the directory**: ``path`` joined with the storage's ``content-dirs`` entry for ``snippets``, else
  ``snippets`` (``Plugin.pm`` ``get_subdir``).

A storage that is not ``shared`` keeps the file on the lane's node only: the plan says so, and a guest
on another node naming it is refused (``salt_proxmox.snippet.guard``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.guest.lane import lane_check, lane_node, node_refusal
from salt_proxmox.pve.facts import SHARED_TYPES, storages
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple.spec import planned, will_exist
from salt_proxmox.snippet.declare import VTYPE, Snippet
from salt_proxmox.storage.types import TYPES

#: The pve-storage source of ``upload``'s content types, which every lane refusal cites.
NO_UPLOAD = (
    "PVE has no API call that writes a snippet (pve-storage API2/Storage/Status.pm upload takes content "
    "iso, vztmpl and import only), so it is written as a file on a node of the cluster"
)


@dataclass(frozen=True)
class Place:
    """Where a snippet is written: ``node`` (the lane's), ``via`` (the lane's label), ``path`` (the
    storage's), ``directory`` (its snippets directory), ``shared``, ``created`` (the storage is made by
    an earlier state of this run, so nothing is on disk yet)."""

    node: str
    via: str
    path: str
    directory: str
    shared: bool
    created: bool = False

    def note(self, snippet: Snippet) -> str | None:
        """The plan's note for a storage that is not shared."""
        if self.shared:
            return None
        return (
            f"storage {snippet.storage} is not shared: {snippet.volid} is written on node {self.node} only, "
            "so only a guest on that node can use it"
        )


def snippets_dir(path: str, content_dirs: str) -> str:
    """The snippets directory of a storage at ``path`` whose ``content-dirs`` is ``content_dirs``
    (``vtype=subdir,...``; pve-storage ``Plugin.pm`` ``get_subdir``: ``$path/$subdir``)."""
    subdirs = dict(part.partition("=")[::2] for part in content_dirs.split(",") if "=" in part)
    return os.path.join(path, subdirs.get(VTYPE, VTYPE).strip("/") or VTYPE)


def _items(value: object) -> set[str]:
    if isinstance(value, str):
        return {part.strip() for part in value.replace(";", ",").split(",") if part.strip()}
    if isinstance(value, list | tuple | set | frozenset):
        return {str(part) for part in value}
    return set()


def _planned_storage(ctx: PveContext, storage: str) -> dict[str, object] | None:
    """A storage a state earlier in this run creates, as ``pve.facts.parse_storages`` shapes one."""
    values = planned(ctx, "storage").get(storage)
    if values is None or not will_exist(ctx, "storage", storage):
        return None
    kind = str(values.get("type") or "")
    return {
        "type": kind,
        "shared": kind in SHARED_TYPES or str(values.get("shared") or "0") not in ("0", "", "False"),
        "disable": str(values.get("disable") or "0") not in ("0", "", "False"),
        "content": ",".join(sorted(_items(values.get("content")))),
        "path": str(values.get("path") or ""),
        "nodes": ",".join(sorted(_items(values.get("nodes")))),
        "content-dirs": str(values.get("content-dirs") or ""),
    }


def storage_refusals(storage: str, config: Mapping[str, object] | None, node: str) -> list[str]:
    """Why a snippet cannot live on ``storage`` (``config`` as ``pve.facts.parse_storages`` shapes it,
    None when it is not listed) written on ``node``: [] when it can (module docstring)."""
    if config is None:
        return [
            f"storage: {storage} is not listed by GET /storage (it does not exist, or the read credential "
            f"lacks Datastore.Audit on /storage/{storage}): declare it (proxmox:storage) or name another."
        ]
    kind = TYPES.get(str(config.get("type")))
    if kind is None or VTYPE not in kind.content or "path" not in kind.options:
        return [
            f"storage: {storage} is of type {config.get('type')}, which keeps no snippets (pve-storage: only "
            "the file storages dir, nfs, cifs, cephfs and btrfs take content snippets): name one of those."
        ]
    problems = []
    if VTYPE not in _items(config.get("content")):
        problems.append(
            f"storage: {storage}'s content ({config.get('content') or 'none'}) does not include snippets, so "
            f"PVE neither lists nor uses a snippet on it: add snippets to its content (pvesm set {storage} "
            "--content ...,snippets, or its proxmox:storage declaration)."
        )
    if config.get("disable"):
        problems.append(f"storage: {storage} is disabled (disable: 1): enable it first.")
    nodes = _items(config.get("nodes"))
    if nodes and node not in nodes:
        problems.append(
            f"storage: {storage} is not available on node {node}, the root lane's (its nodes: "
            f"{', '.join(sorted(nodes))}; PVE/Storage.pm storage_check_enabled): add the node or run the "
            "states on one of those."
        )
    if not config.get("path"):
        problems.append(
            f"storage: {storage} has no path (Plugin.pm get_subdir: storage definition has no path)."
        )
    return problems


def place(ctx: PveContext, snippet: Snippet, where: str) -> tuple[Place | None, list[str]]:
    """``(Place, [])`` for ``snippet``, or ``(None, refusals)``: no lane, the lane's preconditions, a
    lane with no node (the ticket lane), the storage (module docstring). ``where`` names the
    declaration in the lane's refusal. Raises what the reads raise (PveError, PveMalformed,
    PveUnreachable, CredentialError): never taken for absence."""
    if ctx.lane is None:
        return None, [
            f"{where}: {NO_UPLOAD}: configure proxmox:targets:{ctx.target.name}:root_lane: pvesh and run the "
            "states on a node of the cluster (a minion there, or salt-ssh to it)."
        ]
    via, refusals = lane_check(ctx)
    refused = node_refusal(ctx, where, "files in the storage's snippets directory")
    if refused:
        return None, [*refusals, refused]
    node = lane_node(ctx)
    if refusals or node is None:
        return None, refusals or [f"{where}: the root lane's node is unknown."]
    config = storages(ctx).get(snippet.storage)
    created = False
    if config is None:
        config = _planned_storage(ctx, snippet.storage)
        created = config is not None
    refusals = storage_refusals(snippet.storage, config, node)
    if refusals:
        return None, refusals
    assert config is not None
    path = str(config["path"])
    directory = snippets_dir(path, str(config.get("content-dirs") or ""))
    return Place(node, via, path, directory, bool(config.get("shared")), created), []
