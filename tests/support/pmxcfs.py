"""Containers' config files on disk, as pmxcfs shows them on a node, for the raw ``lxc.*`` lines.

fakepve keeps a container's config in memory only, and no API call writes raw ``lxc.*`` lines, so
the root lane's file write needs the file. ``PmxcfsPve`` (a base of ``tests.support.cluster.ServedPve``),
once ``pve_dir`` is set, keeps ``<pve_dir>/nodes/<node>/lxc/<vmid>.conf`` for every container:

- after each request it writes each container's file as pve-container ``src/PVE/LXC/Config.pm``
  ``write_pct_config`` does (the description as ``#`` lines, the keys sorted, ``lxc.environment.runtime``
  for ``env``, the raw lines in order, then ``[pve:pending]`` and each snapshot's section), and the
  config's ``digest`` becomes the SHA-1 of that text, as ``parse_pct_config`` makes it;
- before each request it reads back a file changed on disk since: the raw ``lxc.*`` lines of its main
  section become the config's ``lxc`` (``parse_pct_config``), which ``GET …/config`` answers.

Where it differs from PVE: only the raw lines are read back from a file edited on disk (an edit of
another key is overwritten by the next request), and the API's own writes do not take the config's
flock (``lock_config``); the pending section holds the keys fakepve keeps pending.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

_LINE = re.compile(r"^(lxc\.[a-z0-9_\-.]+)(:|\s*=)\s*(.*?)\s*$")
_SECTION = re.compile(r"^\[[^\]]+\]\s*$")
_SKIP = {"digest", "description", "pending", "snapshots", "snapname", "env", "lxc"}


def render(config: dict, pending: dict | None = None, snapshots: dict | None = None) -> str:
    """A container's config file as ``write_pct_config`` writes it (module docstring)."""

    def section(conf: dict) -> str:
        raw = "".join(f"#{line}\n" for line in str(conf.get("description") or "").split("\n") if line)
        for key in sorted(k for k in conf if k not in _SKIP and conf[k] is not None):
            raw += f"{key}: {conf[key]}\n"
        for variable in [v for v in str(conf.get("env") or "").split("\0") if v]:
            raw += f"lxc.environment.runtime: {variable}\n"
        for key, value in conf.get("lxc") or []:
            raw += f"{key}: {value}\n"
        return raw

    raw = section(config)
    if pending:
        kept = {k: v for k, v in pending.items() if v is not None}
        deleted = [k for k, v in pending.items() if v is None]
        raw += (
            "\n[pve:pending]\n"
            + section(kept)
            + (f"delete: {','.join(sorted(deleted))}\n" if deleted else "")
        )
    for name, snap in sorted((snapshots or {}).items()):
        raw += f"\n[{name}]\n" + section({k: v for k, v in snap.items() if k != "snapshots"})
    return raw


def raw_lines(raw: str) -> list[list[str]]:
    """The main section's raw ``lxc.*`` lines as ``parse_pct_config`` reads them, ``env``'s left out."""
    found = []
    for line in raw.splitlines():
        if _SECTION.match(line):
            break
        matched = _LINE.match(line)
        if matched and matched.group(1) != "lxc.environment.runtime":
            found.append([matched.group(1), matched.group(3)])
    return found


class PmxcfsPve:
    """Keeps the containers' config files under ``pve_dir`` (module docstring); None: none kept."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pve_dir: Path | None = None
        self._pmxcfs_files: dict[Path, str] = {}

    def _path(self, ct) -> Path:
        assert self.pve_dir is not None
        return Path(self.pve_dir) / "nodes" / ct.node / "lxc" / f"{ct.vmid}.conf"

    def files_in(self) -> None:
        """Read back each file changed on disk since it was written (module docstring)."""
        if self.pve_dir is None:
            return
        for ct in self.cts:
            path = self._path(ct)
            if path in self._pmxcfs_files and path.exists():
                raw = path.read_text()
                if raw != self._pmxcfs_files[path]:
                    lines = raw_lines(raw)
                    if lines:
                        ct.config["lxc"] = lines
                    else:
                        ct.config.pop("lxc", None)

    def files_out(self) -> None:
        """Write each container's file and make its digest the file's SHA-1 (module docstring)."""
        if self.pve_dir is None:
            return
        kept = set()
        for ct in self.cts:
            path = self._path(ct)
            pending = {k: v for k, v in ct.pending.items()}
            raw = render(ct.config, pending, ct.snapshots)
            if self._pmxcfs_files.get(path) != raw or not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(raw)
                self._pmxcfs_files[path] = raw
            digest = hashlib.sha1(raw.encode()).hexdigest()  # noqa: S324 - PVE's digest
            ct.digest = lambda digest=digest: digest
            kept.add(path)
        for path in set(self._pmxcfs_files) - kept:
            path.unlink(missing_ok=True)
            del self._pmxcfs_files[path]

    async def _answer(self, request, handler, generic, path_node):
        self.files_in()
        try:
            return await super()._answer(request, handler, generic, path_node)
        finally:
            self.files_out()
