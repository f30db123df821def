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

import contextlib
import copy
import errno
import fcntl
import json
import os
import socket
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

import yaml

from salt_proxmox.errors import SaltProxmoxError, shown

T = TypeVar("T")

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


class OwnershipStore(Protocol):
    """Where rows live. ``load`` returns every row as stored now; ``save`` stores ``rows`` (all of
    them), of which only ``changed`` differs from the last ``load`` when a key is given (a store may
    then write that row alone); ``locked`` keeps other writers out between a ``load`` and the
    ``save`` built on it."""

    def load(self) -> dict[str, dict]: ...

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None: ...

    def locked(self) -> contextlib.AbstractContextManager[None]: ...

    def derived(
        self,
        build: Callable[[Mapping[str, dict]], T],
        after: Callable[[T, str, object, object], T | None] | None = None,
    ) -> T:
        """``build`` over the rows as stored now (not a copy: ``build`` only reads them); a store
        may keep the result until its rows change, so the states of a run share it, and carry it
        over a change of one row with ``after`` (see ``_DiskStore.derived``)."""
        ...


class MemoryStore:
    """A store in a dict, for tests and dry runs; ``saves`` counts the writes."""

    def __init__(self, rows: Mapping[str, dict] | None = None):
        self.rows = copy.deepcopy(dict(rows or {}))
        self.saves = 0

    def load(self) -> dict[str, dict]:
        return copy.deepcopy(self.rows)

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None:
        self.rows = copy.deepcopy(rows)
        self.saves += 1

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def derived(
        self,
        build: Callable[[Mapping[str, dict]], T],
        after: Callable[[T, str, object, object], T | None] | None = None,
    ) -> T:
        # Built afresh each time: a test may change ``rows`` in place.
        return build(self.rows)


class OwnershipFileError(SaltProxmoxError):
    """The file holding ownership rows cannot be read as rows, or cannot be written."""


class _DiskStore:
    """Rows kept in one file, read once per run and again only when the file changed.

    - Read: the parsed document is kept with the file's identity (inode, size, mtime, ctime in
      ns); a later ``load`` re-reads only when that changed, so a run of N states parses the file
      once, yet a row another process wrote meanwhile (an ad-hoc ``salt-call proxmox.lxc_create``
      during a state run) is seen before the next write, never overwritten by a stale copy.
    - Write: the whole document goes to a temporary file in the same directory, flushed and
      fsynced, renamed over the old one, and the directory fsynced: a reader sees the old rows
      or the new ones, and the new ones are on disk before the write they guard is sent. A file
      this process may not write is refused, not replaced behind its owner's back.
    - ``locked``: an exclusive ``flock`` on ``.<name>.lock`` beside the file, held by
      ``Ownership`` from its read to its write.

    Subclasses say how the document holds the rows (``_parse``, ``_rows``, ``_with_rows``,
    ``_dump``). Every failure is an ``OwnershipFileError`` naming the file.
    """

    #: Mode of a file this store creates (an existing file keeps its own).
    MODE = 0o600

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._seen: tuple[int, ...] | None = None
        self._document: object = None
        self._derived: dict = {}

    def _identity(self) -> tuple[int, ...]:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return ()
        except OSError as exc:
            raise OwnershipFileError(f"{self.path}: cannot be read ({exc.strerror})") from None
        return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def document(self) -> object:
        """The file's parsed content as stored now (``_parse``); a missing file is empty.

        Raises OwnershipFileError when it cannot be read or parsed.
        """
        identity = self._identity()
        if identity != self._seen or self._seen is None:
            if not identity:
                document = self._parse(None)
            else:
                try:
                    with open(self.path, encoding="utf-8") as handle:
                        text = handle.read()
                except (OSError, UnicodeDecodeError) as exc:
                    why = getattr(exc, "strerror", None) or "not UTF-8 text"
                    raise OwnershipFileError(f"{self.path}: cannot be read ({why})") from None
                document = self._parse(text)
            self._seen, self._document = identity, document
        return self._document

    def load(self) -> dict[str, dict]:
        return dict(self._rows(self.document()))

    def derived(
        self,
        build: Callable[[Mapping[str, dict]], T],
        after: Callable[[T, str, object, object], T | None] | None = None,
    ) -> T:
        """``build(rows)``, computed once per version of the rows (the document read or written)
        and kept with it, so every state of a run shares it. ``after(value, key, row before, row
        after)``, when given, carries the value over one change this process wrote (None: build it
        again), so a run of N creates does not build it 2N times over N rows."""
        document = self.document()
        cached = self._derived.get(build)
        if cached is None or cached[0] is not document:
            cached = (document, build(self._rows(document)), after)
            self._derived[build] = cached
        return cached[1]

    def _carry(self, before: object, document: object, key: str) -> None:
        """Move what ``derived`` kept for ``before`` to ``document``, which differs in row ``key``."""
        old, new = self._rows(before).get(key), self._rows(document).get(key)
        for build, (kept_for, value, after) in list(self._derived.items()):
            carried = after(value, key, old, new) if after is not None and kept_for is before else None
            if carried is None:
                del self._derived[build]
            else:
                self._derived[build] = (document, carried, after)

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None:
        document = self._with_rows(self.document(), rows)
        text = self._dump(document)
        self._replace(text)
        self._seen, self._document = self._identity(), document

    @contextlib.contextmanager
    def locked(self):
        directory, name = os.path.split(os.path.abspath(self.path))
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd = os.open(os.path.join(directory, f".{name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise OwnershipFileError(f"{self.path}: its lock file cannot be made ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _replace(self, text: str) -> None:
        path = os.path.realpath(self.path)
        directory = os.path.dirname(path)
        scratch = None
        try:
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except FileNotFoundError:
                mode = self.MODE
            else:
                if not os.access(path, os.W_OK):
                    raise PermissionError(errno.EACCES, "the file is read-only for this user")
            os.makedirs(directory, mode=0o700, exist_ok=True)
            fd, scratch = tempfile.mkstemp(prefix=f".{os.path.basename(path)}-", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(scratch, path)
            scratch = None
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise OwnershipFileError(f"{self.path}: cannot be written ({exc.strerror or exc})") from None
        finally:
            if scratch is not None:
                with contextlib.suppress(OSError):
                    os.unlink(scratch)

    def _parse(self, text: str | None) -> object:
        raise NotImplementedError

    def _rows(self, document: object) -> Mapping[str, dict]:
        raise NotImplementedError

    def _with_rows(self, document: object, rows: dict[str, dict]) -> object:
        raise NotImplementedError

    def _dump(self, document: object) -> str:
        raise NotImplementedError


class FileStore(_DiskStore):
    """Rows in a JSON file: a snapshot ``{"owned": {<row key>: <row>}}`` (the shape of the
    ``salt_proxmox`` grain, so a file and a grain can be compared by eye), then one line per later
    change, ``{"key": <row key>, "row": <row or null>}``, the last line for a key winning.

    - A change appends its line and fsyncs the file before ``save`` returns, so a write costs the
      same with 10 rows as with 1000 (rewriting every row per change made creating N guests cost
      N² bytes). Once the lines outnumber the rows (and ``COMPACT_AFTER``), the next change rewrites
      the file as one snapshot, atomically (``_DiskStore``): the file stays within twice its rows.
    - A last line without its newline is an append that did not finish: ``save`` had not returned,
      so the write it guarded was never sent. It is ignored, and the next change rewrites the file
      without it. Any other line that is not such a change, or a snapshot that is not the mapping
      above, is an error naming the file and the line, never read as "no rows": that would turn
      every guest we made into an unowned one.
    - A missing file holds no rows; the file is 0600 and a directory it creates 0700. A file in the
      earlier format (the snapshot alone, indented) reads as it is.
    """

    #: Appended lines kept before a change rewrites the file as one snapshot (at least the rows').
    COMPACT_AFTER = 64

    def __init__(self, path: str | os.PathLike[str]):
        super().__init__(path)
        self._lines = 0
        self._torn = False

    def _parse(self, text: str | None) -> object:
        self._lines, self._torn = 0, False
        if text is None:
            return {"owned": {}}
        decoder = json.JSONDecoder()
        try:
            data, end = decoder.raw_decode(text, len(text) - len(text.lstrip()))
        except ValueError as exc:
            raise OwnershipFileError(f"{self.path}: not JSON ({exc.msg}); fix or restore it") from None
        if not isinstance(data, dict) or not isinstance(data.get("owned", {}), dict):
            raise OwnershipFileError(f'{self.path}: expected {{"owned": {{...}}}}; fix or restore it')
        rows = dict(data.get("owned", {}))
        lines = text[end:].split("\n")
        first = text.count("\n", 0, end) + 1
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            if number == len(lines) - 1:
                self._torn = True  # no newline after it: an append that did not finish
                break
            try:
                change = json.loads(line)
            except ValueError:
                change = None
            if not (
                isinstance(change, dict)
                and isinstance(change.get("key"), str)
                and isinstance(change.get("row", {}), dict | None)
                and "row" in change
            ):
                raise OwnershipFileError(
                    f'{self.path}: line {first + number} is not {{"key": ..., "row": ...}}; fix or restore it'
                )
            if change["row"] is None:
                rows.pop(change["key"], None)
            else:
                rows[change["key"]] = change["row"]
            self._lines += 1
        return {**data, "owned": rows}

    def _rows(self, document: object) -> Mapping[str, dict]:
        return document.get("owned", {})  # type: ignore[union-attr]

    def _with_rows(self, document: object, rows: dict[str, dict]) -> object:
        return {**document, "owned": rows}  # type: ignore[dict-item]

    def _dump(self, document: object) -> str:
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None:
        """Store ``rows``: append the line of ``changed`` (fsynced) when the file exists, holds no
        unfinished line and is not due for compaction, else rewrite the file as one snapshot.

        Raises OwnershipFileError naming the file when it cannot be written (nothing else changes).
        """
        document = self.document()
        appendable = (
            changed is not None
            and self._seen
            and not self._torn
            and self._lines < max(self.COMPACT_AFTER, len(self._rows(document)))
        )
        if not appendable:
            super().save(rows, changed)
            self._lines, self._torn = 0, False
            return
        line = json.dumps({"key": changed, "row": rows.get(changed)}, sort_keys=True) + "\n"
        self._append(line.encode())
        self._seen, self._document = self._identity(), self._with_rows(document, rows)
        self._lines += 1
        self._carry(document, self._document, changed)

    def _append(self, data: bytes) -> None:
        try:
            if not os.access(self.path, os.W_OK):
                raise PermissionError(errno.EACCES, "the file is read-only for this user")
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            # What did reach the file is an unfinished line, ignored when read (see the class).
            self._seen = None
            raise OwnershipFileError(f"{self.path}: cannot be written ({exc.strerror or exc})") from None


#: PyYAML's C parser and emitter when built with libyaml (Salt's ``salt/utils/yamldumper.py`` prefers
#: ``CSafeDumper`` too): the same safe schema as the pure-Python ones, several times faster.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class GrainStore(_DiskStore):
    """Rows in the ``salt_proxmox:owned`` grain, written straight into Salt's grains file.

    The grains file is what ``grains.setval`` writes and what Salt's ``extra.config`` grain
    loader reads at start-up (Salt 3008 ``salt/modules/grains.py`` ``setvals``,
    ``salt/grains/extra.py`` ``config``): a YAML mapping of grains, read with PyYAML's safe loader
    and written block-style with its safe dumper, as Salt does. ``grains.setval`` parses and rewrites
    the whole file and refreshes grains on every call, whether the value changed or not, and only
    logs a failed write; this store parses the file once per run, writes only a changed row, and
    raises when it cannot. ``saved(value)`` is told the new ``salt_proxmox`` grain after each write,
    so the Salt module can update the grains it holds in memory. Other grains, and other keys of the
    ``salt_proxmox`` grain, are kept.

    A file YAML cannot parse, or whose ``salt_proxmox`` grain or ``owned`` key is not a mapping, is
    an error naming the file: read as "no rows", every guest this minion made would turn foreign.
    """

    GRAIN = "salt_proxmox"

    def __init__(self, path: str | os.PathLike[str], saved: Callable[[dict], None] | None = None):
        super().__init__(path)
        self._saved = saved

    def _parse(self, text: str | None) -> object:
        if text is None:
            return {}
        try:
            data = yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            # Only the parser's problem and position: its context snippet may quote another grain.
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise OwnershipFileError(
                f"grains file {self.path} is not YAML ({problem}{where}); Salt skips such a file, so no "
                "ownership row can be read. Fix or restore the file, then run again"
            ) from None
        if data is None:
            return {}
        problem = None
        if not isinstance(data, dict):
            problem = "the file is not a mapping of grains"
        else:
            grain = data.get(self.GRAIN)
            owned = grain.get("owned") if isinstance(grain, dict) else None
            if grain is not None and not (isinstance(grain, dict) and isinstance(owned, dict | None)):
                problem = f"its {self.GRAIN} grain is not a mapping holding owned: {{<row key>: <row>}}"
        if problem:
            raise OwnershipFileError(
                f"grains file {self.path}: {problem}, so no ownership row can be read. Fix or restore the "
                "file, then run again"
            )
        return data

    def _rows(self, document: object) -> Mapping[str, dict]:
        return (document.get(self.GRAIN) or {}).get("owned") or {}  # type: ignore[union-attr]

    def _with_rows(self, document: object, rows: dict[str, dict]) -> object:
        grain = dict(document.get(self.GRAIN) or {})  # type: ignore[union-attr]
        grain["owned"] = rows
        return {**document, self.GRAIN: grain}  # type: ignore[dict-item]

    def _dump(self, document: object) -> str:
        return yaml.dump(document, Dumper=_YAML_DUMPER, default_flow_style=False)

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None:
        super().save(rows, changed)
        if self._saved is not None:
            self._saved(copy.deepcopy(self.document()[self.GRAIN]))  # type: ignore[index]


#: The file holding a minion's ownership rows, beside Salt's grains file.
ROWS_FILE = "salt_proxmox_owned.json"


def grains_file(opts: Mapping[str, object], proxy: bool = False) -> str:
    """The grains file Salt reads at start-up and ``grains.setval`` writes: ``grains`` beside the
    minion config (inside ``conf_file`` when that is a directory), under ``proxy.d/<id>/`` for a
    proxy minion (Salt 3008 ``salt/modules/grains.py`` ``setvals``, ``salt/grains/extra.py``
    ``config``)."""
    conf_file = str(opts.get("conf_file") or "")
    base = conf_file if os.path.isdir(conf_file) else os.path.dirname(conf_file)
    if proxy:
        base = os.path.join(base, "proxy.d", str(opts.get("id")))
    return os.path.join(base, "grains")


def rows_file(opts: Mapping[str, object], proxy: bool = False) -> str:
    """Where a minion keeps its ownership rows: ``ROWS_FILE`` beside its grains file (``grains_file``)."""
    return os.path.join(os.path.dirname(grains_file(opts, proxy)), ROWS_FILE)


class MinionStore(FileStore):
    """A minion's rows: ``FileStore`` rules in ``ROWS_FILE`` beside Salt's grains file, shown as the
    ``salt_proxmox:owned`` grain by this package's grains module (``saltext_proxmox/grains``).

    Not in the grains file itself: Salt parses that file at every start-up with PyYAML's pure-Python
    loader (Salt 3008 ``salt/grains/extra.py`` ``config``), before any state runs, which made
    ``salt-call test.ping`` cost about 1.5 ms per row; the grains module reads the rows as JSON.
    Rows kept in the grains file by an earlier version (``GrainStore``) are read from there while
    ``ROWS_FILE`` does not exist; the first change writes them all to ``ROWS_FILE`` and then drops
    them from the grains file, other grains kept. A grains file that cannot be read then is an
    error, never "no rows" (``GrainStore``).

    ``saved(key, row)`` is told each changed row (None: dropped) after it is on disk, so the Salt
    module can keep the grains it holds in memory current.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        grains_path: str | os.PathLike[str],
        saved: Callable[[str, dict | None], None] | None = None,
    ):
        super().__init__(path)
        self.grains = GrainStore(grains_path)
        self._saved = saved
        self._grains_checked = False

    def _parse(self, text: str | None) -> object:
        document = super()._parse(text)
        if text is None:
            return {"owned": dict(self.grains.load())}
        return document

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None:
        moving = not self._seen
        super().save(rows, changed)
        if moving or not self._grains_checked:
            self._drop_grain_rows(required=moving)
        if self._saved is not None and changed is not None:
            self._saved(changed, copy.deepcopy(rows.get(changed)))

    def _drop_grain_rows(self, required: bool) -> None:
        """Drop ``salt_proxmox:owned`` from the grains file once its rows are in ``ROWS_FILE``.
        ``required`` (they were moved just now): a grains file that cannot be read or written is an
        error; otherwise it is left to Salt, which reads no row from it any more."""
        store = self.grains
        try:
            with store.locked():
                document = store.document()
                grain = document.get(store.GRAIN) if isinstance(document, dict) else None
                if isinstance(grain, dict) and "owned" in grain:
                    rest = {key: value for key, value in grain.items() if key != "owned"}
                    kept = {key: value for key, value in document.items() if key != store.GRAIN}
                    if rest:
                        kept[store.GRAIN] = rest
                    store._replace(store._dump(kept))
        except OwnershipFileError as exc:
            if required:
                raise OwnershipFileError(
                    f"{exc} (the rows are in {self.path}; the grains file still holds an older copy)"
                ) from None
        self._grains_checked = True


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


def _version(row: Mapping[str, object] | None) -> tuple[object, object] | None:
    """What tells one version of a row from another one's: its ``phase`` and ``instance``
    (a new ``instance`` at every ``mark_creating`` and every first record)."""
    return None if row is None else (row.get("phase"), row.get("instance"))


def _shown(row: Mapping[str, object] | None) -> str:
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
        f"ownership row {key} (grain salt_proxmox:owned, kept in {ROWS_FILE} beside the grains file, or the "
        f"proxmox:ownership_file) is malformed: {why}. "
        "Nothing is decided on it: repair or delete the row (`salt-call grains.get salt_proxmox:owned` shows "
        "it), then run the state again; without a row the guest counts as unowned and needs adopt: true."
    )


def _state_index(rows: Mapping[str, object]) -> tuple[dict, dict]:
    """``({(prefix, state_id): (key, row)}, {prefix: OwnershipCorrupt})`` over ``rows``, prefix
    being ``<target>/<family>/``: the first row (by key) of each state id, as stored (the caller
    copies the one it returns), and the first malformed row of each family."""
    by_state: dict = {}
    corrupt: dict = {}
    for key, row in sorted(rows.items()):
        if not isinstance(row, dict) or key.count("/") < 2:
            continue
        prefix = "/".join(key.split("/", 2)[:2]) + "/"
        try:
            state_id = check_row(key, row).get("state_id")
        except OwnershipCorrupt as exc:
            corrupt.setdefault(prefix, exc)
            continue
        by_state.setdefault((prefix, state_id), (key, row))
    return by_state, corrupt


def _state_index_after(
    index: tuple[dict, dict], key: str, before: object, after: object
) -> tuple[dict, dict] | None:
    """``_state_index`` of the rows after row ``key`` changed from ``before`` to ``after``, from
    the index before; None when only a new build can tell (a family with a malformed row, or the
    row that was first for its state id changing its state id or leaving)."""
    by_state, corrupt = index
    if key.count("/") < 2:
        return index
    prefix = "/".join(key.split("/", 2)[:2]) + "/"
    if prefix in corrupt:
        return None
    ids = []
    for row in (before, after):
        if not isinstance(row, dict):
            ids.append(None)
            continue
        try:
            ids.append((prefix, check_row(key, row).get("state_id")))
        except OwnershipCorrupt:
            return None
    old, new = ids
    if old is not None and old != new and by_state.get(old, ("",))[0] == key:
        return None
    by_state = dict(by_state)
    # ``<=``: the row that was first for its state id keeps its place with its new content.
    if new is not None and (new not in by_state or key <= by_state[new][0]):
        by_state[new] = (key, after)
    return by_state, corrupt


class Ownership:
    """Reads and writes ownership rows through a store. Every change saves at once, under the
    store's lock and against the rows as stored now, so an error later in the run never leaves a
    row that disagrees with what was done, and a row another process wrote meanwhile is kept. A row
    that would not change is not written."""

    def __init__(self, store: OwnershipStore):
        self.store = store
        #: Per row key, the version (``_version``) this Ownership last read (``row``) or wrote: a
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
        row = self.store.load().get(key)
        found = copy.deepcopy(check_row(key, row)) if isinstance(row, dict) else None
        self._seen[key] = _version(found)
        return found

    def for_state(self, target: str, family: str, state_id: str) -> tuple[str, dict] | None:
        """The row (key, row copy) this state id recorded in ``target``'s ``family``, if any.

        Raises OwnershipCorrupt when a row of that family is malformed: it might be this state's.
        Each state of a run asks this once (each through its own ``Ownership``); the rows are
        indexed by state id once per version of the store's rows (``OwnershipStore.derived``), and
        only the row found is copied, so a run of N states neither checks nor copies N×N rows.
        """
        by_state, corrupt = self.store.derived(_state_index, _state_index_after)
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
        RowConflict, nothing written.

        Raises OwnershipFileError naming the row, what it was to become and the file.
        """
        change = doing or "written"
        try:
            with self.store.locked():
                rows = self.store.load()
                earlier = rows.get(key)
                earlier = earlier if isinstance(earlier, dict) else None
                why = None
                if key in self._seen and _version(earlier) != self._seen[key]:
                    why = (
                        f"it is {_shown(earlier)} now, not the "
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
                if row == earlier or (row is None and key not in rows):
                    self._seen[key] = _version(earlier)
                    return earlier, False
                if row is None:
                    del rows[key]
                else:
                    rows[key] = row
                self.store.save(rows, key)
                self._seen[key] = _version(row)
                return earlier, True
        except OwnershipFileError as exc:
            raise OwnershipFileError(f"ownership row {key} was not {change}: {exc}") from None
