"""The fake cluster's snippets as PVE lists them: the files of a storage's snippets directory on disk.

fakepve 0.5.0 lists a storage's content from its own state only (uploaded ISOs, allocated volumes, what
guest configs reference), so a snippet written as a file — the only way PVE has to put one there —
would never be listed. PVE lists a file storage's snippets by reading the directory (pve-storage
``src/PVE/Storage/Plugin.pm`` ``list_volumes`` → ``get_subdir_files``: the glob ``<$path/*>`` of
``get_subdir(..., 'snippets')``, directories skipped, each file ``{volid => "$sid:snippets/<name>",
format => 'snippet'}``), so ``SnippetsPve`` adds those of every storage whose ``path`` is a directory
here (a test's temporary directory). Who may see them stays fakepve's ``_check_access``, PVE's
``check_volume_access``: snippets only with ``Datastore.Allocate`` (root@pam has it)."""

from __future__ import annotations

import os
from typing import Any


class SnippetsPve:
    """A mixin of the served fake: snippets listed from disk (module docstring)."""

    def _volumes(self, name: str) -> dict[str, Any]:
        out = super()._volumes(name)  # type: ignore[misc]
        path = self.storages[name].get("path")  # type: ignore[attr-defined]
        directory = os.path.join(str(path), "snippets") if path else ""
        if directory and os.path.isdir(directory):
            for fn in sorted(os.listdir(directory)):
                full = os.path.join(directory, fn)
                if fn.startswith(".") or os.path.isdir(full):
                    continue
                info = os.stat(full)
                out.setdefault(
                    f"snippets/{fn}",
                    {
                        "content": "snippets",
                        "format": "snippet",
                        "size": info.st_size,
                        "ctime": int(info.st_ctime),
                    },
                )
        return out


def add_snippet_storage(pve: Any, path: Any, name: str = "snip", **options: Any) -> str:
    """Add a ``dir`` storage ``name`` at ``path`` (a test's temporary directory) taking snippets to the
    fake cluster ``pve``; ``options`` are more or other storage.cfg options. Returns ``name``."""
    pve.storages[name] = {
        "type": "dir",
        "path": str(path),
        "content": "snippets",
        "active": 1,
        "files": set(),
        "volumes": {},
        **options,
    }
    return name
