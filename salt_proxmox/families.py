"""The guest families this project manages, by the ``type`` PVE's guest index gives them (``lxc``,
``qemu``): what the ad-hoc guest calls (``proxmox.guest_*``, ``guest.power``) look a guest's family
up in. A family is added here once it exists; a guest of a type not listed is refused by name."""

from __future__ import annotations

from salt_proxmox.guest.family import Family
from salt_proxmox.lxc.family import LXC
from salt_proxmox.qemu.family import QEMU

#: ``{kind: family}``.
GUESTS: dict[str, Family] = {LXC.kind: LXC, QEMU.kind: QEMU}
