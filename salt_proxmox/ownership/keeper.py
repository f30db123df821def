"""Who made what: the ownership rows of docs/design.md §8, kept in one grain (``salt_proxmox:owned``).

Each row is keyed ``<target>/<family>/<identity>`` and holds ``{phase: creating|owned,
instance: uuid, state_id, declared: {non-secret declared keys}}``, and for a guest its
``fingerprint`` (``salt_proxmox.guest.fingerprint``: what tells it from another guest at the same vmid).

- ``creating`` is written before a create's POST, with who writes it (``host``, ``pid``) and when
  (``started``, epoch seconds); a guest family adds what ties the guest to that create (the
  provision ``token`` that sends it, and the ``upid`` once PVE answers). A later run that finds
  the object with a ``creating`` row finishes it as ours only when it matches the declaration
  (and, for a guest, is tied to that create: ``salt_proxmox.guest.identity.creation_tie``).
- Each ``Ownership`` changes only the row it read or wrote itself (compared under the lock by
  ``phase`` and ``instance``): a row another process wrote meanwhile is never overwritten, put
  back or dropped (``RowConflict``), and a ``creating`` row of another process still running is
  never taken over.
- A live object with no row is unowned: plan and apply refuse it unless ``adopt: true``.
- ``state_id`` lets a later run see the same state now declaring another identity.

Storage is injected (``OwnershipStore``): Salt's grains file in production (``GrainStore``), a
dict in tests, a JSON file (``FileStore``) where grains do not last. Both files are read once per
run, re-read only when another process changed them, written only when a row changes, atomically
and fsynced, under a lock (docs/design.md §8). Under salt-ssh grains do not last: the target's
``grains.setval`` writes ``<thin_dir>/grains`` (beside the ``<thin_dir>/minion`` config salt-ssh
writes), and salt-ssh deletes the thin dir whenever it redeploys the thin or runs with ``--wipe`` (Salt 3008
``salt/client/ssh/ssh_py_shim.py``, ``need_deployment``). Nothing secret is stored: callers pass
declarations through ``LxcDeclaration.stored`` and the like.
"""

from __future__ import annotations

import copy
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping

from salt_proxmox.ownership.index import state_index, state_index_after
from salt_proxmox.ownership.rows import (
    CREATING,
    FINGERPRINT,
    OWNED,
    RowConflict,
    StoreConflict,
    check_row,
    row_shown,
    row_version,
    writer_running,
)
from salt_proxmox.ownership.stores import OwnershipFileError, OwnershipStore


class _Unsaved(OwnershipFileError):
    """A row's save failed, its message already naming the row and what it was to become."""


#: How many times ``Ownership._change`` judges a row whose check-and-set write another writer won
#: (``StoreConflict``) before it gives up with a RowConflict: each turn judges the row as it is then.
JUDGED = 3


def as_stored(rows: Mapping[str, dict]) -> Mapping[str, dict]:
    """The rows themselves, for ``OwnershipStore.derived``: read, never changed, by the caller."""
    return rows


class Ownership:
    """Reads and writes ownership rows through a store. Every change saves at once, under the
    store's lock and against the rows as stored now, so an error later in the run never leaves a
    row that disagrees with what was done, and a row another process wrote meanwhile is kept. A row
    that would not change is not written."""

    def __init__(self, store: OwnershipStore):
        self.store = store
        #: Per row key, the version (``row_version``) this Ownership last read (``row``) or wrote: a
        #: change is made only while the stored row is still that version.
        self._seen: dict[str, tuple[object, object] | None] = {}

    def row(self, key: str) -> dict | None:
        """The row for ``key`` (a copy), or None when there is none (or what is stored is no
        mapping at all, which claims nothing: the object counts as unowned, refused until
        ``adopt: true``).

        Raises OwnershipCorrupt when a mapping is stored that cannot be read as a row (see
        ``check_row``): deciding on it would crash or misread its identity; OwnershipFileError
        when the store cannot be read.
        """
        # The rows as stored now, not a copy of them all (``as_stored``): each state reads its own row.
        row = self.store.derived(as_stored).get(key)
        found = copy.deepcopy(check_row(key, row)) if isinstance(row, dict) else None
        self._seen[key] = row_version(found)
        return found

    def for_state(self, target: str, family: str, state_id: str) -> tuple[str, dict] | None:
        """The row (key, row copy) this state id recorded in ``target``'s ``family``, if any.

        Raises OwnershipCorrupt when a row of that family is malformed: it might be this state's.
        Each state of a run asks this once (each through its own ``Ownership``); the rows are
        indexed by state id once per version of the store's rows (``OwnershipStore.derived``), and
        only the row found is copied, so a run of N states neither checks nor copies N×N rows.
        """
        by_state, corrupt = self.store.derived(state_index, state_index_after)
        prefix = f"{target}/{family}/"
        if prefix in corrupt:
            raise corrupt[prefix]
        found = by_state.get((prefix, state_id))
        return None if found is None else (found[0], copy.deepcopy(found[1]))

    def mark_creating(self, key: str, state_id: str, declared: Mapping[str, object], **tie: object) -> str:
        """Record a create about to start; returns its instance id. On disk when this returns.

        The row records who writes it (``host``, ``pid``), when (``started``, epoch seconds) and
        ``tie``: what a guest family keeps to tie the guest to this create later (the provision
        ``token``; ``note_task`` adds the ``upid``).

        Raises RowConflict (nothing written) when the stored row is not the one this Ownership
        read (another process wrote one since), or is a ``creating`` row of another process that
        still runs (``writer_running``): its create may be under way. Raises OwnershipFileError
        naming the file and the row when it cannot be recorded.
        """
        instance = str(uuid.uuid4())
        row = {
            "phase": CREATING,
            "instance": instance,
            "state_id": state_id,
            "declared": dict(declared),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": int(time.time()),
            **tie,
        }

        def running(current: dict | None) -> str | None:
            if writer_running(current):
                return f"another process (pid {current.get('pid')}) is creating it now"  # type: ignore[union-attr]
            return None

        self._change(key, lambda _earlier: row, also=running, doing="set to creating")
        return instance

    def note_task(self, key: str, upid: str) -> bool:
        """Add the create task's ``upid`` to the ``creating`` row this Ownership wrote; returns
        whether it is on disk. Never raises: the create is sent already, and without its UPID the
        row still ties the guest to it by its ``token`` (``guest.identity.creation_tie``). False
        when that row is no longer there (another process changed it) or cannot be written."""

        def noted(earlier: dict | None) -> dict | None:
            return {**earlier, "upid": upid} if earlier else None

        try:
            self._change(key, noted, doing="given its task")
        except (RowConflict, OwnershipFileError):
            return False
        return True

    def mark_owned(
        self,
        key: str,
        state_id: str,
        declared: Mapping[str, object],
        fingerprint: Mapping[str, str] | None = None,
    ) -> None:
        """Record the object as ours, keeping the instance id of an earlier row; nothing is
        written when the row already says so. ``fingerprint``: a guest's
        (``salt_proxmox.guest.fingerprint``), from the read-back of our own write or the read at an
        adoption; families without one pass None.

        Raises RowConflict (nothing written) when the stored row is not the one this Ownership
        read or wrote; OwnershipFileError naming the file and the row when it cannot be recorded.
        """

        def owned(earlier: dict | None) -> dict:
            row = {
                "phase": OWNED,
                "instance": (earlier or {}).get("instance") or str(uuid.uuid4()),
                "state_id": state_id,
                "declared": dict(declared),
            }
            if fingerprint is not None:
                row[FINGERPRINT] = dict(fingerprint)
            return row

        self._change(key, owned)

    def restore(self, key: str, row: Mapping[str, object] | None) -> bool:
        """Put back exactly the row ``key`` had before (None: no row), instance id included, when
        the stored row is still the one this Ownership wrote; returns whether it did. A row another
        process wrote since (its own create of the same object) is left as it is: it speaks for
        what that process did.

        Raises OwnershipFileError naming the file and the row when it cannot be written.
        """
        kept = None if row is None else copy.deepcopy(dict(row))
        try:
            self._change(key, lambda _earlier: kept, doing="put back")
        except RowConflict:
            return False
        return True

    def forget(self, key: str) -> bool:
        """Drop the row; True when there was one.

        Raises RowConflict (nothing dropped) when the stored row is not the one this Ownership
        read or wrote; OwnershipFileError when it cannot be written.
        """
        return self._change(key, lambda _earlier: None)[0] is not None

    def _change(
        self,
        key: str,
        make: Callable[[dict | None], dict | None],
        also: Callable[[dict | None], str | None] | None = None,
        doing: str = "",
    ) -> tuple[dict | None, bool]:
        """Under the store's lock, read the rows as stored now, replace ``key``'s row by
        ``make(its row)`` (None drops it) and save, unless nothing changed. Returns (the row
        before, whether it was written).

        The row stored now must be the version this Ownership last read or wrote (when it read
        or wrote one: ``_seen``), and ``also(row)``, when given, must not name a reason: else
        RowConflict, nothing written. A store that writes check-and-set (``ownership.bao``) and
        lost the write to another writer (``StoreConflict``) holds the row as it is now: it is
        judged again by the same rules (so a row another host changed is a RowConflict, never
        overwritten), at most ``JUDGED`` times.

        Raises OwnershipFileError naming the row, what it was to become and the file.
        """
        change = doing or "written"
        try:
            for attempt in range(1, JUDGED + 1):
                try:
                    return self._judged(key, make, also, doing)
                except StoreConflict:
                    # Another host wrote the row between the read and the check-and-set write: the
                    # store holds it as it is now, and the next turn judges that row, not ours.
                    if attempt == JUDGED:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover
        except StoreConflict as exc:
            raise RowConflict(
                f"ownership row {key} was not {change}: {exc}. Another run kept changing it; what this row "
                "was to guard was not sent. Let the other run finish, then run this state again."
            ) from None
        except _Unsaved as exc:
            raise OwnershipFileError(str(exc)) from None
        except OwnershipFileError as exc:
            raise OwnershipFileError(f"ownership row {key} was not {change}: {exc}") from None

    def _judged(
        self,
        key: str,
        make: Callable[[dict | None], dict | None],
        also: Callable[[dict | None], str | None] | None,
        doing: str,
    ) -> tuple[dict | None, bool]:
        """One turn of ``_change``: the row as stored now judged and, when it is to change, saved.
        Raises StoreConflict (a check-and-set write lost) for ``_change`` to judge again."""
        change = doing or "written"
        with self.store.locked(key):
            # The rows as stored now; copied only when this row changes (a no-drift apply
            # confirms every row: copying every row for each would cost N² at N states).
            stored = self.store.derived(as_stored)
            earlier = stored.get(key)
            earlier = earlier if isinstance(earlier, dict) else None
            why = None
            if key in self._seen and row_version(earlier) != self._seen[key]:
                why = (
                    f"it is {row_shown(earlier)} now, not the "
                    f"{'row' if self._seen[key] else 'absence of a row'} this run read or wrote"
                )
            elif also is not None:
                why = also(earlier)
            row = None if why else make(earlier)
            if not doing:
                change = f"set to {row.get('phase')}" if row else "dropped"
            if why:
                raise RowConflict(
                    f"ownership row {key} was not {change}: {why}. Another run or salt-call changed it "
                    "meanwhile; it is left as that process wrote it, and what this row was to guard was "
                    "not sent. Let the other run finish, then run this state again."
                )
            if row == earlier or (row is None and key not in stored):
                self._seen[key] = row_version(earlier)
                return earlier, False
            rows = dict(stored)
            if row is None:
                del rows[key]
            else:
                rows[key] = row
            try:
                self.store.save(rows, key)
            except OwnershipFileError as exc:
                # Named by what the row was to become (set to owned, dropped), as the caller says it.
                raise _Unsaved(f"ownership row {key} was not {change}: {exc}") from None
            self._seen[key] = row_version(row)
            return earlier, True
