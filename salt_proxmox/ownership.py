"""Who made what: the ownership rows of docs/design.md §8, kept in one grain (``salt_proxmox:owned``).

Each row is keyed ``<target>/<family>/<identity>`` and holds ``{phase: creating|owned,
instance: uuid, state_id, declared: {non-secret declared keys}}``, and for a guest its
``fingerprint`` (``salt_proxmox.fingerprint``: what tells it from another guest at the same vmid).

- ``creating`` is written before a create's POST; a later run that finds the guest with a
  ``creating`` row and a matching declaration finishes it as ours.
- A live object with no row is unowned: plan and apply refuse it unless ``adopt: true``.
- ``state_id`` lets a later run see the same state now declaring another identity.

Storage is injected (``OwnershipStore``): Salt grains in production, a dict in tests, a JSON file
(``FileStore``) where grains do not last. Under salt-ssh they do not: the target's ``grains.setval``
writes ``<thin_dir>/grains`` (beside the ``<thin_dir>/minion`` config salt-ssh writes), and salt-ssh
deletes the thin dir whenever it redeploys the thin or runs with ``--wipe`` (Salt 3008
``salt/client/ssh/ssh_py_shim.py``, ``need_deployment``). Nothing secret is stored: callers pass
declarations through ``LxcDeclaration.stored`` and the like.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Mapping
from typing import Protocol

from salt_proxmox.errors import SaltProxmoxError, shown
from salt_proxmox.fingerprint import FIELD as FINGERPRINT
from salt_proxmox.fingerprint import problem as fingerprint_problem

CREATING = "creating"
OWNED = "owned"
#: What ``absent`` does (docs/design.md §6 Absent/removal): ``retain`` forgets the row and touches nothing;
#: ``destroy`` deletes an object this minion owns that still matches its last declaration.
REMOVALS = ("retain", "destroy")


def adopt_problem(adopt: object) -> str | None:
    """None when ``adopt`` (take over a live object with no row) is a bool, else the sentence."""
    return None if isinstance(adopt, bool) else f"adopt: expected true or false, got {shown(adopt)}"


def removal_problem(removal: object) -> str | None:
    """None when ``removal`` is one of ``REMOVALS``, else the sentence naming the key."""
    if removal in REMOVALS:
        return None
    return f"removal: expected one of {', '.join(REMOVALS)}, got {shown(removal)}"


class OwnershipStore(Protocol):
    """Where rows live. ``load`` returns every row; ``save`` replaces them all."""

    def load(self) -> dict[str, dict]: ...

    def save(self, rows: dict[str, dict]) -> None: ...


class MemoryStore:
    """A store in a dict, for tests and dry runs."""

    def __init__(self, rows: Mapping[str, dict] | None = None):
        self.rows = copy.deepcopy(dict(rows or {}))
        self.saves = 0

    def load(self) -> dict[str, dict]:
        return copy.deepcopy(self.rows)

    def save(self, rows: dict[str, dict]) -> None:
        self.rows = copy.deepcopy(rows)
        self.saves += 1


class FileStore:
    """Rows in a JSON file, ``{"owned": {<row key>: <row>}}`` — the shape of the ``salt_proxmox``
    grain, so a file and a grain can be compared by eye.

    A missing file holds no rows. ``save`` writes a temporary file in the same directory and renames
    it over the old one, so a reader sees the old rows or the new ones, never half; the file is 0600
    and a directory it creates is 0700. A file that is not such a JSON object is an error, never
    read as "no rows": that would turn every guest we made into an unowned one.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)

    def load(self) -> dict[str, dict]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise OwnershipFileError(f"{self.path}: not JSON ({exc.msg}); fix or restore it") from None
        owned = data.get("owned", {}) if isinstance(data, dict) else None
        if not isinstance(owned, dict):
            raise OwnershipFileError(f'{self.path}: expected {{"owned": {{...}}}}; fix or restore it')
        return owned

    def save(self, rows: dict[str, dict]) -> None:
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=".owned-", suffix=".json", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"owned": rows}, handle, indent=2, sort_keys=True)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(scratch, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(scratch)
            raise


class GrainStore:
    """Rows in the ``salt_proxmox:owned`` grain, through two callables the Salt module hands over
    (``grains.get`` and ``grains.setval``), so this package still imports nothing from Salt.
    Other keys of the ``salt_proxmox`` grain are kept."""

    GRAIN = "salt_proxmox"

    def __init__(self, get: Callable[..., object], setval: Callable[[str, object], object]):
        self.get = get
        self.setval = setval

    def load(self) -> dict[str, dict]:
        value = self.get(self.GRAIN, {})
        owned = value.get("owned") if isinstance(value, dict) else None
        return dict(owned) if isinstance(owned, dict) else {}

    def save(self, rows: dict[str, dict]) -> None:
        value = self.get(self.GRAIN, {})
        value = dict(value) if isinstance(value, dict) else {}
        value["owned"] = rows
        self.setval(self.GRAIN, value)


def store_for(
    path: str | None, get: Callable[..., object], setval: Callable[[str, object], object]
) -> OwnershipStore:
    """The store a minion uses: the file ``proxmox:ownership_file`` names (salt-ssh, where grains
    do not last), else the grain."""
    return FileStore(path) if path else GrainStore(get, setval)


class OwnershipFileError(SaltProxmoxError):
    """The ownership file cannot be read as rows."""


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
      ``matches`` its declaration, else refused (it may be somebody else's);
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


class OwnershipCorrupt(SaltProxmoxError):
    """A stored row does not have the shape of docs/design.md §8; nothing is decided on it."""


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value.isascii() and value.isdigit())


def check_row(key: str, row: dict) -> dict:
    """``row`` when it reads as a row: ``phase`` creating|owned, ``state_id`` a string and
    ``declared`` a mapping (when present), whose ``vmid``, when it records one, is a number, and
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
    elif "vmid" in declared and not _is_number(declared["vmid"]):
        why = f"its recorded vmid {declared['vmid']!r:.40} is not a number"
    elif FINGERPRINT in row:
        why = fingerprint_problem(row[FINGERPRINT])
    if why is None:
        return row
    raise OwnershipCorrupt(
        f"ownership row {key} (grain salt_proxmox:owned, or the proxmox:ownership_file) is malformed: {why}. "
        "Nothing is decided on it: repair or delete the row (`salt-call grains.get salt_proxmox:owned` shows "
        "it), then run the state again; without a row the guest counts as unowned and needs adopt: true."
    )


class Ownership:
    """Reads and writes ownership rows through a store. Every write saves at once, so an error
    later in the run never leaves a row that disagrees with what was done."""

    def __init__(self, store: OwnershipStore):
        self.store = store

    def row(self, key: str) -> dict | None:
        """The row for ``key``, or None when there is none (or what is stored is no mapping at all,
        which claims nothing: the object counts as unowned, refused until ``adopt: true``).

        Raises OwnershipCorrupt when a mapping is stored that cannot be read as a row (see
        ``check_row``); deciding on it would crash or misread its identity.
        """
        row = self.store.load().get(key)
        return check_row(key, row) if isinstance(row, dict) else None

    def for_state(self, target: str, family: str, state_id: str) -> tuple[str, dict] | None:
        """The row (key, row) this state id recorded in ``target``'s ``family``, if any.

        Raises OwnershipCorrupt when a row of that family is malformed: it might be this state's.
        """
        prefix = f"{target}/{family}/"
        for key, row in sorted(self.store.load().items()):
            if (
                key.startswith(prefix)
                and isinstance(row, dict)
                and check_row(key, row).get("state_id") == state_id
            ):
                return key, row
        return None

    def mark_creating(self, key: str, state_id: str, declared: Mapping[str, object]) -> str:
        """Record a create about to start; returns its instance id."""
        instance = str(uuid.uuid4())
        self._put(
            key, {"phase": CREATING, "instance": instance, "state_id": state_id, "declared": dict(declared)}
        )
        return instance

    def mark_owned(
        self,
        key: str,
        state_id: str,
        declared: Mapping[str, object],
        fingerprint: Mapping[str, str] | None = None,
    ) -> None:
        """Record the object as ours, keeping the instance id of an earlier row. ``fingerprint``:
        a guest's (``salt_proxmox.fingerprint``), from the read-back of our own write or the read
        at an adoption; families without one pass None."""
        earlier = self.row(key) or {}
        row = {
            "phase": OWNED,
            "instance": earlier.get("instance") or str(uuid.uuid4()),
            "state_id": state_id,
            "declared": dict(declared),
        }
        if fingerprint is not None:
            row[FINGERPRINT] = dict(fingerprint)
        self._put(key, row)

    def restore(self, key: str, row: Mapping[str, object] | None) -> None:
        """Put back exactly the row ``key`` had before (None: no row), instance id included."""
        if row is None:
            self.forget(key)
        else:
            self._put(key, copy.deepcopy(dict(row)))

    def forget(self, key: str) -> bool:
        """Drop the row; True when there was one."""
        rows = self.store.load()
        if key not in rows:
            return False
        del rows[key]
        self.store.save(rows)
        return True

    def _put(self, key: str, row: dict) -> None:
        rows = self.store.load()
        rows[key] = row
        self.store.save(rows)
