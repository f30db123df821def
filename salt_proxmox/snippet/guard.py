"""A guest's declared ``cicustom`` or ``hookscript`` naming a snippet (``registry.GUEST_CHECKS``),
checked at plan before the guest is judged: each ``<storage>:snippets/<file>`` it names must exist on
the guest's node or be declared by a snippet state earlier in this run.

Why: PVE reads a VM's ``cicustom`` snippets when it builds the cloud-init drive at the VM's start, on
its node (qemu-server ``QemuServer/Cloudinit.pm`` ``get_custom_cloudinit_files``,
``read_cloudinit_snippets_file``), and runs a ``hookscript`` there at every start and stop, refusing to set
one that is missing or not executable (pve-guest-common ``GuestHelpers.pm`` ``check_hookscript``:
``script '<volid>' does not exist``, ``script '<volid>' is not executable``). So:

- a snippet this run declares (``snippet.lifecycle.decide`` remembers it) is there once it runs; but on
  a storage that is not shared it is written on the root lane's node only, and a guest on another node
  naming it is refused; a hookscript naming one not declared ``executable: true`` is refused;
- any other is looked up where PVE will look: the snippets of the storage as the guest's node lists
  them (``GET nodes/<node>/storage/<storage>/content?content=snippets``, pve-storage
  ``API2/Storage/Content.pm`` ``index``), sent through the root lane: PVE lists a snippet only to a
  user with ``Datastore.Allocate`` on the storage (``PVE/Storage.pm`` ``check_volume_access``: snippets
  are not among the types ``Datastore.Audit`` may see), which root@pam has. Not listed: refused. Without
  a lane nothing can prove it missing, and the plan says it was not checked; a lane whose preconditions
  fail, or a listing that fails, refuses (a failed read is neither absence nor presence).
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.guest.lane import lane_check
from salt_proxmox.pve.client import api_path
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple.spec import planned
from salt_proxmox.snippet.declare import FAMILY, MODES, VOLID, snippet_volids


def _listed(ctx: PveContext, node: str, storage: str) -> set[str]:
    """The snippet volids ``node`` lists on ``storage``, through the lane (module docstring)."""
    assert ctx.lane is not None
    rows = ctx.lane.request(
        "GET", api_path("nodes", node, "storage", storage, "content"), params={"content": "snippets"}
    )
    return (
        {str(row.get("volid")) for row in rows or [] if isinstance(row, dict)}
        if isinstance(rows, list)
        else set()
    )


def _declared(volid: str, values, key: str, label: str, node: str) -> str | None:
    """The refusal for a snippet this run declares, or None."""
    if not values.get("shared") and values.get("node") != node:
        return (
            f"{key}: {volid} is on a storage that is not shared and is written on node {values.get('node')} "
            f"only, but {label} runs on node {node}, where PVE would not find it. Put the snippet on a "
            "shared "
            "storage, or run the states on that node."
        )
    if key == "hookscript" and values.get("mode") != MODES[True]:
        return (
            f"hookscript: {volid} is declared without executable: true, and PVE refuses a hookscript that is "
            "not executable (GuestHelpers.pm check_hookscript). Declare it executable: true."
        )
    return None


def named(
    ctx: PveContext, kind: str, vmid: object, node: object, pool: object, value: object, key: str = "cicustom"
) -> tuple[list[str], list[str]]:
    """``(refusals, notes)`` for one guest declaration's ``key`` (``cicustom`` or ``hookscript``) with
    ``value`` (None: not declared): module docstring. Never raises for a known failure (a failed read
    refuses, naming it)."""
    volids = snippet_volids(key, value)
    if not volids or not isinstance(node, str):
        return [], []
    label = f"{'CT' if kind == 'lxc' else 'VM'} {vmid}"
    ours = planned(ctx, FAMILY)
    refusals: list[str] = []
    notes: list[str] = []
    for volid in volids:
        if volid in ours:
            refused = _declared(volid, ours[volid], key, label, node)
            refusals += [refused] if refused else []
            continue
        storage = VOLID.match(volid).group(1)  # type: ignore[union-attr]
        if ctx.lane is None:
            notes.append(
                f"{key}: {volid} is not declared in this run (proxmox:snippets), and PVE lists snippets only "
                "to root (Storage.pm check_volume_access), so without a root lane whether it exists on node "
                f"{node} was not checked."
            )
            continue
        try:
            broken = lane_check(ctx)[1]
            listed = set() if broken else _listed(ctx, node, storage)
        except SaltProxmoxError as exc:
            broken = [str(exc)]
        if broken:
            refusals.append(
                f"{key}: whether {volid} exists on node {node} cannot be read: {' '.join(broken)}"
            )
            continue
        if volid not in listed:
            refusals.append(
                f"{key}: {volid} does not exist on node {node}, and no state of this run declares it: PVE "
                f"would not find it when {label} starts. Declare it (proxmox:snippets:{storage}:"
                f"{volid.partition('/')[2]}) or name one that exists."
            )
    return refusals, notes


def hookscript(
    ctx: PveContext, kind: str, vmid: object, node: object, pool: object, value: object
) -> tuple[list[str], list[str]]:
    """``named`` for a guest's ``hookscript``."""
    return named(ctx, kind, vmid, node, pool, value, "hookscript")


def guest_check(
    ctx: PveContext, kind: str, vmid: object, node: object, pool: object, declared: Mapping[str, object]
) -> tuple[list[str], list[str]]:
    """``registry.GUEST_CHECKS``' check of one guest declaration: ``named`` for its ``cicustom`` and
    ``hookscript``."""
    refusals: list[str] = []
    notes: list[str] = []
    for key in ("cicustom", "hookscript"):
        refused, noted = named(ctx, kind, vmid, node, pool, declared.get(key), key)
        refusals += refused
        notes += noted
    return refusals, notes
