"""``proxmox.owned check=True``: whether the live object of each ownership row is still the one the row
speaks for, read with the ``read`` credential and the family's own rule (nothing written):

- a guest: it carries the fingerprint the row recorded at its last write (``guest.identity.check``:
  the MACs PVE drew, its volumes, the ids qemu-server generated; a row from before fingerprints is
  judged against the declaration it recorded);
- an object of an ``ObjectSpec`` family: it still matches the declaration its row recorded
  (``ObjectSpec.is_match``, what a ``removal: destroy`` checks before deleting);
- an OpenBao policy lives outside PVE: not checked here (its state's plan compares its text).
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox import registry
from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.ownership.report import split_key
from salt_proxmox.run.context import PveContext


def _result(live: str, fingerprint: bool | None, differs: list[str] | None = None) -> dict:
    return {"live": live, "fingerprint": fingerprint, "differs": list(differs or [])}


def live_check(ctx: PveContext, key: str, row: Mapping[str, object]) -> dict:
    """``{live, fingerprint, differs}`` of row ``key``: ``live`` is ``present``, ``absent`` or
    ``unreadable: <why>`` (a failed read is never absence); ``fingerprint`` True when the live object
    is the one the row speaks for, False when not (``differs`` names what), None when it could not
    be judged. Never raises for a known failure."""
    _target, family, identity = split_key(key)
    try:
        kind = registry.kind_named(family)
    except LookupError as exc:
        return _result(f"unreadable: {exc}", None)
    state_id = str(row.get("state_id") or key)
    recorded = row.get("declared") if isinstance(row.get("declared"), Mapping) else {}
    try:
        if kind.spec is not None:
            return _object(ctx, kind.load(), state_id, dict(recorded))
        guests = registry.guests()
        if family in guests:
            return _guest(ctx, guests[family], state_id, row, int(identity))
    except (SaltProxmoxError, DeclarationError, TypeError, ValueError) as exc:
        return _result(f"unreadable: {exc}", None)
    return _result("not checked (not a PVE object)", None)


def _object(ctx: PveContext, spec, state_id: str, recorded: dict) -> dict:
    from salt_proxmox.simple.lifecycle import read, with_recorded

    last = spec.declare(state_id, ctx.target.name, **recorded)
    live = read(ctx, spec, last)
    if live is None:
        return _result("absent", None)
    live = with_recorded(spec, live, {"declared": recorded})
    differs = [f"{key} is {change['old']!r}, recorded {change['new']!r}" for key, change in
               spec.differences(live, last).items()]  # fmt: skip
    return _result("present", spec.is_match(live, last) and not differs, differs)


def _guest(ctx: PveContext, family, state_id: str, row: Mapping[str, object], vmid: int) -> dict:
    from salt_proxmox.guest import identity
    from salt_proxmox.guest.live import read_live, styled

    node = str((row.get("declared") or {}).get("node") or "")
    last = identity.recorded_declaration(family, state_id, ctx.target.name, row, vmid, node)
    live = read_live(ctx, family, last.node, last.vmid)
    if live is None:
        return _result("absent", None)
    checked = identity.check(family, row, live.merged(), last, styled(ctx, last))
    return _result("present", not checked.differs, checked.differs)
