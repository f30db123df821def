"""A snippet on the lane's node: read, written and removed as a local file (the pvesh lane runs on a
node of the cluster as root, so the storage's directory is this machine's).

- ``read``: the file's sha256, size and mode, or None when it is absent — and absent only when the
  directory that would hold it (or, before the first snippet, the storage's path) exists and can be
  listed. A path that cannot be read is an error, never absence.
- ``write``: atomic: a temporary file in the same directory, written, synced, given its mode, then
  renamed over the name, so a guest starting meanwhile reads the old or the new file, never half of
  one. The snippets directory is created when missing, as pve-storage ``Plugin.pm``
  ``activate_storage`` creates each content directory of the storage (``File::Path::make_path`` of
  ``get_subdir``).
- ``remove``: unlink.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass

from salt_proxmox.errors import SaltProxmoxError


class SnippetUnreadable(SaltProxmoxError):
    """The snippet, its directory or the storage's path cannot be read: nothing is proven absent."""


@dataclass(frozen=True)
class OnDisk:
    """A snippet as the file is: ``sha256`` of its bytes, ``size``, ``mode`` (permission bits)."""

    sha256: str
    size: int
    mode: int


def _listable(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.R_OK | os.X_OK)


def read(storage_path: str, directory: str, file: str) -> OnDisk | None:
    """The file ``directory/file`` (``directory`` under ``storage_path``), or None when it is proven
    absent (module docstring). Raises SnippetUnreadable otherwise."""
    path = os.path.join(directory, file)
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise SnippetUnreadable(f"{path} is not a regular file")
            data = handle.read()
    except FileNotFoundError:
        if _listable(directory) or (not os.path.lexists(directory) and _listable(storage_path)):
            return None
        raise SnippetUnreadable(
            f"{directory if os.path.lexists(directory) else storage_path} does not exist or cannot be listed "
            "on this node, so whether the snippet is there is unknown (PVE: 'directory ... does not exist or "
            "is unreachable', Plugin.pm activate_storage). Mount or create the storage's path."
        ) from None
    except IsADirectoryError:
        raise SnippetUnreadable(f"{path} is a directory, not a snippet") from None
    except OSError as exc:
        raise SnippetUnreadable(f"{path} cannot be read ({exc.strerror})") from None
    return OnDisk(hashlib.sha256(data).hexdigest(), len(data), stat.S_IMODE(info.st_mode))


def write(directory: str, file: str, data: bytes, mode: int) -> None:
    """Write ``data`` to ``directory/file`` with ``mode``, atomically (module docstring). Raises
    SnippetUnreadable when the directory cannot be made or the file cannot be written (the old file,
    if any, is then untouched)."""
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{file}.", suffix=".tmp")
    except OSError as exc:
        raise SnippetUnreadable(f"{directory} cannot be written ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, os.path.join(directory, file))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise SnippetUnreadable(
            f"{os.path.join(directory, file)} cannot be written ({exc.strerror})"
        ) from None


def remove(directory: str, file: str) -> None:
    """Delete ``directory/file``. Raises SnippetUnreadable when it cannot be deleted."""
    try:
        os.unlink(os.path.join(directory, file))
    except OSError as exc:
        raise SnippetUnreadable(
            f"{os.path.join(directory, file)} cannot be deleted ({exc.strerror})"
        ) from None
