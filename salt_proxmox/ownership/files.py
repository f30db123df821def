"""The ownership rows on disk: a JSON file (``FileStore``), Salt's grains file (``GrainStore``) and a
minion's rows file shown as its grain (``MinionStore``). Each is read once per run, re-read only when
another process changed it, written only when a row changes, atomically and fsynced, under a lock
(docs/design.md §8).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Callable, Mapping

import yaml

from salt_proxmox.ownership.stores import OwnershipFileError, T


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
      ``Ownership`` from its read to its write (of any row: ``key`` is not needed).

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
    def locked(self, key: str | None = None):
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
