"""Ownership rows in OpenBao (docs/design.md §8, "Rows in OpenBao"): one KV version 2 entry per row,
every write check-and-set against the version read, so two hosts running the same pillar share their
rows and neither overwrites the other's change.

    proxmox:
      ownership: {store: openbao, mount: secret, path: salt-proxmox/homelab}

- Row ``<target>/<rest>`` lives at ``<mount>/data/<path>/rows/<target>/<rest, %-quoted>`` as
  ``{key, row}``; a dropped row is ``row: null`` (KV version 2 has no check-and-set delete:
  OpenBao ``builtin/logical/kv`` ``path_data.go`` ``pathDataDelete`` takes no ``cas``).
- ``load`` lists ``<path>/rows/`` and each target under it, then reads each row once per run.
  A list answering 404 with no error is no rows; any other failure (sealed, 403, a mount that is
  not KV version 2, unreachable) is ``OwnershipBaoError`` naming the mount and the path, never
  "no rows".
- ``locked(key)`` re-reads row ``key`` and the version it is at; ``save`` writes it with ``cas`` =
  that version (0: no entry yet). OpenBao answers a stale ``cas`` with HTTP 400 "check-and-set
  parameter did not match the current version" (``path_data.go`` ``pathDataWrite``): that is
  ``StoreConflict`` (a ``RowConflict``), the row re-read so the caller judges it again, nothing
  written.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import threading
from collections.abc import Callable, Mapping
from urllib.parse import quote, unquote

import hvac
import hvac.exceptions
import requests

from salt_proxmox.errors import DeclarationError
from salt_proxmox.openbao.client import describe_failure
from salt_proxmox.ownership.rows import StoreConflict
from salt_proxmox.ownership.stores import OwnershipFileError, T

#: ``proxmox:ownership`` keys by store (``parse_ownership``).
STORE_KEYS = {"file": {"store"}, "openbao": {"store", "mount", "path", "lock_timeout", "lock_ttl"}}

#: Seconds a second apply waits for a target's run lock before failing (``lock_timeout``).
LOCK_TIMEOUT = 60

#: Seconds a run lock lasts unless renewed (``lock_ttl``); each state of the run renews it.
LOCK_TTL = 600

#: Rows read at once by the first ``load`` of a run (``OpenBaoStore._read_all``).
READERS = 8

#: OpenBao's answer to a write whose ``cas`` is not the entry's current version (``path_data.go``).
CAS_MISMATCH = "check-and-set parameter did not match the current version"


class OwnershipBaoError(OwnershipFileError):
    """OpenBao holding the rows cannot be read or written (an ``OwnershipFileError``, so every
    caller treats it as a rows file it cannot use: the state fails, nothing is decided)."""


def parse_ownership(raw: object) -> dict:
    """``proxmox:ownership``: ``{store: file}`` (the default, also when ``raw`` is None) or ``{store:
    openbao, mount, path, lock_timeout: 60, lock_ttl: 600}`` (seconds). Returns the checked mapping.

    Raises DeclarationError naming each bad key.
    """
    if raw is None:
        return {"store": "file"}
    where = "proxmox:ownership"
    if not isinstance(raw, Mapping):
        raise DeclarationError(f"{where}: expected a mapping such as {{store: openbao, mount: kv, path: p}}")
    store = raw.get("store", "file")
    if store not in STORE_KEYS:
        raise DeclarationError(f"{where}:store: expected file or openbao, got {str(store)[:40]!r}")
    problems = [f"{where}:{key}: unknown key" for key in sorted(map(str, set(raw) - STORE_KEYS[store]))]
    if store == "file":
        if problems:
            raise DeclarationError(problems)
        return {"store": "file"}
    checked: dict = {"store": store}
    for key in ("mount", "path"):
        value = raw.get(key)
        text = value.strip("/") if isinstance(value, str) else ""
        if not text or not text.isprintable() or any(part in ("", ".", "..") for part in text.split("/")):
            problems.append(f"{where}:{key}: expected a KV version 2 {key} such as salt-proxmox")
        checked[key] = text
    for key, default in (("lock_timeout", LOCK_TIMEOUT), ("lock_ttl", LOCK_TTL)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value > 86400:
            problems.append(f"{where}:{key}: expected seconds from 0 to 86400")
        checked[key] = value
    if checked.get("lock_ttl") == 0:
        problems.append(f"{where}:lock_ttl: a lock that lasts 0 seconds guards nothing")
    if problems:
        raise DeclarationError(problems)
    return checked


def policy_hcl(mount: str, path: str) -> str:
    """The OpenBao policy granting exactly what this store and the run lock use under ``mount``/
    ``path`` (KV version 2: ``data/`` to read and write, ``metadata/`` to list; the mount's
    ``sys/internal/ui/mounts`` entry, which ``OpenBaoStore`` reads to check the engine's version, is
    answered to any token holding a capability on the mount)."""
    return (
        f'path "{mount}/data/{path}/rows/*" {{\n  capabilities = ["create", "read", "update"]\n}}\n'
        f'path "{mount}/metadata/{path}/rows/*" {{\n  capabilities = ["list"]\n}}\n'
        f'path "{mount}/metadata/{path}/rows" {{\n  capabilities = ["list"]\n}}\n'
        f'path "{mount}/data/{path}/locks/*" {{\n  capabilities = ["create", "read", "update"]\n}}\n'
    )


def bao_call(where: str, call: Callable[[], object]) -> object:
    """``call()`` (an hvac request) or ``OwnershipBaoError`` naming ``where`` and the cause (never
    a token). A stale ``cas`` is ``StoreConflict``."""
    try:
        return call()
    except hvac.exceptions.InvalidRequest as exc:
        if CAS_MISMATCH in " ".join(map(str, exc.errors or ())):
            raise StoreConflict(f"{where}: another writer changed it since it was read") from None
        raise OwnershipBaoError(f"{where}: {describe_failure(exc)}") from None
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise OwnershipBaoError(f"{where}: {describe_failure(exc)}") from None


def not_found(exc: BaseException) -> bool:
    """True for OpenBao's 404 of a KV version 2 entry or list that does not exist (``errors: []``);
    a 404 naming an error (no such mount: "no handler for route") is a failure, never absence."""
    return isinstance(exc, hvac.exceptions.InvalidPath) and not exc.errors


class OpenBaoStore:
    """The ``OwnershipStore`` of rows in OpenBao (see the module). ``client``: an authenticated
    ``hvac.Client`` (``openbao.client.connect``); ``mount``/``path``: from ``parse_ownership``. Made
    once per run: rows are read at the first ``load`` and each changed row read again under
    ``locked``. ``requests`` counts what it sent, for tests and the benchmark. ``lock_timeout`` and
    ``lock_ttl``: the run lock's (``parse_ownership``)."""

    def __init__(
        self,
        client: hvac.Client,
        mount: str,
        path: str,
        lock_timeout: float = LOCK_TIMEOUT,
        lock_ttl: float = LOCK_TTL,
    ):
        self.client = client
        self.mount = mount
        self.path = path
        #: Seconds an apply waits for a target's run lock, and how long a lock lasts unrenewed
        #: (``run.locking``).
        self.lock_timeout = lock_timeout
        self.lock_ttl = lock_ttl
        self.requests = 0
        self._rows: dict[str, dict] | None = None
        #: Per row key, the KV version last read or written (0: no entry).
        self._versions: dict[str, int] = {}
        self._derived: dict = {}
        self._guard: str | None = None
        self._checked = False

    def __repr__(self) -> str:
        return f"OpenBaoStore({self.mount}/{self.path})"

    def where(self, key: str | None = None) -> str:
        """How a message names the store, or one row's entry in it (never a token)."""
        if key is None:
            return f"OpenBao KV mount {self.mount}, path {self.path}/rows"
        return f"ownership row {key} in OpenBao KV mount {self.mount} at {self.entry(key)}"

    def entry(self, key: str) -> str:
        """The entry of row ``key`` under the mount: ``<path>/rows/<target>/<rest, %-quoted>``."""
        target, _, rest = key.partition("/")
        return f"{self.path}/rows/{quote(target, safe='')}/{quote(rest, safe='')}"

    def _send(self, where: str, call: Callable[[], object]) -> object:
        self.requests += 1
        return bao_call(where, call)

    def _check_engine(self) -> None:
        """The mount must be KV version 2: a version 1 mount would take ``cas`` and ignore it. Read
        from ``sys/internal/ui/mounts/<mount>``, what OpenBao's own ``bao kv`` reads."""
        if self._checked:
            return
        where = f"OpenBao KV mount {self.mount}"
        url = f"/v1/sys/internal/ui/mounts/{quote(self.mount)}"
        answer = self._send(where, lambda: self.client.adapter.get(url))
        data = answer.get("data") if isinstance(answer, Mapping) else None
        options = (data or {}).get("options") or {}
        if not isinstance(data, Mapping) or data.get("type") != "kv" or str(options.get("version")) != "2":
            raise OwnershipBaoError(
                f"{where} is not a KV version 2 secrets engine, which ownership rows need (check-and-set): "
                f"enable one (bao secrets enable -path={self.mount} kv-v2) or name another mount"
            )
        self._checked = True

    def _list(self, directory: str) -> list[str]:
        where = f"OpenBao KV mount {self.mount}, list {directory}"
        try:
            self.requests += 1
            answer = self.client.secrets.kv.v2.list_secrets(directory, mount_point=self.mount)
        except hvac.exceptions.InvalidPath as exc:
            if not_found(exc):
                return []
            raise OwnershipBaoError(f"{where}: {describe_failure(exc)}") from None
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            raise OwnershipBaoError(f"{where}: {describe_failure(exc)}") from None
        keys = (answer.get("data") or {}).get("keys") if isinstance(answer, Mapping) else None
        if not isinstance(keys, list) or not all(isinstance(name, str) for name in keys):
            raise OwnershipBaoError(f"{where}: the answer holds no list of keys")
        return keys

    def _read(self, key: str) -> tuple[dict | None, int]:
        """Row ``key`` as stored now and its version: (None, 0) for no entry, (None, version) for a
        dropped row or a deleted version."""
        where = self.where(key)
        entry = self.entry(key)
        try:
            self.requests += 1
            answer = self.client.secrets.kv.v2.read_secret_version(
                entry, mount_point=self.mount, raise_on_deleted_version=False
            )
        except hvac.exceptions.InvalidPath as exc:
            if not_found(exc):
                return None, 0
            raise OwnershipBaoError(f"{where}: {describe_failure(exc)}") from None
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            raise OwnershipBaoError(f"{where}: {describe_failure(exc)}") from None
        data = answer.get("data") if isinstance(answer, Mapping) else None
        metadata = (data or {}).get("metadata") if isinstance(data, Mapping) else None
        version = (metadata or {}).get("version") if isinstance(metadata, Mapping) else None
        if isinstance(version, bool) or not isinstance(version, int):
            raise OwnershipBaoError(f"{where}: the answer holds no KV version 2 entry")
        stored = data.get("data")
        if stored is None:  # a version deleted by hand: no row, at that version
            return None, version
        if not isinstance(stored, Mapping) or stored.get("key") != key or "row" not in stored:
            raise OwnershipBaoError(
                f"{where}: expected {{key: {key}, row: ...}} as this store writes; fix or delete the entry"
            )
        row = stored["row"]
        if row is not None and not isinstance(row, dict):
            raise OwnershipBaoError(f"{where}: its row is not a mapping; fix or delete the entry")
        return row, version

    def _load(self) -> dict[str, dict]:
        if self._rows is None:
            self._check_engine()
            keys = []
            for target in self._list(f"{self.path}/rows"):
                if target.endswith("/"):
                    names = self._list(f"{self.path}/rows/{target.rstrip('/')}")
                    keys += [f"{unquote(target.rstrip('/'))}/{unquote(name)}" for name in names]
            rows: dict[str, dict] = {}
            for key, (row, version) in zip(keys, self._read_all(keys), strict=True):
                self._versions[key] = version
                if row is not None:
                    rows[key] = row
            self._rows = rows
        return self._rows

    def _read_all(self, keys: list[str]) -> list[tuple[dict | None, int]]:
        """``_read`` of each key, ``READERS`` at once, each reader with a session of its own
        (``requests.Session`` is not safe to share between threads). One entry per row costs one
        request per row: read one by one, 1000 rows took 2.4 s on loopback (docs/design.md §8)."""
        if len(keys) < 2 * READERS:
            return [self._read(key) for key in keys]
        local = threading.local()
        main = self.client

        def read(key: str) -> tuple[dict | None, int]:
            if not hasattr(local, "store"):
                # The run's adapter (URL, token, TLS, timeout) on a session of this thread's.
                adapter = type(main.adapter).from_adapter(main.adapter)
                adapter.session = requests.Session()
                local.store = OpenBaoStore(hvac.Client(adapter=lambda **_: adapter), self.mount, self.path)
            return local.store._read(key)

        with concurrent.futures.ThreadPoolExecutor(READERS) as pool:
            found = list(pool.map(read, keys))
        self.requests += len(keys)
        return found

    def load(self) -> dict[str, dict]:
        """Every row, as read at this store's first ``load`` and changed since by this process or
        re-read under ``locked`` (a copy). Raises OwnershipBaoError naming the mount and path."""
        return copy.deepcopy(self._load())

    def derived(
        self,
        build: Callable[[Mapping[str, dict]], T],
        after: Callable[[T, str, object, object], T | None] | None = None,
    ) -> T:
        """``build(rows)``, kept until a row changes and carried over each change by ``after`` (as
        ``files._DiskStore.derived``)."""
        rows = self._load()
        cached = self._derived.get(build)
        if cached is None:
            cached = (build(rows), after)
            self._derived[build] = cached
        return cached[0]

    def _set(self, key: str, row: dict | None, version: int) -> None:
        """Keep ``row`` (None: none) at ``version`` as row ``key``, carrying what ``derived`` kept."""
        rows = self._load()
        before = rows.get(key)
        self._versions[key] = version
        if row is None:
            rows.pop(key, None)
        else:
            rows[key] = row
        if before == row:
            return
        for build, (value, after) in list(self._derived.items()):
            carried = after(value, key, before, row) if after is not None else None
            if carried is None:
                del self._derived[build]
            else:
                self._derived[build] = (carried, after)

    @contextlib.contextmanager
    def locked(self, key: str | None = None):
        """Row ``key`` read again (it and its version, as OpenBao holds them now) for the ``save``
        built on it, which writes check-and-set against that version. OpenBao has no lock a client
        holds: another writer is kept out by ``cas``, not by waiting. Without ``key`` nothing is
        read and ``save`` is refused (a store of one row per entry writes one row at a time)."""
        self._load()
        if key is not None:
            row, version = self._read(key)
            self._set(key, row, version)
        self._guard = key
        try:
            yield
        finally:
            self._guard = None

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None:
        """Write row ``changed`` as ``rows`` holds it (absent: dropped, written as ``row: null``) with
        ``cas`` = the version ``locked(changed)`` read.

        Raises StoreConflict when another writer wrote it since (the row is read again, nothing
        written), OwnershipBaoError naming the entry when OpenBao refuses or cannot be reached, and
        ValueError when called without ``changed`` or outside ``locked(changed)``.
        """
        if changed is None or changed != self._guard:
            raise ValueError("OpenBaoStore.save writes one row, inside locked(that row)")
        row = copy.deepcopy(rows.get(changed))
        version = self._versions.get(changed, 0)
        where = self.where(changed)
        data = {"key": changed, "row": row}
        try:
            answer = self._send(
                where,
                lambda: self.client.secrets.kv.v2.create_or_update_secret(
                    self.entry(changed), data, cas=version, mount_point=self.mount
                ),
            )
        except StoreConflict:
            now, at = self._read(changed)
            self._set(changed, now, at)
            raise
        written = (answer.get("data") or {}).get("version") if isinstance(answer, Mapping) else None
        if isinstance(written, bool) or not isinstance(written, int):
            # Written, yet at a version not known: the next change of this row reads it again first.
            written = version + 1
        self._set(changed, row, written)
