"""What the kinds of ``proxmox_node`` share: a node named by the state, which must be in the cluster, and
an object PVE always has and never deletes.

- Identity is the node (``name``, pve-common ``JSONSchema.pm`` ``pve_verify_node_name``). A node the
  cluster does not list (``GET /nodes``, pve-manager ``PVE/API2/Nodes.pm`` ``index``) is refused at plan
  by name: PVE would proxy the read to it (``proxyto => 'node'``) and fail, which is no absence.
- A node's resolv.conf, hosts file and time zone always exist: nothing is ever absent, so the first
  write needs ``adopt: true`` (nothing live is taken over silently), and ``ensure: absent`` forgets the
  ownership row and writes nothing. ``removal: destroy`` is refused by name: PVE has no DELETE for
  ``/nodes/{node}/dns``, ``/hosts`` or ``/time`` (``Nodes.pm`` registers GET and PUT/POST only).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.outcome import Outcome
    from salt_proxmox.run.context import PveContext

#: pve-common ``src/PVE/JSONSchema.pm`` ``pve_verify_node_name`` (one DNS label).
NODE = re.compile(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?)\Z")


def identify_node(
    state_id: str, target: str, name: object, extra: Mapping[str, object], *, what: str, has: str
) -> Declared:
    """The ``what`` (``DNS settings``) of node ``name``. Raises DeclarationError for an unknown key or a
    name that is no node name (``pve_verify_node_name``)."""
    if extra:
        raise DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: a node's {what} take {has}")
    if not isinstance(name, str) or not NODE.match(name):
        raise DeclarationError(
            f"name: {shown(name)} is not a node name (pve-common JSONSchema.pm pve_verify_node_name)"
        )
    return Declared(state_id, target, identity=name, label=f"node {name} {what}", names={"name": name})


def cluster_nodes(ctx: PveContext) -> list[str]:
    """The nodes ``GET /nodes`` lists (pve-manager ``PVE/API2/Nodes.pm`` ``index``), read once per run
    with the read credential. Raises PveError, PveMalformed (another shape), PveUnreachable."""
    key = f"salt_proxmox.node.nodes/{ctx.target.name}"
    if key not in ctx.memo:
        data = ctx.client.request("GET", "nodes", ctx.broker.read())
        try:
            names = sorted(str(row["node"]) for row in rows_of(data))
        except (KeyError, ValueError) as exc:
            raise PveMalformed("GET", "nodes", f"expected rows naming each node ({exc})") from None
        ctx.memo[key] = names
    return list(ctx.memo[key])


def resolve(ctx: PveContext, arguments: Mapping[str, object]) -> tuple[dict, list[str]]:
    """The arguments as they are once the node ``name`` is known to be in the cluster. Raises
    DeclarationError naming ``name`` for a node ``GET /nodes`` does not list, and what that read raises
    (a failed read is never taken for a missing node)."""
    name = arguments.get("name")
    if isinstance(name, str):
        nodes = cluster_nodes(ctx)
        if name not in nodes:
            raise DeclarationError(
                f"name: node {name} is not in the cluster (GET /nodes lists {', '.join(nodes) or 'none'}): "
                "PVE proxies a node's settings to the node itself (Nodes.pm proxyto => 'node')"
            )
    return dict(arguments), []


def never_absent(error: object, decl: Declared) -> bool:
    """``is_absent``: no answer proves a node's settings absent; they always exist."""
    return False


def no_delete(what: str):
    """A ``delete`` for a kind PVE cannot delete: ``absent`` refuses ``removal: destroy`` before it."""

    def delete(decl: Declared, live: Mapping[str, object]):
        raise DeclarationError(f"removal: a node's {what} cannot be deleted (PVE has no DELETE for them)")

    return delete


def absent(
    ctx: PveContext, spec: ObjectSpec, test: bool, state_id: str, removal: object = "retain", **names
) -> Outcome:
    """``ensure: absent``: forget the ownership row, write nothing (``simple.lifecycle.absent`` with
    ``removal: retain``). ``removal: destroy`` is refused naming why, nothing read or written: a node's
    DNS settings, hosts file and time zone always exist and PVE deletes none of them (pve-manager
    ``PVE/API2/Nodes.pm`` has no DELETE method for ``dns``, ``hosts`` or ``time``)."""
    from salt_proxmox.outcome import Outcome
    from salt_proxmox.simple import lifecycle

    if removal == "destroy":
        return Outcome().fail(
            f"removal: destroy is refused: a node's {spec.noun} cannot be deleted (pve-manager "
            f"PVE/API2/Nodes.pm has no DELETE for /nodes/{{node}}/{spec.family.removeprefix('node_')}). "
            "Declare it absent without removal to stop managing it, or declare the values it should hold. "
            "Nothing was written."
        )
    return lifecycle.absent(ctx, spec, test, state_id, removal=removal, **names)


def node_export(row: Mapping[str, object]) -> Mapping[str, object] | None:
    """``export_names``: a ``GET /nodes`` row names its node."""
    value = row.get("node")
    return {"name": value} if isinstance(value, str) and value else None


def setting_spec(noun: str, absence: str, **fields: object) -> ObjectSpec:
    """The ``ObjectSpec`` of one of a node's settings (``dns``, ``hosts``, ``time``) with what they all
    share: never absent, never deleted (``absence``: why, with its pve-manager ``PVE/API2/Nodes.pm``
    method), node names resolved against the cluster's, exported one entry per ``GET /nodes`` row.
    ``fields``: the rest of the spec (``family``, ``declare``, ``read``, the endpoints, ...)."""
    return ObjectSpec(
        noun=noun,
        absence=absence,
        is_absent=never_absent,
        delete=no_delete(noun),
        resolve=resolve,
        export_names=node_export,
        export_listings=lambda ctx: [(Call("GET", "nodes"), {})],
        **fields,
    )
