"""A rename (``rename_from: <old name>``), for every family that takes one: the rules they share and,
as an explicit parameter (``RenameRules``), the ones where they differ on purpose.

Shared by firewall aliases (``salt_proxmox.firewall.lifecycle``) and OpenBao policies
(``salt_proxmox.openbao_policy.lifecycle``):

- a ``rename_from`` that differs from the name only in case is no rename: PVE keys aliases and
  OpenBao keys policies in lower case, so it is the one object it is (``same_name``);
- the new name is written FIRST and the old object handled after, so whatever names the old one never
  points at a missing name while both exist; an old object is never deleted before the new one is
  read back as declared (``finish``);
- the new name held by an object this minion did not make refuses the rename: nothing is overwritten
  (``taken``); held by ours (an earlier, interrupted run) the rename goes on from there;
- an old object already gone with an ownership row left only loses the row; one gone without a row
  leaves a plain create;
- once the old object is dealt with its ownership row goes (``finish``), and the new one is recorded
  by the family's own write.

Where they differ (``RenameRules``), and why:

- **What happens to the old object.** An alias is one entry that rules point at: a rename moves the
  name, so the old alias is always deleted (``old_follows_removal`` False). A policy is text tokens
  are bound to by name: the old one follows the declaration's ``removal`` — ``retain`` (default)
  leaves it and forgets its row, ``destroy`` deletes it (``old_follows_removal`` True).
- **Whose old object may go.** An old alias this minion did not create is deleted only with
  ``adopt: true`` (``adopt_old``), as any alias is taken over. An old policy is deleted only when this
  minion wrote it and it still holds the text written then (``old_must_match``: its sha256 against
  the row's); one that is not ours is left as it is under ``retain`` and refused under ``destroy``.
- **Still in use.** An alias that rules or IP set entries name is not renamed: PVE would leave them
  pointing at nothing (``salt_proxmox.firewall.usage``); the family passes that scan as ``in_use``.
  OpenBao holds no reference to a policy by name that it checks, so policies pass none.

Imports no family: each family hands its reads, its delete and its scans over as values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from salt_proxmox.errors import SaltProxmoxError

#: What happens to the old object: deleted after the new one is in place, or its row forgotten.
DELETE = "delete"
FORGET = "forget"


@dataclass(frozen=True)
class RenameRules:
    """One family's choices in a rename (module docstring: why each differs).

    - ``noun``/``nouns``: ``alias``/``aliases``, ``policy``/``policies``;
    - ``keeper``: who keys names in lower case (``PVE``, ``OpenBao``);
    - ``made``/``made_past``: what this minion did to an object it owns (``create``/``created``,
      ``write``/``written``), for refusals;
    - ``taken_remedy``: the way round a taken new name (``delete that alias first``);
    - ``old_follows_removal``: the old object follows ``removal`` (retain/destroy) instead of being
      deleted always;
    - ``adopt_old``: ``adopt: true`` lets an old object not ours be deleted;
    - ``old_must_match``: an old object of ours is deleted only while it holds what we wrote;
    - ``caveat``: said with a planned delete of the old object, ``{old}``/``{new}`` the two names.
    """

    noun: str
    nouns: str
    keeper: str
    made: str
    made_past: str
    taken_remedy: str
    old_follows_removal: bool
    adopt_old: bool
    old_must_match: bool
    caveat: str = ""


@dataclass
class OldPlan:
    """What a rename does with its old object: ``refusal`` (reasons; nothing is written), else
    ``fate`` (``DELETE``, ``FORGET`` or None: left as it is) with its live value ``live`` and the
    lines ``notes`` (every run) and ``plan_notes`` (a plan only) say."""

    refusal: list[str] = field(default_factory=list)
    fate: str | None = None
    live: object = None
    notes: list[str] = field(default_factory=list)
    plan_notes: list[str] = field(default_factory=list)

    @property
    def renamed(self) -> bool:
        """Whether the old name is moved off (its object deleted or its row forgotten)."""
        return self.fate is not None


def move(old: str, new: str) -> str:
    """``rename old → new``, the words every rename line starts with."""
    return f"rename {old} → {new}"


def same_name(rules: RenameRules, label: str, old: str) -> str:
    """The note for a ``rename_from`` that differs from the name only in case: no rename."""
    return (
        f"{label}: rename_from {old} differs only in case; {rules.keeper} keys {rules.nouns} in lower case, "
        f"so this is the same {rules.noun} and nothing is renamed"
    )


def taken(rules: RenameRules, old: str, new: str, label: str) -> str:
    """The refusal when the new name ``label`` is held by an object this minion did not make."""
    return (
        f"{move(old, new)}: {label} already exists and this minion did not {rules.made} it, so the name is "
        f"taken. Nothing was written: pick another name, or {rules.taken_remedy}."
    )


def plan_old(
    rules: RenameRules,
    old: str,
    new: str,
    old_label: str,
    new_label: str,
    live: object,
    row: dict | None,
    *,
    adopt: bool = False,
    removal: str = "retain",
    holds_ours: Callable[[], bool] = lambda: True,
    in_use: Callable[[], list[str]] = lambda: [],
) -> OldPlan:
    """What the rename does with its old object (``old_label``, read live as ``live``, None when
    gone; ``row`` its ownership row). ``holds_ours()``: the old object still holds what this minion
    wrote (asked when ``rules.old_must_match``); ``in_use()``: the refusal lines naming what still
    uses the old name (empty: none). Raises what ``in_use`` raises."""
    moving = move(old, new)
    if live is None:
        if row is None:
            return OldPlan()
        gone = f"{moving}: {old_label} is already gone; only its ownership row is left"
        return OldPlan(fate=FORGET, notes=[gone])
    if rules.old_follows_removal and removal != "destroy":
        if row is None:
            return OldPlan(live=live, notes=[f"{old_label} is not recorded as ours; it is left as it is"])
        kept = f"{old_label} is retained as it is (removal: retain); its ownership is forgotten"
        return OldPlan(fate=FORGET, live=live, notes=[kept])
    if rules.old_follows_removal:
        why = None
        if row is None:
            why = f"was not {rules.made_past} by this minion"
        elif rules.old_must_match and not holds_ours():
            why = "no longer holds the text we wrote"
        if why:
            return OldPlan(
                refusal=[
                    f"{moving} with removal: destroy: {old_label} {why}, so it is not deleted. Nothing was "
                    "written: use removal: retain, or remove it by hand."
                ]
            )
    elif row is None and not (rules.adopt_old and adopt):
        return OldPlan(
            refusal=[
                f"{moving}: {old_label} exists and this minion did not {rules.made} it, so it is not "
                "deleted. Nothing was written: declare adopt: true to rename it."
            ]
        )
    named = in_use()
    if named:
        return OldPlan(refusal=named)
    caveat = rules.caveat.format(old=old, new=new)
    return OldPlan(
        fate=DELETE,
        live=live,
        plan_notes=[f"{moving}: {old_label} would be deleted once {new_label} is in place{caveat}"],
    )


def left_in_place(plan: OldPlan, old_label: str) -> list[str]:
    """The line a failed write of the new name adds: the old object was not touched."""
    return [f"{old_label} was left in place."] if plan.fate == DELETE else []


def finish(
    rules: RenameRules,
    plan: OldPlan,
    new: str,
    old_label: str,
    new_label: str,
    delete: Callable[[], None],
    forget: Callable[[], None],
) -> tuple[list[str], str | None]:
    """After the new name is written and read back: delete the old object (``delete()``) when the plan
    says so, then drop its ownership row (``forget()``). Returns (the lines to say, the failure or
    None); a failed delete keeps the row, so the next run finishes the rename."""
    said: list[str] = []
    if plan.fate == DELETE:
        try:
            delete()
        except SaltProxmoxError as exc:
            return said, (
                f"{new_label} is in place, but deleting {old_label} failed: {exc}. Run again to finish the "
                "rename."
            )
        said.append(f"{old_label} has been deleted; the {rules.noun} is now {new}")
    if plan.fate is not None:
        forget()
    return said, None
