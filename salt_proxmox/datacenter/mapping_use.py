"""Which resource mapping a VM's device key names, and the check of a VM declaration's mapped devices.

A VM names a mapping with ``hostpciN: mapping=<id>`` (qemu-server ``PVE/QemuServer/PCI.pm``, the
``pve-qm-hostpci`` format, ``host`` its default key), ``usbN: mapping=<id>`` (``USB.pm``) or
``virtiofsN: <id>`` (``Virtiofs.pm``, ``dirid`` its default key). PVE takes the VM's config without
looking at the mapping (``API2/Qemu.pm`` ``check_hostpci_perm``/``check_usb_perm`` check Mapping.Use
only) and refuses the start on a node it has no entry for: ``find_on_current_node`` finds none, so
``PCI device mapping not found for '<id>'`` (``USB device mapping …``; ``Mapping/Dir.pm``: ``No
directory mapping for node <node>.``). So a VM state naming a mapping is refused at plan when the
mapping neither exists nor is declared by this run, or has no entry for the VM's node
(``guest_check``, called by the guest lifecycle through ``registry.GUEST_CHECKS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.datacenter.mappings import canonical_entry, entry_node, named_mapping
from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError
from salt_proxmox.simple.spec import planned

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext


def _no_entry(kind: str, mapping: str, node: str) -> str:
    """PVE's words at the start of a VM on a node the mapping has no entry for."""
    if kind == "dir":
        return f"No directory mapping for node {node}."  # Mapping/Dir.pm find_on_current_node
    return f"{kind.upper()} device mapping not found for '{mapping}'"  # QemuServer/PCI.pm, USB.pm


def _entries(ctx: PveContext, kind: str, mapping: str) -> tuple[list[str] | None, str]:
    """``(the mapping's canonical entries, '')``, this run's declaration first, else the live one; ``(None,
    why)`` when it does not exist or cannot be read."""
    values = planned(ctx, f"mapping_{kind}").get(mapping)
    if values is not None:
        return list(values.get("map") or []), ""
    path = api_path("cluster", "mapping", kind, mapping)
    try:
        data = ctx.client.request("GET", path, ctx.broker.read())
    except PveError as exc:
        if exc.status == 500 and exc.message == f"mapping '{mapping}' not found":
            return None, (
                f"{kind} mapping {mapping} does not exist and this run declares none; declare it under "
                f"proxmox:mappings:{kind} (it runs before the VMs)"
            )
        if exc.status == 403:
            return None, (
                f"{kind} mapping {mapping} cannot be read ({exc.message}); grant the read token "
                f"Mapping.Audit on /mapping/{kind}/{mapping}"
            )
        raise
    raw = data.get("map") if isinstance(data, Mapping) else None
    entries = []
    for item in [raw] if isinstance(raw, str) else raw or []:
        try:
            entries.append(canonical_entry(kind, item, declared=False))
        except ValueError:
            continue
    return entries, ""


def guest_check(
    ctx: PveContext, kind: str, vmid: object, node: object, pool: object, declared: Mapping[str, object]
) -> tuple[list[str], list[str]]:
    """``(refusals, notes)`` for a guest declaration's device keys naming a mapping (module docstring):
    each names the key, the mapping and the node. Containers take no mapping. Never raises for a known
    failure: a mapping that cannot be read refuses the key naming why."""
    if kind != "qemu":
        return [], []
    refusals = []
    for key, value in sorted(declared.items()):
        named = named_mapping(str(key), value)
        if named is None:
            continue
        mapping_kind, mapping = named
        try:
            entries, why = _entries(ctx, mapping_kind, mapping)
        except SaltProxmoxError as exc:
            entries, why = None, f"{mapping_kind} mapping {mapping} cannot be read: {exc}"
        if entries is None:
            refusals.append(f"{key}: {why}. PVE takes the config and refuses the VM's start.")
            continue
        nodes = sorted({entry_node(entry) for entry in entries})
        if isinstance(node, str) and node not in nodes:
            refusals.append(
                f"{key}: {mapping_kind} mapping {mapping} has no entry for node {node} (it maps "
                f"{', '.join(nodes) or 'no node'}), so PVE refuses the VM's start there "
                f"(find_on_current_node: `{_no_entry(mapping_kind, mapping, node)}`). Add an entry for "
                f"{node} to the mapping's map, or place the VM on a node it maps."
            )
    return refusals, []
