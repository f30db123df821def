"""Whether a live guest is the one an ownership row speaks for (docs/design.md §8), pure; shared by
guest families.

A row names a vmid; the guest at that vmid may have been destroyed by hand and created again by
somebody else. Its fingerprint (``salt_proxmox.guest.fingerprint``: for a container the MAC PVE drew
for each ``netN``, the volume id and size of ``rootfs``, each ``mpN`` and ``unusedN``, so the set of
mount points; for a VM its NICs, disks and the values qemu-server generates once) is recorded with
the row from the read-back of this minion's own writes, and at an adoption. A live guest that does
not carry it is not ours: plan and apply refuse it, naming what differs, unless the declaration says
``adopt: true``.

Rows written before fingerprints existed are never trusted silently: the guest must match the
declaration recorded with the row exactly, with no NIC or volume that declaration does not have;
then the plan says so and the fingerprint is recorded; otherwise it is refused like a foreign guest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.guest.fingerprint import FIELD, differences, fingerprint
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Declaration, Family


def live_fingerprint(family: Family, live: Mapping[str, object]) -> dict[str, str]:
    """The fingerprint of a live config of ``family``."""
    return fingerprint(live, family.keys)


def recorded_declaration(
    family: Family, state_id: str, target: str, row: Mapping[str, object], vmid: int, node: str
) -> Declaration:
    """The declaration an ownership row recorded, parsed as a declaration of ``family`` (its vmid
    and node, else ``vmid``/``node``). Raises Refused when the row holds none that parses."""
    recorded = dict(row.get("declared") or {})
    try:
        return family.parse(
            state_id,
            vmid=recorded.pop("vmid", vmid),
            node=recorded.pop("node", node),
            target=target,
            config=recorded,
        )
    except (DeclarationError, TypeError, ValueError):
        raise Refused(
            f"{family.label} {vmid}: its ownership row does not hold a declaration that can be read, so the "
            "guest cannot be checked against it. Nothing was written."
        ) from None


@dataclass(frozen=True)
class Check:
    """A live guest against its ``owned`` row: ``differs`` says why it is not the guest the row
    speaks for (empty: it is); ``legacy`` marks a row with no fingerprint, checked against its
    recorded declaration instead."""

    differs: list[str] = field(default_factory=list)
    legacy: bool = False


def check(
    family: Family,
    row: Mapping[str, object],
    live: Mapping[str, object],
    recorded: Declaration,
    style: TagStyle = DEFAULT_TAG_STYLE,
) -> Check:
    """Whether ``live`` is the guest ``row`` (an ``owned`` row) speaks for; ``recorded`` is the
    row's declaration (``recorded_declaration``), judged with the datacenter's tag ``style`` (see
    the family's judge) when the row has no fingerprint."""
    prints = live_fingerprint(family, live)
    stored = row.get(FIELD)
    if isinstance(stored, Mapping):
        return Check(differences(stored, prints))
    drift = [f"{key} differs from it" for key in family.judge(recorded, live, style).drift]
    unknown = [f"{key} ({text}) is not in it" for key, text in prints.items() if key not in recorded.config]
    return Check(drift + unknown, legacy=True)


#: The way forward after a refusal: a plan or apply of ``present`` (``write``), a destroy (``delete``).
FORWARD = {
    "write": "To manage it as it is now, declare adopt: true (its fingerprint is then recorded anew).",
    "delete": (
        "If it should go, take it over first (its present state with adopt: true, applied once) or "
        "destroy it by hand."
    ),
}


def not_ours(what: str, result: Check, verb: str) -> str:
    """The refusal of a guest that does not carry its row's fingerprint; ``verb`` is ``write`` or
    ``delete``, what was not done."""
    done = f"nothing was {verb}{'ten' if verb == 'write' else 'd'}"
    if result.legacy:
        return (
            f"{what}: its ownership row was written before fingerprints existed, and the guest does not "
            f"match the declaration recorded with it: {'; '.join(result.differs)}. Nothing shows it is the "
            f"guest this minion made, so {done}. {FORWARD[verb]}"
        )
    return (
        f"{what} does not carry the fingerprint this minion recorded at its last write (MACs, volumes, "
        f"mount points): {'; '.join(result.differs)}. It may be another guest created at this vmid after "
        f"ours was destroyed, or ours changed by hand; {done}. {FORWARD[verb]}"
    )


def legacy_note(what: str) -> str:
    """What a plan says about a row without a fingerprint whose guest matches it exactly."""
    return (
        f"{what}: its ownership row was written before fingerprints existed; the guest matches the "
        "declaration recorded with it exactly, so its fingerprint (MACs, volumes, mount points) is "
        "recorded now"
    )


def unknown_volumes(family: Family, last: Declaration, live: Mapping[str, object]) -> list[str]:
    """The volumes of ``live`` its last declaration does not declare (``mp0 (local-lvm:… size=500G)``),
    ``unusedN`` included: a destroy deletes every volume the config names (pve-container
    ``src/PVE/LXC.pm`` ``destroy_lxc_container``; qemu-server ``PVE/QemuServer.pm``
    ``destroy_vm``, which removes every disk and ``unusedN`` the config names)."""
    prints = live_fingerprint(family, live)
    return [
        f"{key} ({text})"
        for key, text in prints.items()
        if family.keys.is_volume(key) and key not in last.config
    ]


def vmid_refusal(state: str, command: str, vmid: int, recorded: Mapping[str, object] | None) -> list[str]:
    """The refusal of a state whose recorded vmid is not ``vmid``: another vmid is another guest.
    ``state`` (``proxmox_lxc``) and ``command`` (``pct``) name the remedies."""
    was = (recorded or {}).get("vmid")
    if was is None or int(str(was)) == vmid:
        return []
    return [
        f"vmid: {was} -> {vmid} is a different guest. Declare it under a new state id; the old "
        f"guest is retained (run `{state}.absent` on it, or `{command} destroy {was}` by hand)."
    ]
