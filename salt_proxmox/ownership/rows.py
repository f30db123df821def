"""An ownership row and its rules (docs/design.md §8): its phases (``creating``, ``owned``), its key
(``<target>/<family>/<identity>``), its shape (``check_row``), whether a live object may be managed by
its row (``claim``), and what a plan says of an object without one.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from salt_proxmox.errors import SaltProxmoxError, shown
from salt_proxmox.ownership.stores import ROWS_FILE

CREATING = "creating"


OWNED = "owned"


#: What ``absent`` does (docs/design.md §6 Absent/removal): ``retain`` forgets the row and touches nothing;
#: ``destroy`` deletes an object this minion owns that still matches its last declaration.
REMOVALS = ("retain", "destroy")


def removal_problem(removal: object) -> str | None:
    """None when ``removal`` is one of ``REMOVALS``, else the sentence naming the key."""
    if removal in REMOVALS:
        return None
    return f"removal: expected one of {', '.join(REMOVALS)}, got {shown(removal)}"


def destroy_path(subject: str) -> str:
    """The refusal of ``removal: destroy`` on a live object without an ownership row, and the next step
    (docs/design.md §6 Absent/removal): the path from "not ours" (never adopted, or its row forgotten by
    ``removal: retain``, ``proxmox.forget`` or an earlier run) to "destroyed" is two applies, named
    here so no run is spent finding them. Absent never takes anything over, so ``adopt: true`` belongs
    on the present declaration, not the absent one (the formula refuses it there)."""
    return (
        f"{subject} exists and is not recorded as ours (never created or adopted here, or its ownership "
        "was forgotten), so it is not deleted. Nothing was deleted. "
        "To destroy it: declare it present with adopt: true and apply (the plan shows what is taken over, "
        "and the apply records it as ours), then declare it ensure: absent with removal: destroy and apply; "
        "or delete it by hand."
    )


def claim(
    row: Mapping[str, object] | None,
    adopt: bool,
    subject: str,
    *,
    matches: bool,
    alike: str,
    unlike: str,
    verb: str = "create",
) -> tuple[str | None, str | None]:
    """Whether this minion may manage a live object it found, by its row (docs/design.md §8):
    ``(refusal, None)``, ``(None, note)`` when the row must be (re)written as owned, or
    ``(None, None)`` for an object already recorded as ours.

    - no row: refused unless ``adopt`` (nothing is taken over silently); adopted, it is recorded;
    - a ``creating`` row: our interrupted ``verb`` (create, write) is finished when the object
      ``matches`` its declaration, else refused (it may be somebody else's) unless ``adopt``: the
      remedy the refusal names takes it over as it is;
    - an ``owned`` row: ours.

    ``subject`` names the object (``pool prod``); ``alike``/``unlike`` say how it compares
    (``it matches``; ``it differs in comment``).
    """
    if row is None:
        if not adopt:
            state = alike if matches else unlike
            return (
                f"{subject} exists and this minion did not {verb} it ({state}). Nothing is taken over "
                "silently: declare adopt: true to manage it.",
                None,
            )
        return None, f"{subject}: taken over (adopt: true) and recorded as ours"
    if row.get("phase") == CREATING:
        if not matches and adopt:
            return None, f"{subject}: adopt: true, so it is taken over as it is now and recorded as ours"
        if not matches:
            return (
                f"{subject} exists with a {verb} of ours recorded as unfinished, but {unlike}, so it may "
                "not be ours. Check it, then declare adopt: true.",
                None,
            )
        return None, f"{subject}: our interrupted {verb} is finished; recorded as ours"
    return None, None


def absent_note(row: Mapping[str, object] | None, subject: str, server: str, verb: str = "create") -> str:
    """What a plan says about an object ``server`` (PVE, OpenBao) does not have, by its row: ours
    before (made again), an unfinished ``verb`` of ours, or new."""
    if row and row.get("phase") != CREATING:
        return f"{subject} was ours but {server} no longer has it; would {verb} it again"
    if row:
        return f"{subject}: an earlier {verb} did not finish and it is absent; would {verb} it"
    return f"{subject}: would be created"


def row_key(target: str, family: str, identity: object) -> str:
    """``homelab/lxc/150``; names are lower-cased where the family compares them so."""
    return f"{target}/{family}/{identity}"


class RowConflict(SaltProxmoxError):
    """Another process changed a row between this process's read and its write: nothing is
    overwritten, and the write the row was to guard is not sent."""


class StoreConflict(RowConflict):
    """A store's check-and-set write of a row (``ownership.bao``) found it at another version than
    the one read: another host or run wrote it. Nothing was written; the store holds the row as it
    is now, and ``Ownership`` judges that row again rather than writing it again."""


def row_version(row: Mapping[str, object] | None) -> tuple[object, object] | None:
    """What tells one version of a row from another one's: its ``phase`` and ``instance``
    (a new ``instance`` at every ``mark_creating`` and every first record)."""
    return None if row is None else (row.get("phase"), row.get("instance"))


def row_shown(row: Mapping[str, object] | None) -> str:
    """A row as a refusal names it: ``no row``, ``owned (instance 1f2e…)``, or for a ``creating`` row
    also who wrote it (``creating (instance 1f2e…, pid 4242 on minion1)``)."""
    if row is None:
        return "no row"
    who = f", pid {row.get('pid')} on {row.get('host')}" if row.get("pid") else ""
    return f"{row.get('phase')} (instance {str(row.get('instance'))[:8]}…{who})"


def writer_running(row: Mapping[str, object] | None) -> bool:
    """True when ``row`` is a ``creating`` row written by another process that still runs on this
    host (its recorded ``pid`` answers signal 0): its create may be under way. A row of a process
    that ended (a run killed mid-create, a lost answer) is not."""
    if row is None or row.get("phase") != CREATING:
        return False
    pid = row.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or pid == os.getpid():
        return False
    if row.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    except OSError:
        return False
    return True


class OwnershipCorrupt(SaltProxmoxError):
    """A stored row does not have the shape of docs/design.md §8; nothing is decided on it."""


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value.isascii() and value.isdigit())


#: The row field that holds a guest's fingerprint (``salt_proxmox.guest.fingerprint`` makes and
#: compares it; a row only checks its shape).
FINGERPRINT = "fingerprint"


def fingerprint_problem(value: object) -> str | None:
    """None when ``value`` reads as a stored fingerprint (a mapping of text to text), else why."""
    if not isinstance(value, Mapping):
        return "its fingerprint is not a mapping"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return "its fingerprint does not map keys to text"
    return None


#: The row families whose ``vmid`` is the guest's own (a backup job's is the list of guests it names).
GUEST_ROWS = ("lxc", "qemu")


def _records_guest(key: str) -> bool:
    """Whether row ``key`` (``<target>/<family>/<identity>``) is a guest's."""
    parts = key.split("/")
    return len(parts) < 3 or parts[1] in GUEST_ROWS


def check_row(key: str, row: dict) -> dict:
    """``row`` when it reads as a row: ``phase`` creating|owned, ``state_id`` a string and
    ``declared`` a mapping (when present), whose ``vmid``, when a guest's row records one, is a number, and
    a ``fingerprint``, when present, a mapping of text to text (docs/design.md §8).

    Raises OwnershipCorrupt naming the row, what is wrong and how to repair it. Rows are written
    only by ``Ownership``, so a malformed one was edited by hand or by another tool.
    """
    why = None
    declared = row.get("declared", {})
    if row.get("phase") not in (CREATING, OWNED):
        why = f"its phase is {row.get('phase')!r:.40}, not {CREATING} or {OWNED}"
    elif not isinstance(row.get("state_id", ""), str):
        why = "its state_id is not a string"
    elif not isinstance(declared, dict):
        why = "its declared keys are not a mapping"
    elif "vmid" in declared and _records_guest(key) and not _is_number(declared["vmid"]):
        why = f"its recorded vmid {declared['vmid']!r:.40} is not a number"
    elif FINGERPRINT in row:
        why = fingerprint_problem(row[FINGERPRINT])
    if why is None:
        return row
    raise OwnershipCorrupt(
        f"ownership row {key} (grain salt_proxmox:owned, kept in {ROWS_FILE} beside the grains file, or the "
        f"proxmox:ownership_file) is malformed: {why}. "
        "Nothing is decided on it: repair or delete the row (`salt-call grains.get salt_proxmox:owned` shows "
        "it), then run the state again; without a row the guest counts as unowned and needs adopt: true."
    )
