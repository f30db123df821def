"""How a guest family is named, in one place: the judge, the remedies and the messages of the family,
and the shared lifecycle through ``guest.family.Family``, read these words and never spell them.

- ``kind``: the API path segment and the ownership row family (``lxc``/``qemu``);
- ``state``: the Salt state module (``proxmox_lxc``/``proxmox_qemu``), named in remedies;
- ``noun``: ``container``/``VM``;
- ``label``: how PVE names one guest in its messages (``CT 100``, ``VM 100``);
- ``command``: the node's CLI named in remedies (``pct``/``qm``);
- ``ha_type``: the type of its HA resource id, pve-ha-manager ``PVE::HA::Resources::PVECT``/``PVEVM``
  ``type`` (``ct``/``vm``, as in ``ct:100``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Words:
    """One guest family's words; see the module docstring."""

    kind: str
    state: str
    noun: str
    label: str
    command: str
    ha_type: str

    def what(self, vmid: int, node: str) -> str:
        """``CT 100 on pve1``: how messages name one guest."""
        return f"{self.label} {vmid} on {node}"
