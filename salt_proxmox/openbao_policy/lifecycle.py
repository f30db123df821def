"""The calls an OpenBao policy makes, and the plan/apply of ``openbao_policy.present``/``absent``.

Read is ``GET /v1/sys/policy/<key>`` (hvac ``sys.read_policy``): its ``rules`` are the text.
Only a 404 is absence (``handlePoliciesRead`` answers nothing for a missing policy, which the
router turns into a 404; hvac raises ``InvalidPath``); any other failure fails the state, and a
200 without a text, or about another name, is an error. A policy whose text is empty exists.

Write is ``PUT /v1/sys/policy/<key>`` with ``{"policy": text}`` in the JSON body (hvac
``sys.create_or_update_policy``) — the text is never put on a command line or in a file. Delete
is ``DELETE /v1/sys/policy/<key>``, which succeeds for a missing policy too, so every write and
delete is read back.

Plan and apply call the same ``decide``; an apply decides on its own fresh read. Ownership rows
(docs/design.md §8) are ``openbao/policy/<key>`` and keep the sha256 of the text this minion wrote,
never the text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field

import hvac
import hvac.exceptions
import requests

from salt_proxmox.errors import DeclarationError, Refused, SaltProxmoxError
from salt_proxmox.openbao.client import OpenBaoError, connect, describe_failure
from salt_proxmox.openbao_policy.policy import (
    FAMILY,
    UNDELETABLE,
    PolicyDeclaration,
    check_name,
    grants,
    parse_declaration,
    sha256,
    unified_diff,
)
from salt_proxmox.outcome import Outcome, forget_ownership
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import absent_note, claim, destroy_path, removal_problem, row_key
from salt_proxmox.ownership.stores import OwnershipStore
from salt_proxmox.run.lowstate import Chunk
from salt_proxmox.simple import rename

#: The ownership rows' target part: one OpenBao per minion configuration.
TARGET = "openbao"
#: Where the run's authenticated hvac client is cached (shared with the credential broker).
CLIENT_CACHE_KEY = "salt_proxmox.openbao.client"


@dataclass
class BaoContext:
    """One OpenBao within one Salt run: an authenticated ``client`` and the ownership rows."""

    client: hvac.Client
    ownership: Ownership
    target: str = TARGET


#: The Salt state module that declares policies.
STATE = "openbao_policy"

#: Tokens are bound to a policy by name, so a rename's old policy follows ``removal``: retained
#: (row forgotten) by default, deleted under destroy only while it holds the text this minion wrote.
RULES = rename.RenameRules(
    noun="policy",
    nouns="policies",
    keeper="OpenBao",
    made="write",
    made_past="written",
    taken_remedy="remove that policy",
    old_follows_removal=True,
    adopt_old=False,
    old_must_match=True,
)


def chunk_keys(chunk: Chunk) -> frozenset[str]:
    """The ownership row keys a run chunk declares: ``openbao/policy/<name>``, and the old name its
    ``rename_from`` names, lower-cased as OpenBao keys them (``check_name``); a name that cannot be
    read is left out (the chunk is refused when it runs)."""
    keys = set()
    for name in (chunk.name, chunk.args.get("rename_from")):
        try:
            keys.add(row_key(TARGET, FAMILY, check_name(name)))
        except DeclarationError:
            continue
    return frozenset(keys)


def context_for(openbao: object, cache: MutableMapping, store: OwnershipStore) -> BaoContext:
    """A BaoContext from the ``openbao:`` block, reusing the run's client from ``cache``
    (Salt's ``__context__``). Raises DeclarationError for a bad block, OpenBaoError when login
    fails."""
    client = cache.get(CLIENT_CACHE_KEY)
    if not isinstance(client, hvac.Client):
        if openbao is None:
            raise DeclarationError("openbao: no openbao block is configured (minion config or pillar)")
        client = connect(openbao)
        cache[CLIENT_CACHE_KEY] = client
    return BaoContext(client=client, ownership=Ownership(store))


def read_policy(ctx: BaoContext, key: str) -> str | None:
    """The text of policy ``key``, or None when OpenBao answers 404.

    Raises OpenBaoError for any other failure or an answer without a text for this name."""
    try:
        answer = ctx.client.sys.read_policy(key)
    except hvac.exceptions.InvalidPath:
        return None
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise OpenBaoError(f"reading policy {key}: {describe_failure(exc)}") from None
    data = answer.get("data") if isinstance(answer, Mapping) else None
    if not isinstance(data, Mapping):
        data = answer if isinstance(answer, Mapping) else {}
    text = data.get("rules", data.get("policy"))
    name = data.get("name")
    if not isinstance(text, str) or (name is not None and name != key):
        raise OpenBaoError(
            f"reading policy {key}: OpenBao answered without the policy's text (malformed answer); "
            "nothing is assumed absent"
        )
    return text


def write_policy(ctx: BaoContext, key: str, text: str) -> None:
    """Create or replace policy ``key``; the text travels in the request body only.

    Raises OpenBaoError; for a policy OpenBao refuses (HTTP 400, e.g. ``failed to parse policy:
    ...``) it carries OpenBao's own error text, which names the policy's problem and holds no
    secret."""
    try:
        ctx.client.sys.create_or_update_policy(name=key, policy=text)
    except hvac.exceptions.InvalidRequest as exc:
        said = "; ".join(str(error) for error in (exc.errors or [])) or "no reason given"
        raise OpenBaoError(
            f"writing policy {key}: OpenBao refused it (HTTP 400): {said}. Correct the fragment it names, "
            "then run again."
        ) from None
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise OpenBaoError(f"writing policy {key}: {describe_failure(exc)}") from None


def delete_policy(ctx: BaoContext, key: str) -> None:
    """Delete policy ``key`` and prove it gone with a read. Raises OpenBaoError."""
    try:
        ctx.client.sys.delete_policy(key)
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise OpenBaoError(f"deleting policy {key}: {describe_failure(exc)}") from None
    if read_policy(ctx, key) is not None:
        raise OpenBaoError(f"deleting policy {key}: OpenBao answered success but still has it")


@dataclass
class Decision:
    """What ``present`` would do: ``action`` is ``create``, ``update``, ``noop`` or ``refuse``;
    ``old`` what a rename does with its old policy (``salt_proxmox.simple.rename.OldPlan``: its fate
    None, ``forget`` (retain) or ``delete``)."""

    action: str
    live: str | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    record: bool = False
    row: dict | None = None
    old: rename.OldPlan = field(default_factory=rename.OldPlan)


def _row_sha(row: Mapping | None) -> str | None:
    declared = (row or {}).get("declared")
    return declared.get("sha256") if isinstance(declared, Mapping) else None


def _plan_old(ctx: BaoContext, decl: PolicyDeclaration, live: str | None, row: dict | None) -> rename.OldPlan:
    """What the rename does with its old policy (``salt_proxmox.simple.rename`` with ``RULES``)."""
    old = str(decl.rename_from)
    if live is not None and row is None:
        return rename.OldPlan(refusal=[rename.taken(RULES, old, decl.key, f"policy {decl.key}")])
    old_row = ctx.ownership.row(row_key(ctx.target, FAMILY, old))
    old_live = read_policy(ctx, old)
    return rename.plan_old(
        RULES,
        old,
        decl.key,
        f"policy {old}",
        f"policy {decl.key}",
        old_live,
        old_row,
        removal=decl.removal,
        holds_ours=lambda: old_live is not None and sha256(old_live) == _row_sha(old_row),
    )


def decide(ctx: BaoContext, decl: PolicyDeclaration) -> Decision:
    """The one decision plan and apply share (docs/design.md §7, §8). Raises OpenBaoError."""
    key = row_key(ctx.target, FAMILY, decl.key)
    row = ctx.ownership.row(key)
    what = f"policy {decl.key}"
    previous = ctx.ownership.for_state(ctx.target, FAMILY, decl.state_id)
    old_key = row_key(ctx.target, FAMILY, decl.rename_from) if decl.rename_from else None
    if previous and previous[0] not in (key, old_key):
        old = previous[0].split("/", 2)[-1]
        return Decision(
            "refuse",
            row=row,
            reasons=[
                f"state {decl.state_id} declared policy {old} before and now declares {decl.key}. To rename "
                f"it declare rename_from: {old}; to keep both, give this policy its own state id."
            ],
        )
    live = read_policy(ctx, decl.key)
    notes: list[str] = []
    old = rename.OldPlan()
    if decl.rename_from and decl.rename_from != decl.key:
        old = _plan_old(ctx, decl, live, row)
        if old.refusal:
            return Decision("refuse", live=live, reasons=old.refusal)
        notes = list(old.notes)
    elif decl.rename_from:
        notes.append(rename.same_name(RULES, what, decl.rename_from))
    common = {"live": live, "row": row, "old": old}
    if live is None:
        notes.append(absent_note(row, what, "OpenBao", verb="write"))
        return Decision("create", notes=notes, **common)
    same = sha256(live) == decl.digest
    refusal, note = claim(
        row,
        decl.adopt,
        what,
        matches=same,
        alike="it holds the declared text",
        unlike="its text differs from the declared one",
        verb="write",
    )
    if refusal:
        return Decision("refuse", live=live, row=row, reasons=[refusal])
    if note:
        notes.append(note)
    return Decision("noop" if same else "update", notes=notes, record=note is not None, **common)


def _changes(decl: PolicyDeclaration, decision: Decision) -> dict:
    changes: dict = {}
    if decision.action == "create":
        changes["created"] = {"old": None, "new": f"policy {decl.key}"}
    if decision.action in ("create", "update"):
        live = decision.live
        changes["sha256"] = {"old": None if live is None else sha256(live), "new": decl.digest}
        changes["path_grants"] = {"old": grants(live), "new": grants(decl.text)}
        changes["diff"] = unified_diff(decl.key, live, decl.text)
    if decision.record:
        changes["ownership"] = {"old": (decision.row or {}).get("phase"), "new": "owned"}
    if decision.old.renamed:
        changes["renamed"] = {"old": decl.rename_from, "new": decl.key}
    if decision.old.fate == rename.DELETE:
        changes["deleted"] = {"old": f"policy {decl.rename_from}", "new": None}
    return changes


def present(
    ctx: BaoContext,
    state_id: str,
    test: bool,
    name: object,
    fragments: object,
    adopt: object = False,
    removal: object = "retain",
    rename_from: object = None,
    fetch: Callable[[str], object] | None = None,
    **extra: object,
) -> Outcome:
    """Plan (``test``) or apply one policy declaration; never raises for a known failure.

    ``fragments``: inline HCL strings and ``salt://`` URLs (read through ``fetch``). The
    changes show ``sha256`` and ``path_grants`` before and after and a unified ``diff``."""
    outcome = Outcome()
    try:
        decl = parse_declaration(state_id, name, fragments, adopt, removal, rename_from, fetch, **extra)
        decision = decide(ctx, decl)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    if decision.action == "refuse":
        return outcome.fail(*decision.reasons, "Nothing was written.")
    outcome.changes = _changes(decl, decision)
    outcome.comment.extend(decision.notes)
    what = f"policy {decl.key}"
    old_what = f"policy {decl.rename_from}"
    grant_text = f"{grants(decision.live) or 0} → {grants(decl.text)} path grants"
    if test:
        outcome.comment.extend(decision.old.plan_notes)
        if decision.action == "update":
            outcome.comment.append(f"{what}: would be rewritten ({grant_text})")
        elif decision.action == "noop" and not outcome.changes:
            outcome.comment.append(f"{what} is as declared")
        outcome.result = None if outcome.changes else True
        return outcome
    key = row_key(ctx.target, FAMILY, decl.key)
    untouched = rename.left_in_place(decision.old, old_what)
    try:
        if decision.action in ("create", "update"):
            earlier = ctx.ownership.row(key)
            if decision.action == "create":
                ctx.ownership.mark_creating(key, state_id, decl.stored())
            try:
                write_policy(ctx, decl.key, decl.text)
            except OpenBaoError:
                if decision.action == "create":
                    ctx.ownership.restore(key, earlier)
                outcome.changes = {}  # nothing was written
                raise
            after = read_policy(ctx, decl.key)
        else:
            after = decision.live
        if after is None:
            return outcome.fail(
                f"{what}: the write returned no error but OpenBao does not have it.", *untouched
            )
        if decision.action != "noop" or decision.record:
            ctx.ownership.mark_owned(key, state_id, decl.stored())
        if sha256(after) != decl.digest:
            return outcome.fail(
                f"{what}: after the write OpenBao holds another text (sha256 {sha256(after)[:12]}…), not the "
                "declared one.",
                *untouched,
            )
    except SaltProxmoxError as exc:
        return outcome.fail(str(exc), *untouched)
    if decision.action == "create":
        outcome.comment.append(f"{what} has been created ({grants(decl.text)} path grants)")
    elif decision.action == "update":
        outcome.comment.append(f"{what} has been rewritten ({grant_text})")
    elif not outcome.changes:
        outcome.comment.append(f"{what} is as declared")
    try:
        said, failure = rename.finish(
            RULES,
            decision.old,
            decl.key,
            old_what,
            what,
            delete=lambda: delete_policy(ctx, str(decl.rename_from)),
            forget=lambda: ctx.ownership.forget(row_key(ctx.target, FAMILY, str(decl.rename_from))),
        )
    except SaltProxmoxError as exc:
        return outcome.fail(str(exc))
    if failure:
        return outcome.fail(failure)
    outcome.comment.extend(said)
    return outcome


def absent(
    ctx: BaoContext, state_id: str, test: bool, name: object, removal: object = "retain", **extra: object
) -> Outcome:
    """Stop managing a policy: ``removal: retain`` (default) forgets its ownership row and
    leaves the policy; ``removal: destroy`` deletes it only when this minion wrote it and it
    still holds that text (same sha256), then reads it back to prove it gone."""
    outcome = Outcome()
    try:
        if extra:
            raise DeclarationError(
                f"unknown key(s) {', '.join(sorted(extra))}: absent takes name and removal"
            )
        folded = check_name(name)
        problem = removal_problem(removal)
        if problem:
            raise DeclarationError(problem)
        if removal == "destroy" and folded in UNDELETABLE:
            raise DeclarationError(f"name: OpenBao does not let anyone delete the {folded!r} policy")
    except DeclarationError as exc:
        return outcome.refuse(exc)
    what = f"policy {folded}"
    key = row_key(ctx.target, FAMILY, folded)
    row = ctx.ownership.row(key)
    if removal == "retain":
        return forget_ownership(outcome, ctx.ownership, key, row, what, test)
    try:
        live = read_policy(ctx, folded)
        if live is None:
            if row is None:
                outcome.comment.append(f"{what} is absent")
                return outcome
            return forget_ownership(outcome, ctx.ownership, key, row, what, test, already_absent=True)
        if row is None:
            raise Refused(destroy_path(what))
        if sha256(live) != _row_sha(row):
            raise Refused(
                f"{what} no longer holds the text this minion wrote, so it is not deleted. Nothing was "
                "deleted: remove it by hand if it should go."
            )
        outcome.changes = {
            "deleted": {"old": what, "new": None},
            "path_grants": {"old": grants(live), "new": None},
        }
        if test:
            outcome.result = None
            outcome.comment.append(f"{what}: would be deleted")
            return outcome
        delete_policy(ctx, folded)
    except Refused as exc:
        return outcome.fail(*exc.reasons)
    except SaltProxmoxError as exc:
        outcome.changes = {}
        return outcome.fail(str(exc))
    ctx.ownership.forget(key)
    outcome.comment.append(f"{what} has been deleted")
    return outcome
