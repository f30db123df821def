"""Reading a guest, shared by containers and VMs (one ``Family`` each): where it lives
(``guest_path``, ``config_path``), the run's reads ahead of every declared guest (``read_ahead``), the
read with proven absence (``read_live``), the config an operator call shows (``operator_config``),
the row key a run chunk declares (``chunk_keys``) and the tag style a declaration is judged in.

Only PVE's exact missing-config answer may lead to absence, and only when the vmid is proven free with
the same credential (``salt_proxmox.guest.absence``; docs/design.md §6).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from salt_proxmox.errors import DeclarationError, Refused, SaltProxmoxError
from salt_proxmox.guest.absence import hinted_guest, indexed_guest, locate_missing
from salt_proxmox.guest.family import Declaration, Family
from salt_proxmox.guest.pending import GuestConfig, PendingRowsError
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.pve.client import Credential, api_path
from salt_proxmox.pve.constraints import vmid_number
from salt_proxmox.pve.errors import PveConfigMissing, PveMalformed
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle, tag_style
from salt_proxmox.run.context import PveContext
from salt_proxmox.run.lowstate import Chunk


def chunk_keys(family: Family, chunk: Chunk, default_target: str | None) -> frozenset[str]:
    """The ownership row key (``<target>/<kind>/<vmid>``: ``prod/lxc/150``) a run chunk declares, or
    none when its target or vmid cannot be read (it is refused when it runs). vmids are
    cluster-wide, so the node is no part of it."""
    target = chunk.target(default_target)
    try:
        return (
            frozenset()
            if target is None
            else frozenset({row_key(target, family.kind, vmid_number(chunk.args.get("vmid")))})
        )
    except DeclarationError:
        return frozenset()


def guest_path(family: Family, node: str, vmid: int) -> str:
    """``nodes/{node}/{lxc|qemu}/{vmid}``, labels encoded."""
    return api_path("nodes", node, family.kind, vmid)


def config_path(family: Family, node: str, vmid: int) -> str:
    """``nodes/{node}/{lxc|qemu}/{vmid}/pending``, the read every guest state starts with: the config
    rows with the values in effect and the pending ones (``salt_proxmox.guest.pending``)."""
    return f"{guest_path(family, node, vmid)}/pending"


def read_ahead(ctx: PveContext, family: Family, declarations: Iterable[Mapping[str, object]]) -> int:
    """Read ahead the config of every guest of ``family`` the run declares on this target,
    ``ctx.target.concurrency`` at a time (``salt_proxmox.pve.readahead``); returns how many were
    sent.

    ``declarations``: the arguments of the run's ``<family.state>.present`` states on this target.
    Only ``vmid`` and ``node`` are read; a declaration whose vmid or node ``family.parse``
    refuses is skipped (its state reads nothing). Never raises: without a read credential nothing
    is read ahead, and each state meets that failure on its own.
    """
    paths = []
    for declared in declarations:
        try:
            decl = family.parse(
                "read-ahead", vmid=declared.get("vmid"), node=declared.get("node"), target=ctx.target.name
            )
        except DeclarationError:
            continue
        paths.append(config_path(family, decl.node, decl.vmid))
    if not paths:
        return 0
    try:
        credential = ctx.broker.read()
    except SaltProxmoxError:
        return 0
    sent = ctx.reads.fill(ctx.client, credential, paths, ctx.target.concurrency)
    forked = [declared for declared in declarations if declared.get("parallel") is True]
    if forked:
        _ahead_of_forks(ctx, credential, forked, paths)
    return sent


def _ahead_of_forks(
    ctx: PveContext, credential: Credential, forked: list[Mapping[str, object]], paths: list[str]
) -> None:
    """Read, in the run's own process, what the states Salt forks (``parallel``: overlapping creates,
    ``salt_proxmox.run.overlap``) would each read again, where a sequential run reads it once for all:
    the guest index hint the first absent guest reads (``absence.hinted_guest``) and the network listing
    of each node a forked guest with a NIC is created on (``guest.nics``). The forks inherit them. A
    failure keeps nothing: the state that needs it reads it and meets the failure itself."""
    from salt_proxmox.guest.nics import NIC, node_listing

    with contextlib.suppress(SaltProxmoxError):
        if any(isinstance(ctx.reads.held_error(path), PveConfigMissing) for path in paths):
            hinted_guest(ctx, 0, credential)
    nodes = {str(declared.get("node")) for declared in forked if any(NIC.fullmatch(str(k)) for k in declared)}
    for node in sorted(nodes):
        with contextlib.suppress(SaltProxmoxError):
            node_listing(ctx, node)


def operator_config(ctx: PveContext, family: Family, vmid: int, node: str | None = None) -> dict[str, str]:
    """What ``proxmox.lxc_config`` answers for a container: guest ``vmid``'s config with its pending
    changes merged in (what it runs with after its next start, as ``pct config``/``qm config`` shows
    it), description included (``family.operator_view``). ``node`` None: found in the guest index
    (``indexed_guest``).

    Raises Refused with a sentence when no guest of ``family`` holds ``vmid`` (none in the index,
    another type there, or the cluster proves it absent on ``node``), and what read_live raises."""
    if node is None:
        row = indexed_guest(ctx, vmid)
        if row is None:
            raise Refused(
                f"{family.label} {vmid} does not exist: the cluster's guest index lists no guest {vmid}."
            )
        if row["type"] != family.kind:
            raise Refused(f"vmid {vmid} is a {row['type']} guest on node {row['node']}, not a {family.noun}.")
        node = row["node"]
    live = read_live(ctx, family, node, vmid)
    if live is None:
        raise Refused(
            f"{family.label} {vmid} does not exist: the cluster's guest index lists no guest {vmid}."
        )
    return family.operator_view(live.merged())


def read_live(ctx: PveContext, family: Family, node: str, vmid: int) -> GuestConfig | None:
    """The config of guest ``vmid`` of ``family`` on ``node`` (values in effect and pending changes, from one
    ``GET …/pending``: ``salt_proxmox.guest.pending``), or None when the cluster proves it absent.

    Raises PveError (PVE's own answer, including a 403 or a generic 500), PveMalformed (a 200
    without digest-bearing config rows, or a guest index whose rows lack vmid/node/type), Refused
    (the vmid is held elsewhere), PveUnreachable or CredentialError. Never folds a failure into
    absence.
    """
    credential = ctx.broker.read()
    path = config_path(family, node, vmid)
    try:
        rows = ctx.reads.get(ctx.client, path, credential)
    except PveConfigMissing as missing:
        error = missing
    else:
        try:
            return GuestConfig.from_rows(rows)
        except PendingRowsError as exc:
            raise PveMalformed("GET", path, str(exc)) from None
    found = locate_missing(ctx, vmid, credential)
    if found is None:
        return None
    if found["node"] == node and found["type"] == family.kind:
        raise error
    raise Elsewhere(
        f"vmid {vmid} is a {found['type']} guest on node {found['node']}, not a {family.noun} on {node}. "
        "vmids are cluster-wide: declare the node it is on (or, for a guest of this type, migrate: true to "
        "move it there: guest.migrate), or pick a free vmid.",
        node=str(found["node"]),
        kind=str(found["type"]),
    )


class Elsewhere(Refused):
    """A guest read on one node that the cluster's guest index lists on ``node``, as a guest of type
    ``kind`` (``lxc``, ``qemu``): refused, unless it is of the family and its move is declared
    (``guest.migrate``)."""

    def __init__(self, message: str, node: str, kind: str) -> None:
        super().__init__(message)
        self.node = node
        self.kind = kind


def styled(ctx: PveContext, decl: Declaration) -> TagStyle:
    """The tag style to judge ``decl`` with: the datacenter's (read once per run) when it declares
    tags, else the default, so a plan without tags spends no read on it."""
    return tag_style(ctx) if decl.config.get("tags") else DEFAULT_TAG_STYLE
