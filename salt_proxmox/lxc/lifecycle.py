"""Containers on the shared guest lifecycle (``salt_proxmox.guest.lifecycle``, docs/design.md §6, §8),
bound to the container family (``lxc.family.LXC``): the calls ``proxmox.lxc_*`` and
``proxmox_lxc.present``/``absent`` make. Each function is the shared one with ``LXC``; see there
for shapes, errors and PVE sources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from salt_proxmox.guest import lifecycle as shared
from salt_proxmox.guest.lifecycle import indexed_guest
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.lxc.family import LXC
from salt_proxmox.outcome import Outcome
from salt_proxmox.run.context import PveContext
from salt_proxmox.run.lowstate import Chunk

__all__ = ["PveContext", "indexed_guest"]

#: The ownership row family of containers.
FAMILY = LXC.kind
#: The Salt state module that declares containers.
STATE = LXC.state


def chunk_keys(chunk: Chunk, default_target: str | None) -> frozenset[str]:
    """The ownership row key (``<target>/lxc/<vmid>``) a run chunk declares (``shared.chunk_keys``)."""
    return shared.chunk_keys(LXC, chunk, default_target)


def guest_path(node: str, vmid: int) -> str:
    """``nodes/{node}/lxc/{vmid}``, labels encoded."""
    return shared.guest_path(LXC, node, vmid)


def config_path(node: str, vmid: int) -> str:
    """``nodes/{node}/lxc/{vmid}/pending``, the read every container state starts with."""
    return shared.config_path(LXC, node, vmid)


def read_ahead(ctx: PveContext, declarations: Iterable[Mapping[str, object]]) -> int:
    """Read ahead the config of every container the run declares on this target; returns how many
    were sent (``shared.read_ahead``). Never raises."""
    return shared.read_ahead(ctx, LXC, declarations)


def operator_config(ctx: PveContext, vmid: int, node: str | None = None) -> dict[str, str]:
    """What ``proxmox.lxc_config`` answers (``shared.operator_config``)."""
    return shared.operator_config(ctx, LXC, vmid, node)


def read_live(ctx: PveContext, node: str, vmid: int) -> GuestConfig | None:
    """The config of CT ``vmid`` on ``node``, or None when the cluster proves it absent
    (``shared.read_live``)."""
    return shared.read_live(ctx, LXC, node, vmid)


def present(ctx: PveContext, state_id: str, test: bool, **declared) -> Outcome:
    """Plan (``test``) or apply one ``proxmox_lxc.present`` declaration (``shared.present``)."""
    return shared.present(ctx, LXC, state_id, test, **declared)


def absent(
    ctx: PveContext, state_id: str, test: bool, vmid: object, node: object, removal: object = "retain"
) -> Outcome:
    """Retain or destroy a container we made (``shared.absent``)."""
    return shared.absent(ctx, LXC, state_id, test, vmid, node, removal)


def adhoc_declaration(ctx: PveContext, vmid: object, config: Mapping[str, object]) -> tuple[str, dict]:
    """The state id that owns CT ``vmid`` and its declaration with ``config`` merged over it
    (``shared.adhoc_declaration``)."""
    return shared.adhoc_declaration(ctx, LXC, vmid, config)


def resize(ctx: PveContext, node: object, vmid: object, disk: object, size: object) -> str:
    """Grow one mount point of a container this minion owns (``proxmox.lxc_resize``); returns the
    task's UPID (``shared.resize``)."""
    return shared.resize(ctx, LXC, node, vmid, disk, size)
