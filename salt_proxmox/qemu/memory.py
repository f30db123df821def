"""A VM's memory, balloon and memory hot-plug, judged together (pure).

qemu-server ``PVE/API2/Qemu.pm`` ``update_vm_api`` and ``PVE/QemuServer/Memory.pm`` (``config``,
``qemu_memory_hotplug``, ``foreach_dimm``): what PVE refuses, or what would keep the VM from starting.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.guest.rules import compared_as
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.props import memory_mib

#: The keys whose values ``memory_refusals`` judges together.
MEMORY_KEYS = frozenset({"memory", "balloon", "hotplug", "numa", "sockets"})
#: ``PVE/QemuServer/Memory.pm`` ``$STATICMEM``: the MiB a VM with memory hot-plug boots with; the
#: rest is DIMMs.
STATIC_MEMORY = 1024


def dimm_steps(memory: int, static: int, dimm: int) -> tuple[int, int, int]:
    """``(below, reached, size)`` of ``Memory.pm`` ``foreach_dimm`` for ``memory`` MiB: DIMMs of
    ``dimm`` MiB (512, or 1024 with 1 GiB hugepages) are added 32 at a time, their size doubling after
    each 32, from ``static`` until the total reaches ``memory``; ``reached`` is that total, ``below``
    the one before it and ``size`` the last DIMM's. PVE refuses ``memory`` unless ``reached`` equals it."""
    total = below = static
    if total >= memory:
        return below, total, dimm
    for _ in range(8):
        for _ in range(32):
            below, total = total, total + dimm
            if total >= memory:
                return below, total, dimm
        dimm *= 2
    return below, total, dimm


def memory_refusals(after: Mapping[str, str | None], written: bool = True) -> list[str]:
    """Why a VM with the config values ``after`` (``memory``, ``balloon``, ``hotplug``, ``numa``,
    ``sockets``, ``hugepages`` as they will be once written; None: absent) cannot take them, in PVE's
    words; ``written``: ``memory`` or ``balloon`` is in the write.

    - ``PVE/API2/Qemu.pm`` ``update_vm_api`` (when ``memory`` or ``balloon`` is written): "balloon
      value too large (must be smaller than assigned memory)" when ``balloon`` exceeds ``memory``.
    - ``PVE/QemuServer/Memory.pm`` ``config`` (the VM's start) and ``qemu_memory_hotplug`` (a live
      change), with ``memory`` in ``hotplug``: "NUMA needs to be enabled for memory hotplug";
      "minimum memory must be 1024MB" (``$STATICMEM``, times ``sockets`` with ``hugepages: 1024``);
      "memory size (N) must be aligned to D for hotplugging" (``foreach_dimm``'s DIMM sizes).
    """
    reasons = []
    try:
        memory = memory_mib(after.get("memory") or "512")
        balloon = int(float(after.get("balloon") or 0))
        sockets = int(float(after.get("sockets") or 1))
        features = schema.hotplug_set(after.get("hotplug"))
    except ValueError:
        return []
    if written and balloon and balloon > memory:
        reasons.append(
            f"balloon: {balloon} MiB: balloon value too large (must be smaller than assigned memory) "
            f"(qemu-server API2/Qemu.pm update_vm_api); declare balloon at most memory ({memory} MiB)."
        )
    if "memory" not in features:
        return reasons
    if compared_as("flag", after.get("numa") or "0") != "1":
        reasons.append(
            "hotplug: memory hot-plug needs numa: 1 (qemu-server Memory.pm config: `NUMA needs to be enabled "
            "for memory hotplug`, so the VM would not start); declare numa: 1, or drop memory from hotplug."
        )
    huge = after.get("hugepages") == "1024"
    static = STATIC_MEMORY * sockets if huge else STATIC_MEMORY
    if memory < static:
        reasons.append(
            f"memory: {memory} MiB with memory hot-plug: minimum memory must be {static}MB (qemu-server "
            "Memory.pm config/qemu_memory_hotplug); declare at least that, or drop memory from hotplug."
        )
        return reasons
    below, reached, size = dimm_steps(memory, static, 1024 if huge else 512)
    if reached != memory:
        reasons.append(
            f"memory: {memory} MiB with memory hot-plug: memory size ({memory}) must be aligned to {size} "
            f"for hotplugging (qemu-server Memory.pm foreach_dimm); declare {below} or {reached} MiB."
        )
    return reasons
