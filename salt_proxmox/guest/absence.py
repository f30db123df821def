"""Where a vmid is, and the proof that no guest holds it (docs/design.md §6), at a cost that does not
grow with the cluster.

A guest's config read can only say "missing" (pve-guest-common ``AbstractConfig::load_config``:
``Configuration file '…' does not exist``), which is absence only when the vmid is held nowhere.
Two PVE answers speak for that:

- the cluster's guest index, ``GET cluster/resources?type=vm`` (pve-manager ``PVE/API2/Cluster.pm``
  ``resources``): every guest of every node whose ``/vms/{vmid}`` the caller may audit, with its
  node and type. It names where a vmid is, but its size grows with the cluster;
- ``GET cluster/nextid?vmid=N`` (the same file, ``nextid``): N itself when the cluster's vmlist —
  every guest, whatever the caller may audit — holds no N, else HTTP 400 with
  ``errors: {vmid: "VM N already exists"}``. One small answer, fresh at the moment it is sent.

So the index is read once per run and credential (``ReadAhead.shared``) and serves only as a hint:
a vmid it lists is decided on a fresh index read, exactly as before; a vmid it does not list is
absent only when ``nextid`` says N is free now, sent with the same credential as the config read.
A vmid ``nextid`` calls taken is looked up in a fresh index again: listed, it is decided as listed;
not listed, it is held by a guest this credential cannot audit, and refused. A stale hint can
therefore cost a read but never decide anything, and creating N guests reads the index once, not N
times.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.errors import Refused
from salt_proxmox.pve.client import Credential
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.run.context import PveContext

INDEX = "cluster/resources"
NEXTID = "cluster/nextid"
#: Where the run's checked index is kept (``run.memo.RunMemo``), with the listing it was built from.
_MEMO = "guest-index"


def _valid_row(row: object) -> bool:
    if not isinstance(row, Mapping):
        return False
    vmid = row.get("vmid")
    if isinstance(vmid, bool):
        return False
    try:
        number = int(vmid) if isinstance(vmid, int | str) else None
    except ValueError:
        number = None
    node = row.get("node")
    return (
        number is not None
        and number > 0
        and str(number) == str(vmid).strip()
        and isinstance(node, str)
        and node != ""
        and row.get("type") in ("lxc", "qemu")
    )


def _by_vmid(rows: object) -> dict[int, dict]:
    """``{vmid: row}`` of a guest index answer. Raises PveMalformed when a row lacks a positive vmid,
    a node or a type of lxc/qemu: such an index cannot prove a vmid free."""
    if not isinstance(rows, list) or not all(_valid_row(row) for row in rows):
        raise PveMalformed(
            "GET",
            f"{INDEX}?type=vm",
            "the guest index has rows without a positive vmid, a node or a type of lxc/qemu, so it cannot "
            "prove the vmid free",
        )
    by_vmid: dict[int, dict] = {}
    for row in rows:
        by_vmid.setdefault(int(row["vmid"]), row)
    return by_vmid


def _read_index(ctx: PveContext, credential: Credential | None) -> tuple[list[dict], dict[int, dict]]:
    """The guest index read now and its rows by vmid (``_by_vmid``'s check)."""
    rows = ctx.client.request("GET", INDEX, credential or ctx.broker.read(), params={"type": "vm"})
    return rows, _by_vmid(rows)


def index_rows(ctx: PveContext, credential: Credential | None = None) -> list[dict]:
    """Every row of the cluster's guest index, read now (one ``GET cluster/resources?type=vm``, with
    ``credential`` or the read one), each checked as ``indexed_guest`` checks it. Raises as
    ``indexed_guest``."""
    return _read_index(ctx, credential)[0]


def guest_configs(ctx: PveContext, credential: Credential | None = None) -> list[tuple[dict, Mapping]]:
    """``(index row, config)`` of every guest of the cluster's index (``index_rows``), each config
    read now (``GET nodes/<node>/<lxc|qemu>/<vmid>/config``, with ``credential`` or the read one). A
    guest that cannot be read is an error, never left out. Raises as ``index_rows`` and the client."""
    from salt_proxmox.pve.client import api_path

    credential = credential or ctx.broker.read()
    found = []
    for row in index_rows(ctx, credential):
        config = ctx.client.request(
            "GET", f"{api_path('nodes', row['node'], row['type'], row['vmid'])}/config", credential
        )
        if not isinstance(config, Mapping):
            raise PveMalformed(
                "GET", f"nodes/{row['node']}/{row['type']}/{row['vmid']}/config", "not an object"
            )
        found.append((row, config))
    return found


def indexed_guest(ctx: PveContext, vmid: int, credential: Credential | None = None) -> dict | None:
    """The row of ``vmid`` in the cluster's guest index, read now (one ``GET cluster/resources?type=vm``,
    with ``credential`` or the read one), or None when it lists no guest ``vmid``.

    Raises PveMalformed when a row lacks a positive vmid, a node or a type of lxc/qemu, and what the
    client raises."""
    return _read_index(ctx, credential)[1].get(vmid)


def hinted_guest(ctx: PveContext, vmid: int, credential: Credential) -> dict | None:
    """The row of ``vmid`` in the run's guest index (read once per run and ``credential``, its rows
    checked once), or None. A hint only: see the module text.

    Raises as ``indexed_guest`` (and then keeps nothing, so the next state reads it again)."""
    rows = ctx.reads.shared(ctx.client, INDEX, credential, params={"type": "vm"})
    kept = ctx.memo.get(_MEMO)
    if not (isinstance(kept, tuple) and kept[0] is rows):
        kept = (rows, _by_vmid(rows))
        ctx.memo[_MEMO] = kept
    return kept[1].get(vmid)


def vmid_free(ctx: PveContext, vmid: int, credential: Credential) -> bool:
    """Whether no guest of the cluster holds ``vmid`` now: ``GET cluster/nextid?vmid=<vmid>`` answers
    the vmid itself (True) or HTTP 400 ``VM <vmid> already exists`` (False).

    Raises PveMalformed for a 200 that is not that vmid, and PveError for any other failure (a 401,
    a 5xx): neither proves anything."""
    try:
        answer = ctx.client.request("GET", NEXTID, credential, params={"vmid": str(vmid)})
    except PveError as exc:
        if exc.status == 400 and "already exists" in str(exc.errors.get("vmid", "")):
            return False
        raise
    if isinstance(answer, bool) or str(answer).strip() != str(vmid):
        raise PveMalformed(
            "GET", f"{NEXTID}?vmid={vmid}", f"expected the vmid {vmid} or HTTP 400, not another id"
        )
    return True


def locate_missing(ctx: PveContext, vmid: int, credential: Credential) -> dict | None:
    """After PVE said guest ``vmid``'s config is missing (read with ``credential``): None when no guest
    holds ``vmid`` (proven by ``nextid`` now, the run's index listing it nowhere), else the fresh index
    row of the guest that does.

    Raises Refused when ``nextid`` calls the vmid taken and the index this credential reads does not
    list it (a guest the token may not audit), PveMalformed and what the client raises."""
    if hinted_guest(ctx, vmid, credential) is None and vmid_free(ctx, vmid, credential):
        return None
    found = indexed_guest(ctx, vmid, credential)
    if found is None and not vmid_free(ctx, vmid, credential):
        raise Refused(
            f"vmid {vmid} is held by a guest the read token cannot see (GET cluster/nextid: VM {vmid} "
            "already exists; the guest index it may read lists no such guest): grant the token VM.Audit "
            f"on /vms/{vmid}, or pick a free vmid."
        )
    return found
