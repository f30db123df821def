"""A VM change (pure): ``QemuChange``, what one config write sends beyond the container's, and the
refusal of a value only root@pam may set, naming the ``qm set`` to run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from salt_proxmox.guest.change import Change
from salt_proxmox.guest.rules import root_only_at_create_refusal, root_only_refusal
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.props import QemuDeclaration


@dataclass(frozen=True)
class QemuChange(Change):
    """``Change`` plus ``secrets`` (keys whose declared secret value the write sends, from
    ``QemuDeclaration.secrets``), ``uses`` (``Mapping.Use`` privileges the write needs), ``notes``
    (plan lines on what PVE does with a write beyond storing it) and ``after`` (keys written by a
    second digest-guarded config write once the first is done: a declared ``boot`` beside a CD-ROM
    PVE appends to it, see ``boot_order_effects``)."""

    secrets: list[str] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    after: dict[str, str] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        """True when applying this change sends anything to PVE."""
        return bool(self.put or self.clear or self.resize or self.secrets or self.after)


def root_only(decl: QemuDeclaration, key: str, value: str, why: str) -> str:
    """A refusal of a change to an existing VM, naming the ``qm set`` to run; ``''`` names ``--delete``."""
    source = " (qemu-server API2/Qemu.pm check_vm_modify_config_perm)"
    return root_only_refusal(schema.WORDS, decl.vmid, decl.node, key, value, why, source)


def root_only_at_create(decl: QemuDeclaration, key: str, value: str, why: str) -> str:
    """A refusal of a root-only value on a VM that does not exist yet: create it as root@pam and
    adopt it, or create it without and ``qm set`` it after (``root_only_at_create_refusal``)."""
    return root_only_at_create_refusal(schema.WORDS, decl.vmid, decl.node, key, value, why)
