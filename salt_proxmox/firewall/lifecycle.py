"""Plan and apply of ``proxmox_firewall_alias``: the simple-object lifecycle, plus renames.

Everything but a rename is ``salt_proxmox.simple.lifecycle`` with the alias spec. A rename
(``rename_from: <old name>``) follows ``salt_proxmox.simple.rename`` with the alias's rules
(``RULES``): the new alias is created first and the old one deleted after; the old one is always
deleted (a rename moves the name), and only when it is ours or the declaration says ``adopt: true``;
an old alias that rules or IP set entries still name is not renamed, since PVE would leave them
pointing at nothing (``salt_proxmox.firewall.usage``): the plan refuses, naming them, and says the
way round (declare the new alias on its own, point them at it, then rename). PVE's own ``rename``
parameter of ``update_alias`` moves the entry in one write but, like a delete, leaves every rule and
IP set that names the old alias pointing at nothing; move those in the same change.
"""

from __future__ import annotations

from salt_proxmox.access import privileges
from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.firewall import alias, usage
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple import lifecycle as simple
from salt_proxmox.simple import rename
from salt_proxmox.simple.spec import Declared

SPEC = alias.SPEC

#: A rename moves the name: the old alias always goes, taken over with adopt: true when not ours.
RULES = rename.RenameRules(
    noun="alias",
    nouns="aliases",
    keeper="PVE",
    made="create",
    made_past="created",
    taken_remedy="delete that alias first",
    old_follows_removal=False,
    adopt_old=True,
    old_must_match=False,
    caveat="; rules and IP sets naming {old} must name {new} in the same change",
)


def present(
    ctx: PveContext,
    test: bool,
    state_id: str,
    name: object = None,
    cidr: object = None,
    comment: object = None,
    adopt: object = False,
    rename_from: object = None,
    scope: object = None,
    **extra: object,
) -> Outcome:
    """Plan (``test``) or apply one alias declaration; never raises for a known failure.

    Returns an Outcome whose changes are ``{cidr|comment: {old, new}}`` for an update,
    ``{created, cidr, comment}`` for a create, plus ``{renamed: {old, new}}`` for a rename."""
    privileges.planning(ctx, test)
    outcome = Outcome()
    try:
        decl = alias.declare(
            state_id,
            ctx.target.name,
            name=name,
            cidr=cidr,
            comment=comment,
            adopt=adopt,
            scope=scope,
            **extra,
        )
        old = None
        if rename_from is not None:
            if not isinstance(rename_from, str):
                raise DeclarationError("rename_from: expected the old alias name (text)")
            old = alias.renamed(decl, rename_from)
            if old.identity == decl.identity:
                old = None
                outcome.comment.append(rename.same_name(RULES, decl.label, rename_from))
        if old is None:
            decision = simple.decide(ctx, SPEC, decl, plan=test)
            return simple.carry_out(ctx, SPEC, decl, decision, test, outcome)
        return _rename(ctx, decl, old, test, outcome)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")


def _rename(ctx: PveContext, decl: Declared, old: Declared, test: bool, outcome: Outcome) -> Outcome:
    old_key = row_key(old.target, SPEC.family, old.identity)
    new_key = row_key(decl.target, SPEC.family, decl.identity)
    old_name, new_name = old.names["name"], decl.names["name"]
    decision = simple.decide(ctx, SPEC, decl, allowed_previous=(old_key,), plan=test)
    if decision.live is not None and ctx.ownership.row(new_key) is None:
        return outcome.fail(rename.taken(RULES, old_name, new_name, decl.label))
    if decision.action == "refuse":
        return outcome.fail(*decision.reasons, "Nothing was written.")
    way_round = (
        f"Nothing was written: declare {new_name} on its own (without rename_from), point them at it, then "
        "declare the rename again."
    )
    plan = rename.plan_old(
        RULES,
        old_name,
        new_name,
        old.label,
        decl.label,
        simple.read(ctx, SPEC, old),
        ctx.ownership.row(old_key),
        adopt=decl.adopt,
        in_use=lambda: usage.refusal_for(
            ctx, usage.Target("alias", old_name, old.names.get("scope", "cluster")), way_round
        ),
    )
    if plan.refusal:
        return outcome.fail(*plan.refusal)
    if plan.renamed:
        outcome.changes["renamed"] = {"old": old_name, "new": new_name}
    outcome.comment.extend(plan.notes)
    if test:
        outcome.comment.extend(plan.plan_notes)
    result = simple.carry_out(ctx, SPEC, decl, decision, test, outcome)
    if test:
        return result
    if result.result is False:
        result.comment.extend(rename.left_in_place(plan, old.label))
        return result
    said, failure = rename.finish(
        RULES,
        plan,
        new_name,
        old.label,
        decl.label,
        delete=lambda: simple.delete(ctx, SPEC, old, plan.live),
        forget=lambda: ctx.ownership.forget(old_key),
    )
    if failure:
        return result.fail(failure)
    result.comment.extend(said)
    return result
