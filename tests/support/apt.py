"""A FakePve that keeps each node's APT repository files, as proxmox-apt does behind pve-manager.

fakepve 0.5.0 answers ``/nodes/{node}/apt/repositories`` with synthesised values and stores nothing.
``AptPve`` adds stateful routes in front of it (the ``_routes_*`` mechanism), written from pve-manager
``PVE/API2/APT.pm`` (``repositories``, ``add_repository``, ``change_repository``) over proxmox-rs
``proxmox-apt/src/api.rs`` (``list_repositories``, ``add_repository_handle``, ``change_repository``) and
``src/repositories/standard.rs`` (branch ``stable-bookworm`` for PVE 8, ``master`` for PVE 9):

- ``apt_files``: ``{node: {path: [entry]}}``, each entry ``{Types, URIs, Suites, Components, Enabled,
  FileType}``; a new node gets the file a fresh install has (the enterprise repository, enabled:
  ``pve-enterprise.list`` on PVE 8, ``pve-enterprise.sources`` on PVE 9); ``apt_errors``: ``{node: {path:
  error}}`` for a file PVE cannot parse;
- ``GET`` answers ``files``, ``errors``, ``digest`` (one digest of every file), ``infos`` (none) and
  ``standard-repos`` by release (``release_version``), ``status`` from the entries referring to each;
- ``PUT`` (``add_repository``): the digest, then an entry already referring to the handle is enabled
  (PVE 9; on PVE 8 only a Ceph one: ``is_referenced_repository(handle, "pbs", ...)`` misses ``pve-*``),
  else the standard entry is appended to its standard file (``unable to parse existing file`` for one in
  ``errors``; ``no standard repository for handle``);
- ``POST`` (``change_repository``): the digest, ``unable to parse file``, ``invalid path``, ``invalid
  index``, then ``Enabled``.

Differences from PVE: the digest is a hash of the entries, not of the files' bytes; no comments, options
or ``Signed-By`` are kept; ``infos`` is always empty.
"""

from __future__ import annotations

import copy
import hashlib
import json

from fakepve.routing import check_digest, die

from salt_proxmox.node.apt import HANDLES, _refers
from tests.support.ceph import CephPve


def _entry(uri: str, suite: str, component: str, file_type: str, enabled: bool = True) -> dict:
    return {
        "Types": ["deb"], "URIs": [uri], "Suites": [suite], "Components": [component],
        "Enabled": enabled, "FileType": file_type,
    }  # fmt: skip


def standard_entry(handle: str, major: int) -> tuple[str, dict]:
    """``(path, entry)`` PVE's add writes for ``handle`` (``to_repository``, ``path``/``file_path``)."""
    suite, sources = ("trixie", True) if major >= 9 else ("bookworm", False)
    kind = "sources" if sources else "list"
    if handle in ("enterprise", "no-subscription", "test"):
        domain = (
            "https://enterprise.proxmox.com/debian"
            if handle == "enterprise"
            else "http://download.proxmox.com/debian"
        )
        component = "pvetest" if handle == "test" and not sources else f"pve-{handle}"
        if handle == "enterprise":
            path = f"/etc/apt/sources.list.d/pve-enterprise.{kind}"
        else:
            path = "/etc/apt/sources.list.d/proxmox.sources" if sources else "/etc/apt/sources.list"
        return path, _entry(f"{domain}/pve", suite, component, kind)
    release, channel = handle[len("ceph-") :].split("-", 1)
    domain = (
        "https://enterprise.proxmox.com/debian"
        if channel == "enterprise"
        else "http://download.proxmox.com/debian"
    )
    return f"/etc/apt/sources.list.d/ceph.{kind}", _entry(f"{domain}/ceph-{release}", suite, channel, kind)


class AptPve(CephPve):
    """CephPve with each node's APT repository files (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.apt_files: dict[str, dict[str, list[dict]]] = {}
        self.apt_errors: dict[str, dict[str, str]] = {}

    def apt_major(self) -> int:
        return int(str(self.release_version).split(".")[0])

    def apt_node(self, node: str) -> dict[str, list[dict]]:
        """The node's files, a fresh install's on first use (the enterprise repository, enabled)."""
        if node not in self.apt_files:
            path, entry = standard_entry("enterprise", self.apt_major())
            self.apt_files[node] = {path: [entry]}
        return self.apt_files[node]

    def apt_digest(self, node: str) -> str:
        text = json.dumps([self.apt_node(node), self.apt_errors.get(node, {})], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _routes_apt(self):
        path = "/nodes/{node}/apt/repositories"
        return [("GET", path, self._apt_read), ("PUT", path, self._apt_add), ("POST", path, self._apt_change)]

    def _suite(self) -> str:
        return "trixie" if self.apt_major() >= 9 else "bookworm"

    async def _apt_read(self, v, user):
        node = v["node"]
        files, suite = self.apt_node(node), self._suite()
        standard = []
        for handle in HANDLES[9 if self.apt_major() >= 9 else 8]:
            row = {"handle": handle, "name": handle}
            for entries in files.values():
                for entry in entries:
                    if row.get("status") is not True and _refers(entry, handle, suite):
                        row["status"] = entry["Enabled"]
            standard.append(row)
        return {
            "files": [
                {
                    "path": p,
                    "file-type": entries[0]["FileType"] if entries else "list",
                    "repositories": copy.deepcopy(entries),
                    "digest": [],
                }
                for p, entries in sorted(files.items())
                if p not in self.apt_errors.get(node, {})
            ],
            "errors": [{"path": p, "error": e} for p, e in sorted(self.apt_errors.get(node, {}).items())],
            "digest": self.apt_digest(node),
            "infos": [],
            "standard-repos": standard,
        }

    async def _apt_add(self, v, user):
        node, handle = v["node"], v["handle"]
        check_digest(self.apt_digest(node), v.get("digest"))
        files, suite, major = self.apt_node(node), self._suite(), self.apt_major()
        if handle not in HANDLES[9 if major >= 9 else 8]:
            raise die(
                f"no standard repository for handle '{handle}' on host product 'pve' and suite '{suite}'"
            )
        # PVE 8 looks an existing entry up as product "pbs": the host handles' pve-* entries are missed.
        if major >= 9 or handle.startswith("ceph-"):
            for entries in files.values():
                for entry in entries:
                    if _refers(entry, handle, suite):
                        entry["Enabled"] = True
                        return None
        path, entry = standard_entry(handle, major)
        if path in self.apt_errors.get(node, {}):
            raise die(f"unable to parse existing file {path} - {self.apt_errors[node][path]}")
        files.setdefault(path, []).append(entry)
        return None

    async def _apt_change(self, v, user):
        node, path, index = v["node"], v["path"], int(v["index"])
        check_digest(self.apt_digest(node), v.get("digest"))
        if path in self.apt_errors.get(node, {}):
            raise die(f"unable to parse file {path} - {self.apt_errors[node][path]}")
        entries = self.apt_node(node).get(path)
        if entries is None:
            raise die(f"invalid path - {path}")
        if index >= len(entries):
            raise die(f"invalid index - {index}")
        if v.get("enabled") is not None:
            entries[index]["Enabled"] = str(v["enabled"]) in ("1", "true", "True")
        return None
