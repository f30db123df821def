"""A guest's fingerprint: values PVE generated for one guest, which a guest created again at the same
vmid will not share (docs/design.md §8 "Fingerprint"). Pure; shared by guest families.

A vmid is only a number: when a guest is destroyed by hand, anyone may create another at the same
vmid, with the same hostname and memory. An ownership row must not authorize writes onto that
guest. So the row keeps, from the read-back of this minion's own create or write (or from the read
at an adoption), a mapping ``{config key: identifying text}``:

- each ``netN``: its MAC. PVE draws it at random when the declaration gives none
  (pve-container ``src/PVE/LXC/Config.pm`` ``parse_lxc_network``: ``random_ether_addr`` with the
  datacenter ``mac_prefix``; qemu-server ``PVE::QemuServer::Network`` likewise per NIC), and a
  clone or a ``--unique`` restore draws new ones;
- each volume key (LXC ``rootfs``, ``mpN``, ``unusedN``): the volume id and its size as PVE
  prints them (``local-lvm:vm-150-disk-1 size=500G``), a bind or device mount point by its path;
  so the set of mount points is part of it. A re-created guest usually gets the same volume
  names (pve-storage picks the first free ``vm-<vmid>-disk-N``), so volumes alone prove little,
  but another size or another set of mount points does;
- for QEMU later: ``vmgenid``, ``smbios1`` (its ``uuid``) and ``meta`` (its ``ctime``), which
  qemu-server generates once per VM (``GuestKeys.generated``).

The live guest carries the fingerprint when every recorded key is there with the same text and no
key of those kinds is there that was not recorded. ``GuestKeys`` says, per family, which keys count
and how their text is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from salt_proxmox.ownership.rows import FINGERPRINT

#: The row field that holds a fingerprint (its shape is a row rule: ``ownership``).
FIELD = FINGERPRINT


@dataclass(frozen=True)
class GuestKeys:
    """Which config keys of one guest family carry a fingerprint, and how each is read.

    - ``nic``: the NIC keys (``netN``); ``mac_of(value)`` the MAC in one (None: none);
    - ``volume``: the volume keys (``rootfs``, ``mpN``, ``unusedN``); ``volume_of(value)`` the
      identifying text of one (volume id and size, or a host path);
    - ``generated``: keys whose whole value PVE generates once (QEMU ``vmgenid``); ``pick`` reads
      the generated part of one (``smbios1`` → its ``uuid``).

    ``mac_of``/``volume_of``/``pick`` raise ValueError for a value they cannot read.
    """

    nic: re.Pattern[str]
    mac_of: Callable[[str], str | None]
    volume: re.Pattern[str]
    volume_of: Callable[[str], str]
    generated: tuple[str, ...] = ()
    pick: Callable[[str, str], str | None] = lambda _key, value: value

    def is_volume(self, key: str) -> bool:
        """True for a volume key (``rootfs``, ``mp0``, ``unused0``)."""
        return bool(self.volume.fullmatch(key))

    def counts(self, key: str) -> bool:
        """True for a key the fingerprint holds."""
        return bool(self.nic.fullmatch(key) or self.volume.fullmatch(key) or key in self.generated)


def fingerprint(config: Mapping[str, object], keys: GuestKeys) -> dict[str, str]:
    """``{key: identifying text}`` of a live config (``GET .../config`` data), sorted by key.

    A value that cannot be read is kept as PVE printed it, so it still compares."""
    out: dict[str, str] = {}
    for key in sorted(config):
        value = config[key]
        if value is None or not keys.counts(key):
            continue
        text = str(value)
        try:
            if keys.nic.fullmatch(key):
                found = keys.mac_of(text)
            elif keys.is_volume(key):
                found = keys.volume_of(text)
            else:
                found = keys.pick(key, text)
        except ValueError:
            found = text
        if found is not None:
            out[key] = found
    return out


def differences(recorded: Mapping[str, str], live: Mapping[str, str]) -> list[str]:
    """What a live fingerprint has that the recorded one does not, one phrase per key:
    ``net0 is BC:24:11:00:00:02, recorded BC:24:11:00:00:01``; ``mp0 (… size=500G) was not
    recorded``; ``mp1 (…) is gone``. Empty when they are the same."""
    out = []
    for key in sorted(set(recorded) | set(live), key=_natural):
        was, now = recorded.get(key), live.get(key)
        if was == now:
            continue
        if was is None:
            out.append(f"{key} ({now}) was not recorded")
        elif now is None:
            out.append(f"{key} ({was}) is gone")
        else:
            out.append(f"{key} is {now}, recorded {was}")
    return out


def _natural(key: str) -> tuple[str, int]:
    match = re.fullmatch(r"([a-z]+)(\d*)", key)
    if not match:
        return key, -1
    return match.group(1), int(match.group(2) or -1)
