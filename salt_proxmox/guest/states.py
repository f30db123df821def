"""The state calls of a guest family (``proxmox_lxc``/``proxmox_qemu`` ``present`` and ``absent``), as
the registry runs every family's (``entry.Run``: ``(ctx, spec, test, state_id, **declared)``, the
``spec`` here the guest ``Family``), onto the shared guest lifecycle (``guest.lifecycle``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest import lifecycle
from salt_proxmox.outcome import Outcome

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Family
    from salt_proxmox.run.context import PveContext


def present(ctx: PveContext, family: Family, test: bool, state_id: str, **declared: object) -> Outcome:
    """Plan (``test``) or apply one guest declaration (``lifecycle.present``). ``name`` is the state's
    name: the VM's PVE ``name`` for a family that ``names_guest``, unless ``name_from_id: true`` says it
    is only the state id (then a create names the VM after it and says so); nothing for a container."""
    name = declared.pop("name", None)
    if family.names_guest and declared.get("name_from_id") is not True:
        declared["name"] = name
    return lifecycle.present(ctx, family, state_id, test, **declared)


def absent(
    ctx: PveContext,
    family: Family,
    test: bool,
    state_id: str,
    name: object = None,
    vmid: object = None,
    node: object = None,
    removal: object = "retain",
    **extra: object,
) -> Outcome:
    """Retain or destroy one guest (``lifecycle.absent``); any other key is refused by name with nothing
    read or written: an absent state takes ``vmid``, ``node`` and ``removal`` only."""
    if extra:
        unknown = DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: absent takes vmid, node, removal"
        )
        return Outcome().fail(f"Refused: {unknown}", "Nothing was written.")
    return lifecycle.absent(ctx, family, state_id, test, vmid, node, removal)
