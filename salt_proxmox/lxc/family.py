"""Containers as a guest family (``guest.family.Family``): what the shared guest lifecycle needs to
know of them, from pve-container's own rules.

- API: ``/nodes/{node}/lxc/{vmid}`` (pve-container ``src/PVE/API2/LXC.pm``); remedies name ``pct``.
- Fingerprint keys (``KEYS``): the MAC PVE drew for each ``netN``, the volume id and size of
  ``rootfs``, each ``mpN`` and ``unusedN`` (pve-container ``src/PVE/LXC/Config.pm``: ``netN``
  ``$netconf_desc``, ``rootfs``/``mpN`` ``$mp_desc``, ``unusedN`` ``$unused_desc``).
- Hotplug: ``schema.applies_live`` (``vmconfig_hotplug_pending``).
- Create: one ``POST /nodes/{node}/lxc`` task (``create_vm``) from an ``ostemplate``, with the
  create secrets (``schema.CREATE_SECRETS``) in that one form and nowhere else. A privileged
  create on PVE 9 needs Sys.Modify on ``/`` (``lxc.refusals``): checked at plan with the read
  credential when it can be, and by the minted credential itself before the POST.
- Refusals at plan: ``judge.create_refusals`` for a create, ``judge.release_refusals`` for options
  the cluster's release does not know, ``judge.identity_refusals`` for another vmid or template.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from salt_proxmox.access import privileges
from salt_proxmox.guest.family import CreatePlan, CreateStep, Family
from salt_proxmox.guest.fingerprint import GuestKeys
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.lxc import judge, schema
from salt_proxmox.lxc.props import LxcDeclaration, parse_declaration
from salt_proxmox.lxc.refusals import check_own_sys_modify, privileged_create_check
from salt_proxmox.lxc.schema import parse_mountpoint
from salt_proxmox.pve.client import Credential, api_path
from salt_proxmox.pve.constraints import check_form
from salt_proxmox.pve.facts import Release, release
from salt_proxmox.wire.propstring import pairs
from salt_proxmox.wire.volumes import size_option

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.change import Change
    from salt_proxmox.run.context import PveContext


def _mac(value: str) -> str | None:
    """The ``hwaddr`` of a ``netN`` value, upper-cased as PVE prints it (pve-container
    ``Config.pm`` ``$netconf_desc`` hwaddr, format ``mac-addr``)."""
    mac = dict(pairs(value)).get("hwaddr")
    return mac.upper() if mac else None


def _volume(value: str) -> str:
    """``<volume id> size=<size>`` of a ``rootfs``/``mpN``/``unusedN`` value (``unusedN`` holds a
    bare volume id), or the path of a bind or device mount point."""
    volume = parse_mountpoint(value)
    size = volume.options.get("size")
    return f"{volume.volume} size={size}" if size else volume.volume


#: The container keys of a fingerprint (pve-container ``Config.pm``: ``netN`` ``$netconf_desc``,
#: ``rootfs``/``mpN`` ``$mp_desc``, ``unusedN`` ``$unused_desc``).
KEYS = GuestKeys(
    nic=re.compile(r"net\d+", re.ASCII),
    mac_of=_mac,
    volume=re.compile(r"rootfs|mp\d+|unused\d+", re.ASCII),
    volume_of=_volume,
)


def _needs_sys_modify(decl: LxcDeclaration, cluster: Release) -> bool:
    """A create PVE lets only a caller with Sys.Modify on / make (``lxc.refusals``)."""
    return cluster.privileged_create_needs_sys_modify and not judge.creates_unprivileged(decl, cluster)


def plan_create(ctx: PveContext, decl: LxcDeclaration) -> CreatePlan:
    """What a plan says of creating ``decl``: ``judge.create_refusals`` on the cluster's release,
    then (for a privileged create on PVE 9) the provision token's Sys.Modify; the note names the
    template and, when ``unprivileged`` is not declared, the kind the release's default makes."""
    cluster = release(ctx)
    refusals = judge.create_refusals(decl, cluster)
    checked: list[str] = []
    if not refusals and _needs_sys_modify(decl, cluster):
        refusals, checked = privileged_create_check(ctx)
    if not refusals:
        refusals, unchecked = privileges.guest_check(ctx, "lxc", decl.vmid, decl.config, "create", decl.pool)
        checked += unchecked
    suffix = ""
    if "unprivileged" not in decl.config:
        kind = "unprivileged" if judge.creates_unprivileged(decl, cluster) else "privileged"
        suffix = f" as {kind} (PVE {cluster.release}'s default: unprivileged is not declared)"
    return CreatePlan(
        refusals=refusals,
        source=f"from {decl.ostemplate}",
        again="from ostemplate with new, empty volumes",
        suffix=suffix,
        notes=checked,
    )


def create(
    ctx: PveContext, decl: LxcDeclaration, credential: Callable[[], Credential]
) -> Iterator[CreateStep]:
    """The one request of a container create: ``POST /nodes/{node}/lxc`` (pve-container
    ``src/PVE/API2/LXC.pm`` ``create_vm``), a task. Before it, a privileged create on PVE 9 checks
    the minted credential's own Sys.Modify (raises Refused: nothing sent)."""
    # The create secrets go with this one POST and nowhere else (schema.CREATE_SECRETS).
    form = {**judge.create_form(decl), **decl.secrets}
    check_form(schema.CREATE, form, presence=True, secrets=decl.secrets)
    minted = credential()
    if _needs_sys_modify(decl, release(ctx)):
        check_own_sys_modify(ctx, minted)
    yield CreateStep(
        "POST", api_path("nodes", decl.node, "lxc"), f"create CT {decl.vmid} on {decl.node}", form
    )


def update_checks(ctx: PveContext, decl: LxcDeclaration, change: Change) -> tuple[list[str], list[str]]:
    """Refusals: options ``decl`` names that the cluster's release does not know
    (``judge.release_refusals``; the release is read only when ``decl`` names such an option), and the
    privileges the keys written need that the provision token lacks (``access.privileges``); notes
    where those cannot be read."""
    refusals = judge.release_refusals(decl, release(ctx)) if judge.uses_new_options(decl) else []
    written = {**change.put, **dict.fromkeys(change.clear, "")}
    lacking, notes = privileges.guest_check(ctx, "lxc", decl.vmid, written, "update") if written else ([], [])
    return [*refusals, *lacking], notes


def applies_live(key: str, clear: bool, config: GuestConfig, new: str | None = None) -> bool:
    """``schema.applies_live`` on the container's config in effect (the value written does not
    change the container's rule)."""
    return schema.applies_live(key, clear, key in config.current)


#: The container family.
LXC = Family(
    words=schema.WORDS,
    destroy_running="unable to destroy CT {vmid} - container is running",
    parse=parse_declaration,
    judge=judge.judge,
    shown=judge.shown,
    key_change=judge.key_change,
    operator_view=judge.operator_view,
    identity_refusals=judge.identity_refusals,
    update_checks=update_checks,
    applies_live=applies_live,
    keys=KEYS,
    update=schema.UPDATE,
    resize=schema.RESIZE,
    size_of=size_option,
    plan_create=plan_create,
    create=create,
    create_form=judge.create_form,
)
