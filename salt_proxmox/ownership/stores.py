"""Where ownership rows are kept (``OwnershipStore``): a dict in tests (``MemoryStore``), and where the
files of a minion live (``ROWS_FILE`` beside its grains file: ``grains_file``, ``rows_file``); the
files themselves are ``ownership.files``.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from salt_proxmox.errors import SaltProxmoxError

T = TypeVar("T")


class OwnershipStore(Protocol):
    """Where rows live. ``load`` returns every row as stored now; ``save`` stores ``rows`` (all of
    them), of which only ``changed`` differs from the last ``load`` when a key is given (a store may
    then write that row alone); ``locked(key)`` keeps other writers of row ``key`` (of every row,
    without one) out between the read of the rows as stored now and the ``save`` built on it.

    A store that cannot keep other writers out (OpenBao: ``ownership.bao``) reads row ``key`` again
    in ``locked`` and writes it check-and-set in ``save``. A writer that got there first is
    ``RowConflict`` raised by ``save`` (``bao.StoreConflict``): nothing written, the row as stored
    now readable again, and the caller (``Ownership``) judges that row again instead of writing. A
    store that cannot be read or written raises ``OwnershipFileError`` naming where the rows are,
    never an empty answer."""

    def load(self) -> dict[str, dict]: ...

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None: ...

    def locked(self, key: str | None = None) -> contextlib.AbstractContextManager[None]: ...

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

    def locked(self, key: str | None = None) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def derived(
        self,
        build: Callable[[Mapping[str, dict]], T],
        after: Callable[[T, str, object, object], T | None] | None = None,
    ) -> T:
        # Built afresh each time: a test may change ``rows`` in place.
        return build(self.rows)


class OwnershipFileError(SaltProxmoxError):
    """The file (or OpenBao: ``bao.OwnershipBaoError``) holding ownership rows cannot be read as
    rows, or cannot be written."""


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
