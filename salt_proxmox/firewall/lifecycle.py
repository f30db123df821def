"""Plan and apply of ``proxmox_firewall_alias``: the simple-object lifecycle, plus renames.

Everything but a rename is ``salt_proxmox.simple.lifecycle`` with the alias spec. A rename
(``rename_from: <old name>``) is decided here:

- a ``rename_from`` that differs from ``name`` only in case is no rename (PVE keys aliases in
  lower case): the declaration is planned as the one alias it is;
- otherwise the new alias is created FIRST and the old one deleted after, so rules never point
  at a missing name while both exist. (PVE's own ``rename`` parameter of ``update_alias`` moves
  the entry in one write but, like a delete, leaves every rule and IP set that names the old
  alias pointing at nothing; move those in the same change.)
- the new name taken by an alias this minion did not create refuses the rename (nothing is
  overwritten); taken by ours (an earlier run created it) the rename goes on from there;
- the old alias must be ours to be deleted, or the declaration must say ``adopt: true``; an old
  alias that is already gone leaves just the create;
- an old alias that rules or IP set entries still name is not renamed: PVE would leave them
  pointing at nothing (``salt_proxmox.firewall.usage``). The plan refuses, naming them, and says
  the way round: declare the new alias on its own, point them at it, then rename;
- once the old alias is gone its ownership row goes too, and the new one is recorded.
"""

from __future__ import annotations

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.firewall import alias, usage
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple import lifecycle as simple
from salt_proxmox.simple.spec import Declared

SPEC = alias.SPEC


def present(
    ctx: PveContext,
    test: bool,
    state_id: str,
    name: object = None,
    cidr: object = None,
    comment: object = None,
    adopt: object = False,
    rename_from: object = None,
    **extra: object,
) -> Outcome:
    """Plan (``test``) or apply one alias declaration; never raises for a known failure.

    Returns an Outcome whose changes are ``{cidr|comment: {old, new}}`` for an update,
    ``{created, cidr, comment}`` for a create, plus ``{renamed: {old, new}}`` for a rename."""
    outcome = Outcome()
    try:
        decl = alias.declare(
            state_id, ctx.target.name, name=name, cidr=cidr, comment=comment, adopt=adopt, **extra
        )
        old = None
        if rename_from is not None:
            if not isinstance(rename_from, str):
                raise DeclarationError("rename_from: expected the old alias name (text)")
            old = alias.renamed(decl, rename_from)
            if old.identity == decl.identity:
                old = None
                outcome.comment.append(
                    f"{decl.label}: rename_from {rename_from} differs only in case; PVE keys aliases in "
                    "lower case, so this is the same alias and nothing is renamed"
                )
        if old is None:
            decision = simple.decide(ctx, SPEC, decl)
            return simple.carry_out(ctx, SPEC, decl, decision, test, outcome)
        return _rename(ctx, decl, old, test, outcome)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")


def _rename(ctx: PveContext, decl: Declared, old: Declared, test: bool, outcome: Outcome) -> Outcome:
    old_key = row_key(old.target, SPEC.family, old.identity)
    new_key = row_key(decl.target, SPEC.family, decl.identity)
    move = f"rename {old.names['name']} → {decl.names['name']}"
    old_row = ctx.ownership.row(old_key)
    new_row = ctx.ownership.row(new_key)
    decision = simple.decide(ctx, SPEC, decl, allowed_previous=(old_key,))
    if decision.live is not None and new_row is None:
        return outcome.fail(
            f"{move}: {decl.label} already exists and this minion did not create it, so the name is taken. "
            "Nothing was written: pick another name, or delete that alias first."
        )
    if decision.action == "refuse":
        return outcome.fail(*decision.reasons, "Nothing was written.")
    old_live = simple.read(ctx, SPEC, old)
    if old_live is not None and old_row is None and not decl.adopt:
        return outcome.fail(
            f"{move}: {old.label} exists and this minion did not create it, so it is not deleted. Nothing "
            "was written: declare adopt: true to rename it."
        )
    if old_live is not None:
        named = usage.refusal(
            ctx,
            old.names["name"],
            f"Nothing was written: declare {decl.names['name']} on its own (without rename_from), point "
            f"them at it, then declare the rename again.",
        )
        if named:
            return outcome.fail(*named)
        outcome.changes["renamed"] = {"old": old.names["name"], "new": decl.names["name"]}
        if test:
            outcome.comment.append(
                f"{move}: {old.label} would be deleted once {decl.label} is in place; rules and IP sets "
                f"naming {old.names['name']} must name {decl.names['name']} in the same change"
            )
    elif old_row is not None:
        outcome.changes["renamed"] = {"old": old.names["name"], "new": decl.names["name"]}
        outcome.comment.append(f"{move}: {old.label} is already gone; only its ownership row is left")
    result = simple.carry_out(ctx, SPEC, decl, decision, test, outcome)
    if test:
        return result
    if result.result is False:
        if old_live is not None:
            result.comment.append(f"{old.label} was left in place.")
        return result
    if old_live is not None:
        try:
            simple.delete(ctx, SPEC, old, old_live)
        except SaltProxmoxError as exc:
            return result.fail(
                f"{decl.label} is in place, but deleting {old.label} failed: {exc}. Run "
                "again to finish the rename."
            )
        result.comment.append(f"{old.label} has been deleted; the alias is now {decl.names['name']}")
    ctx.ownership.forget(old_key)
    return result
