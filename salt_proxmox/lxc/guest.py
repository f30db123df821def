"""Whether a live container is the one an ownership row speaks for: the shared rules of
``salt_proxmox.guest.identity`` bound to the container family (``lxc.family``, whose ``KEYS``
say what a container's fingerprint holds: each ``netN``'s MAC, the volume id and size of
``rootfs``, each ``mpN`` and ``unusedN``)."""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.guest import identity
from salt_proxmox.guest.identity import FORWARD, Check, legacy_note, not_ours
from salt_proxmox.lxc.family import KEYS, LXC
from salt_proxmox.lxc.props import LxcDeclaration
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle

__all__ = ["FORWARD", "KEYS", "Check", "check", "legacy_note", "live_fingerprint", "not_ours"]


def live_fingerprint(live: Mapping[str, object]) -> dict[str, str]:
    """The fingerprint of a live container config (``identity.live_fingerprint``)."""
    return identity.live_fingerprint(LXC, live)


def recorded_declaration(
    state_id: str, target: str, row: Mapping[str, object], vmid: int, node: str
) -> LxcDeclaration:
    """The container declaration an ownership row recorded (``identity.recorded_declaration``).
    Raises Refused when the row holds none that parses."""
    return identity.recorded_declaration(LXC, state_id, target, row, vmid, node)  # type: ignore[return-value]


def check(
    row: Mapping[str, object],
    live: Mapping[str, object],
    recorded: LxcDeclaration,
    style: TagStyle = DEFAULT_TAG_STYLE,
) -> Check:
    """Whether ``live`` is the container ``row`` speaks for (``identity.check``)."""
    return identity.check(LXC, row, live, recorded, style)


def unknown_volumes(last: LxcDeclaration, live: Mapping[str, object]) -> list[str]:
    """The volumes of ``live`` its last declaration does not declare (``identity.unknown_volumes``)."""
    return identity.unknown_volumes(LXC, last, live)
