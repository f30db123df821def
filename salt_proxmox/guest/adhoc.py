"""The ad-hoc calls on one guest, container or VM alike (``proxmox.lxc_update``/``qemu_update``,
``proxmox.lxc_resize``/``qemu_resize`` and the like): the guest they name, obeying ownership as a
state does (``owned_guest``), and a disk resize.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.errors import Refused
from salt_proxmox.guest import identity
from salt_proxmox.guest.family import Declaration, Family
from salt_proxmox.guest.live import guest_path, read_live, styled
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.pve.constraints import check_form, vmid_number
from salt_proxmox.run.context import PveContext


def adhoc_declaration(
    ctx: PveContext, family: Family, vmid: object, config: Mapping[str, object]
) -> tuple[str, dict]:
    """For an ad-hoc write: the state id that owns ``vmid`` and its recorded declaration with
    ``config`` merged over it, so an ad-hoc call never re-labels or shrinks an owned row.

    Raises DeclarationError for a ``vmid`` that is not one (``vmid_number``).
    """
    number = vmid_number(vmid)
    row = ctx.ownership.row(row_key(ctx.target.name, family.kind, number)) or {}
    declared = dict(row.get("declared") or {})
    declared.update(config)
    declared["vmid"] = number
    return str(row.get("state_id") or f"adhoc-{number}"), declared


def owned_guest(
    ctx: PveContext, family: Family, node: object, vmid: object, action: tuple[str, str]
) -> tuple[Declaration, dict]:
    """For an ad-hoc write (``action``: what it does and what is then not done, ``("resize",
    "resized")``) to guest ``vmid`` on ``node``:
    its declaration (vmid, node) and its ``owned`` row, after the checks a state makes before it
    writes: the row is ``owned`` (this minion made or adopted it) and the guest on ``node`` carries
    the row's fingerprint (another guest at a recycled vmid does not: ``identity.check``).

    Raises DeclarationError (vmid or node malformed), Refused (not ours, absent, elsewhere, or not
    carrying the fingerprint), PveError, PveUnreachable, CredentialError.
    """
    number = vmid_number(vmid)
    decl = family.parse("adhoc", vmid=number, node=node, target=ctx.target.name)
    what = family.what(number, decl.node)
    row = ctx.ownership.row(row_key(ctx.target.name, family.kind, number))
    if row is None or row.get("phase") != OWNED:
        why = "its create is recorded as unfinished" if row else "this minion did not create it"
        raise Refused(
            f"{what} is not recorded as ours ({why}), so it is not {action[1]}. Nothing is taken over "
            f"silently: declare it in a {family.state} state with adopt: true first."
        )
    live = read_live(ctx, family, decl.node, number)
    if live is None:
        raise Refused(
            f"{what}: the cluster lists no guest with this vmid, so there is nothing to {action[0]}."
        )
    # The same identity check a state makes: a row authorizes writes to the guest we made only.
    recorded = identity.recorded_declaration(family, "adhoc", ctx.target.name, row, number, decl.node)
    found = identity.check(family, row, live.merged(), recorded, styled(ctx, recorded))
    if found.differs:
        raise Refused(identity.not_ours(what, found, "write"))
    if not identity.generated_keys(family, identity.live_fingerprint(family, live.merged()), recorded.config):
        raise Refused(identity.indistinct(what, "write"))
    return decl, row


def owned_unless_adopted(
    ctx: PveContext, family: Family, node: str, vmid: int, action: tuple[str, str], adopt: bool
) -> None:
    """The ownership check of an ad-hoc call that may act without taking the guest over: with
    ``adopt`` nothing is checked; else ``owned_guest``'s checks, whose refusal names ``adopt=True``.
    Raises what ``owned_guest`` raises."""
    if adopt:
        return
    try:
        owned_guest(ctx, family, node, vmid, action)
    except Refused as exc:
        raise Refused([*exc.reasons, "Or pass adopt=True to act on it without taking it over."]) from None


def resize(ctx: PveContext, family: Family, node: object, vmid: object, disk: object, size: object) -> str:
    """Grow one volume of a guest of ``family`` this minion owns (``proxmox.lxc_resize``,
    ``proxmox.qemu_resize``), as a task awaited with the provision credential that started it;
    returns its UPID.

    An ad-hoc write obeys ownership as a state does (``owned_guest``): a guest with no ``owned``
    row is refused, as ``proxmox.lxc_update``/``qemu_update`` refuse it, and so is a guest that does
    not carry the row's fingerprint. The guest must be on ``node`` (``read_live``). After the task, the row's
    fingerprint is recorded from the read-back.

    Raises DeclarationError (vmid, node, disk or size malformed: ``family.resize``, pve-container
    ``src/PVE/API2/LXC.pm`` and qemu-server ``PVE/API2/Qemu.pm`` ``resize_vm`` schemas), Refused
    (not ours, absent, or elsewhere), PveError, TaskFailed, Uncertain.
    """
    number = vmid_number(vmid)
    form = {"disk": str(disk), "size": str(size)}
    check_form(family.resize, form, presence=True)
    decl, row = owned_guest(ctx, family, node, number, ("resize", "resized"))
    key = row_key(ctx.target.name, family.kind, number)
    path = f"{guest_path(family, decl.node, number)}/resize"
    upid = ctx.task("PUT", path, decl.node, f"grow {disk} of {family.label} {number} to {size}", form)
    # Our own write changed a volume's size: the fingerprint follows it, as after a state's write.
    after = read_live(ctx, family, decl.node, number)
    if after is not None:
        ctx.ownership.mark_owned(
            key,
            str(row.get("state_id") or "adhoc"),
            dict(row.get("declared") or {}),
            identity.live_fingerprint(family, after.merged()),
        )
    return upid
