"""PVE's global SDN lock as this minion takes it for a commit, and what a stopped run left behind.

Sources: pve-network ``src/PVE/API2/Network/SDN.pm`` (``lock``: ``POST /cluster/sdn/lock``
answers the token; ``release_lock``: ``DELETE /cluster/sdn/lock`` with ``lock-token``, or
``force``; ``reload``: ``PUT /cluster/sdn`` deletes the lock inside ``lock_sdn_config`` right after
``commit_config`` when given its token and ``release-lock`` is 1, its default, before the
``reloadnetworkall`` worker is forked) and ``src/PVE/Network/SDN.pm`` (``lock_sdn_config``: while
``/etc/pve/sdn/.lock`` holds a token, every SDN write, commit and release without that token dies
"invalid lock token provided!"; with no lock held, a release with a token deletes nothing and
succeeds). Both arrived with libpve-network-perl 1.1.3 (PVE 9); PVE 8 answers 501.

No read shows the lock, on either release. PVE 9 (pve-network 1.1.3 and later) keeps the token
in ``/etc/pve/sdn/.lock`` (``Network/SDN.pm`` ``$LOCK_TOKEN_FILE``), which only
``lock_sdn_config``, ``create_global_lock`` and ``delete_global_lock`` touch: ``/cluster/sdn/lock``
has no ``GET`` (only ``lock`` and ``release_lock``), ``GET /cluster/sdn`` (``index``) lists its
children only, and the zones', vnets' and subnets' ``index``/``read`` (``pending``, ``running``)
answer the section configs and ``running_config``, never the lock. The one answer that shows it is
the refusal of a write under ``lock_sdn_config``, which wants SDN.Allocate: no plan sends one (a
plan reads with the read credential). PVE 8 (stable-bookworm) has no global lock:
``lock_sdn_config`` is a ``cfs_lock_file`` of the running configuration. So another client's lock
is met at the apply: ``take`` refuses with the holder's lock named, before anything is written
(``held_by_another``), and an object write is refused with PVE's words (``pve.errors``).

Nor can this minion read back a lock it took, so what it took is recorded in the ownership rows
(``<target>/sdn_lock/global``, docs/design.md §8) before it can be lost: ``creating`` before the
``POST`` (a run stopped right then may hold a lock whose token nobody knows), ``owned`` with the
token once PVE answered it, dropped once the commit or a release let it go. The token is no
credential: it admits SDN writes only to a caller that already holds SDN.Allocate, who may also
release any lock with ``force``.

- every exit path of the commit that can releases the lock: a refused or uncertain commit is
  followed by a release with our token (token-guarded, so it never releases another client's
  lock, and harmless when the commit already released it);
- a release that cannot be sent is reported with the command that does it
  (``pvesh delete /cluster/sdn/lock --lock-token <token>``), and the row stays;
- a row a stopped run left is settled by the next run's first SDN state: its plan says it would
  release the lock, its apply releases it with the token before writing anything. A ``creating``
  row (token unknown) is reported with ``--force 1``; the apply then drops it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from salt_proxmox.errors import Refused, SaltProxmoxError
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.rows import CREATING, row_key
from salt_proxmox.pve.errors import PveError

PATH = "cluster/sdn/lock"


def key(ctx) -> str:
    """The ownership row key of the lock this minion holds on ``ctx``'s target."""
    return row_key(ctx.target.name, "sdn_lock", "global")


def release_command(token: str | None) -> str:
    """The command that releases the lock: with its token, or ``--force 1`` when it is unknown."""
    return (
        f"`pvesh delete /cluster/sdn/lock --lock-token {token}`"
        if token
        else ("`pvesh delete /cluster/sdn/lock --force 1`")
    )


def take(ctx, credential, state_id: str) -> str | None:
    """Take the lock (``allow-pending``: the changes to commit ARE pending) and record it; returns
    the token, or None on a release without the lock API (HTTP 501). Raises Refused when another
    client holds it (``held_by_another``), PveError (refused otherwise; neither keeps a row),
    PveUnreachable or Uncertain (the ``creating`` row kept: the lock may be held)."""
    taken = int(time.time())
    ctx.ownership.mark_creating(key(ctx), state_id, {"taken": taken})
    try:
        token = ctx.client.request("POST", PATH, credential, form={"allow-pending": "1"})
    except PveError as error:
        ctx.ownership.forget(key(ctx))
        if "invalid lock token" in error.message:
            raise Refused(held_by_another(error.message)) from error
        if error.status != 501:
            raise
        return None
    if not isinstance(token, str) or not token:
        ctx.ownership.forget(key(ctx))
        return None
    ctx.ownership.mark_owned(key(ctx), state_id, {"taken": taken, "token": token})
    return token


def held_by_another(message: str) -> str:
    """The refusal of a commit whose ``POST /cluster/sdn/lock`` PVE answered ``message``
    ("could not acquire lock for SDN config: invalid lock token provided!": ``lock_sdn_config``
    found a token in ``/etc/pve/sdn/.lock`` and was given none)."""
    return (
        f"another client holds PVE's global SDN lock (POST /cluster/sdn/lock: {message}), and PVE refuses "
        "every SDN write and commit without its token. No read shows the lock, so the plan could not say "
        "so. Wait for that client's transaction to commit or roll back; if its holder died, release the "
        f"lock with {release_command(None)}, then run the state again."
    )


def committed(ctx) -> None:
    """The commit answered its UPID: PVE released the lock with it; the row goes."""
    ctx.ownership.forget(key(ctx))


def release(ctx, credential, token: str) -> str | None:
    """Release our lock with its token and drop the row; None when done (or when the lock is no
    longer ours: another token holds it), else the sentence saying the lock is ours and the command
    that releases it (the row stays)."""
    try:
        ctx.client.request("DELETE", PATH, credential, params={"lock-token": token})
    except PveError as error:
        if "invalid lock token" not in error.message:
            return _still_ours(token, str(error))
    except SaltProxmoxError as exc:
        return _still_ours(token, str(exc))
    ctx.ownership.forget(key(ctx))
    return None


def _still_ours(token: str, why: str) -> str:
    return (
        f"PVE's global SDN lock is still held by this minion, and its release failed ({why}). Every SDN "
        f"write of other clients is refused until it is released: run {release_command(token)}."
    )


def leftover(ctx) -> dict | None:
    """The lock row a stopped run of this minion left, or None."""
    return ctx.ownership.row(key(ctx))


def settle(ctx, test: bool, outcome: Outcome) -> bool:
    """Settle a lock a stopped run left before an SDN state writes: under ``test`` add the release
    to the plan (``changes['sdn_lock']``); otherwise release it with its token. Returns False, with
    ``outcome`` failed, when it cannot be settled. Raises OwnershipCorrupt, OwnershipFileError."""
    row = leftover(ctx)
    if row is None:
        return True
    declared = row.get("declared") or {}
    token, taken = declared.get("token"), declared.get("taken")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(taken)) if isinstance(taken, int) else "?"
    whose = f"state {row.get('state_id')} of an earlier run took PVE's global SDN lock at {when}"
    if row.get("phase") == CREATING or not isinstance(token, str):
        outcome.fail(
            f"{whose} and was stopped before PVE's answer was recorded, so the lock may be held with a token "
            "nobody knows; PVE then refuses every SDN write with 'invalid lock token provided!'. If it "
            f"does and no other client is in an SDN transaction, release it with {release_command(None)}, "
            "then run the state again." + ("" if test else " This record is dropped now.")
        )
        if not test:
            ctx.ownership.forget(key(ctx))
        return False
    if test:
        outcome.changes["sdn_lock"] = {"old": "held by this minion", "new": "released"}
        outcome.comment.append(f"{whose} and did not release it (its run was stopped): would release it")
        outcome.result = None
        return True
    problem = release(ctx, ctx.broker.provision(), token)
    if problem:
        outcome.fail(f"{whose} and did not release it. {problem}", "Nothing else was written.")
        return False
    outcome.changes["sdn_lock"] = {"old": "held by this minion", "new": "released"}
    outcome.comment.append(f"{whose} and did not release it (its run was stopped): released")
    return True


def settled_first(ctx, test: bool, act: Callable[[], Outcome]) -> Outcome:
    """``act()`` (an SDN state), after ``settle``: its outcome carries the settling's changes and
    comment, and is not run when the lock cannot be settled. Never raises for a known failure."""
    first = Outcome()
    try:
        if not settle(ctx, test, first):
            return first
    except SaltProxmoxError as exc:
        return first.fail(f"PVE's global SDN lock: {exc}", "Nothing was written.")
    done = act()
    done.changes = {**first.changes, **done.changes}
    done.comment = first.comment + done.comment
    if first.result is None and done.result is True:
        done.result = None
    return done
