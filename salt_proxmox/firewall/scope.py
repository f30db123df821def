"""Where a firewall object lives: the scopes of pve-firewall's configuration files and API paths.

pve-firewall 6.0.4 (git 6f1311f) keeps one configuration per scope, each behind its own API path:

- ``cluster``: ``/etc/pve/firewall/cluster.fw``, ``/cluster/firewall`` (``PVE/API2/Firewall/Cluster.pm``);
- ``node/<node>``: ``/etc/pve/nodes/<node>/host.fw``, ``/nodes/{node}/firewall`` (``Host.pm``);
- ``vm/<vmid>`` and ``ct/<vmid>``: ``/etc/pve/firewall/<vmid>.fw``, ``/nodes/{node}/qemu/{vmid}/firewall``
  and ``/nodes/{node}/lxc/{vmid}/firewall`` (``VM.pm``), the node being the one the guest is on (the
  cluster's guest index, ``GET /cluster/resources?type=vm``).

Security groups live in the cluster's file (``[group <name>]``) and are a scope of rules only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.pve.client import api_path

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

#: pve-common ``pve-node`` (``PVE::JSONSchema::pve_verify_node_name``): a host name label.
_NODE = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?\Z")
#: pve-common ``pve-vmid``: 100 to 999999999.
_VMID = re.compile(r"^[1-9][0-9]{2,8}\Z")
#: The guest kinds by the word a scope uses and the ``type`` of the guest index.
GUEST_TYPES = {"vm": "qemu", "ct": "lxc"}


@dataclass(frozen=True)
class Scope:
    """One parsed scope: ``kind`` (``cluster``, ``node``, ``vm``, ``ct``) and its ``node`` or ``vmid``."""

    kind: str
    node: str = ""
    vmid: int = 0

    def __str__(self) -> str:
        if self.kind == "cluster":
            return "cluster"
        if self.kind == "node":
            return f"node/{self.node}"
        return f"{self.kind}/{self.vmid}"

    @property
    def guest(self) -> bool:
        return self.kind in GUEST_TYPES

    @property
    def label(self) -> str:
        """How a sentence names it: ``cluster``, ``node pve1``, ``VM 510``, ``CT 120``."""
        if self.kind == "cluster":
            return "cluster"
        if self.kind == "node":
            return f"node {self.node}"
        return f"{self.kind.upper()} {self.vmid}"


def parse(value: object, allowed: tuple[str, ...] = ("cluster", "node", "vm", "ct")) -> Scope:
    """``cluster``, ``node/<node>``, ``vm/<vmid>`` or ``ct/<vmid>`` → Scope, of a kind in ``allowed``.

    Raises DeclarationError naming the scope and the spellings taken."""
    taken = ", ".join(f"{kind}/<{'node' if kind == 'node' else 'vmid'}>" if kind != "cluster" else kind
                      for kind in allowed)  # fmt: skip
    if not isinstance(value, str):
        raise DeclarationError(f"scope: expected one of {taken} (text), got {value!r}")
    kind, slash, rest = value.partition("/")
    if kind not in allowed:
        raise DeclarationError(f"scope: {value!r}: expected one of {taken}")
    if kind == "cluster":
        if slash:
            raise DeclarationError(f"scope: {value!r}: the cluster scope is spelled cluster")
        return Scope("cluster")
    if kind == "node":
        if not _NODE.match(rest):
            raise DeclarationError(f"scope: {value!r}: {rest!r} is not a node name")
        return Scope("node", node=rest)
    if not _VMID.match(rest):
        raise DeclarationError(f"scope: {value!r}: {rest!r} is not a vmid (100 to 999999999)")
    return Scope(kind, vmid=int(rest))


def base(ctx: PveContext, scope: Scope) -> str:
    """The API path of ``scope``'s firewall (``cluster/firewall``, ``nodes/pve1/firewall``,
    ``nodes/pve1/qemu/510/firewall``), a guest's node read from the run's guest index.

    Raises Refused when the index does not list the guest or lists it as the other kind, and what
    ``guest.absence.hinted_guest`` raises (PveError, PveMalformed, PveUnreachable)."""
    from salt_proxmox.guest.absence import hinted_guest

    if scope.kind == "cluster":
        return "cluster/firewall"
    if scope.kind == "node":
        return f"nodes/{api_path(scope.node)}/firewall"
    row = hinted_guest(ctx, scope.vmid, ctx.broker.read())
    if row is None:
        raise Refused(
            f"{scope}: the cluster's guest index lists no guest {scope.vmid} (or the read credential may not "
            "audit it: VM.Audit), so its firewall cannot be read. Create the guest first (declare its "
            "firewall after it, with a require), or grant the read token VM.Audit on it; nothing was written."
        )
    if row.get("type") != GUEST_TYPES[scope.kind]:
        other = "ct" if scope.kind == "vm" else "vm"
        raise Refused(
            f"{scope}: guest {scope.vmid} is a {row.get('type')} guest: declare it as {other}/{scope.vmid}"
        )
    return f"nodes/{api_path(str(row['node']))}/{row['type']}/{scope.vmid}/firewall"
