"""A VM's ``machine`` and the options only some PVE releases know (pure).

qemu-server ``PVE/QemuServer/Machine.pm``: a Windows guest's unversioned machine type is pinned by PVE
(``check_and_pin_machine_string``), a value PVE owns, never drift; the ``agent``/``machine`` options
of qemu-server 9 are refused on a PVE 8 cluster, whose ``parse_property_string`` rejects them.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.pve.facts import Release
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.change import QemuChange
from salt_proxmox.qemu.props import QemuDeclaration
from salt_proxmox.wire.propstring import canonical_option, pairs


def machine_options(value: str) -> dict[str, str]:
    """A ``machine`` value as a map (``$machine_fmt``, ``type`` the default key), booleans canonical."""
    return {
        key: canonical_option(key, raw, schema.MACHINE)
        for key, raw in pairs(value, schema.MACHINE.default_key)
    }


def machine_pin_notes(decl: QemuDeclaration, change: QemuChange, machine: str | None) -> list[str]:
    """A plan line when the write turns ``ostype`` Windows and ``machine`` is neither declared nor
    pinned: ``update_vm_api`` then pins it to the latest machine version (``Machine.pm``
    ``check_and_pin_machine_string``), a value PVE owns, not drift."""
    ostype = change.put.get("ostype")
    if not ostype or "machine" in decl.config or not schema.windows_version(ostype):
        return []
    kind = machine_options(machine).get("type", "pc") if machine else "pc"
    if kind not in schema.PINNED:
        return []
    return [
        f"VM {decl.vmid} on {decl.node}: ostype {ostype} is Windows, so PVE pins machine {kind} to its "
        "latest version (qemu-server Machine.pm check_and_pin_machine_string); machine is then PVE's, "
        "not drift"
    ]


def machine_same(want: str, have: str, windows: bool) -> bool:
    """Whether the declared ``machine`` is the live one. For a Windows guest an unversioned ``pc``,
    ``q35`` or ``virt`` is the version PVE pinned it to (``Machine.pm``
    ``check_and_pin_machine_string`` at ``create_vm``, and at ``update_vm_api`` when ``ostype``
    turns Windows: "always pin Windows' machine version on create"), never drift."""
    a, b = machine_options(want), machine_options(have)
    pinned = schema.PINNED.get(a.get("type", ""))
    if windows and pinned is not None and pinned.fullmatch(b.get("type", "")):
        a["type"] = b["type"]
    return a == b


def release_refusals(values: Mapping[str, str], release: Release) -> list[str]:
    """Options of the ``agent``/``machine`` values in ``values`` (key -> value to write) that
    ``release`` does not know (``facts.NEW_IN_9``: the agent's ``freeze-fs``/``guest-fsfreeze``,
    the machine's ``aw-bits``), one sentence each; qemu-server 8's ``parse_property_string``
    refuses them (``invalid key in comma-separated list property``)."""
    reasons = []
    for key, form in (("agent", schema.AGENT), ("machine", schema.MACHINE)):
        if not values.get(key):
            continue
        names = [name for name, _ in pairs(values[key], form.default_key)]
        for option in release.unknown_options(key, names):
            other = " (PVE 8 names it freeze-fs-on-backup)" if key == "agent" else ""
            reasons.append(
                f"{key}: {option}= is an option of PVE 9{other}; this cluster runs PVE {release.release}, "
                f"whose qemu-server refuses it (`invalid key in comma-separated list property: {option}`)."
            )
    return reasons


def needs_release(values: Mapping[str, str]) -> bool:
    """True when ``values`` name an option only some releases know (``release_refusals``)."""
    return bool(release_refusals(values, Release("8.0")))
