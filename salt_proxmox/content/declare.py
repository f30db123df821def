"""One downloaded file as declared (``Download``): an ISO image, a container template or an import
image that PVE fetches from a URL into a storage (pve-storage ``src/PVE/API2/Storage/Status.pm``
``download_url``, ``POST /nodes/{node}/storage/{storage}/download-url``), checked before anything is read.

- ``content``: ``iso``, ``vztmpl`` or ``import`` (``download_url``'s ``content`` enum, the same on
  ``stable-8`` and master).
- ``filename``: PVE normalises it (``Storage.pm`` ``normalize_content_filename``: the part after the last
  ``/`` or ``\\``, every character outside ``[a-zA-Z0-9_.-]`` made ``_``), so a name it would change is
  refused (the volid would not be the declared one); its extension by content (``download_url``:
  ``$ISO_EXT_RE_0`` ``.iso|.img``; ``$VZTMPL_EXT_RE_1`` ``.tar.(gz|xz|zst|bz2)``; import
  ``$SAFE_CHAR_CLASS_RE+$UPLOAD_IMPORT_EXT_RE_1`` ``.ova|.qcow2|.raw|.vmdk``), else PVE's ``wrong file
  extension``.
- ``url``: ``download_url``'s ``pattern => 'https?://.*'``.
- ``checksum`` with ``checksum-algorithm`` (each ``requires`` the other; the algorithm from
  ``['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512']``), hex of the digest's length. A download
  without one is refused unless ``verify: false`` is declared: the file is what guests boot from (an
  ISO, a template a container's root file system is made of), and PVE checks nothing else of it.
- ``compression``: ``iso`` only (``download_url``'s worker: ``decompression not supported for
  $content``), one of ``Plugin.pm`` ``KNOWN_COMPRESSION_FORMATS`` (gz, lzo, zst, bz2).
- ``verify-certificates``: a boolean (default true, as PVE's).
- ``nodes``: a list of node names or ``all`` (default): where a storage that is not shared must hold
  the file; a shared storage holds it once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.storage.objects import STORAGE_ID

FAMILY = "content"
#: ``download_url``'s ``content`` enum.
CONTENTS = ("iso", "vztmpl", "import")
#: ``download_url``'s ``checksum-algorithm`` enum, with each digest's length in hex characters.
ALGORITHMS = {"md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128}
#: pve-storage ``Plugin.pm`` ``KNOWN_COMPRESSION_FORMATS`` (``download_url`` decompresses ISOs only).
COMPRESSIONS = ("gz", "lzo", "zst", "bz2")
#: The file name each content takes (``download_url``, module docstring).
EXTENSIONS = {
    "iso": (re.compile(r"^[^/]+\.(?:iso|img)\Z", re.IGNORECASE), ".iso or .img"),
    "vztmpl": (
        re.compile(r"^[^/]+\.tar\.(?:gz|xz|zst|bz2)\Z", re.IGNORECASE),
        ".tar.gz, .tar.xz, .tar.zst, .tar.bz2",
    ),
    "import": (re.compile(r"^[a-zA-Z0-9\-.+=_]+\.(?:ova|qcow2|raw|vmdk)\Z"), ".ova, .qcow2, .raw or .vmdk"),
}
#: ``Storage.pm`` ``normalize_content_filename``: what PVE keeps of a name.
_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")
_URL = re.compile(r"^https?://\S+\Z")
_NODE = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?\Z")
#: The keys ``present`` takes besides ``name`` (pillar spells PVE's hyphenated names), and ``absent``.
KEYS = (
    "storage", "content", "filename", "url", "checksum", "checksum-algorithm", "compression",
    "verify-certificates", "verify", "nodes", "replace", "adopt",
)  # fmt: skip
ABSENT_KEYS = ("storage", "content", "filename", "removal")
#: Why a download without a checksum is refused (``checksum_problem``).
UNVERIFIED = (
    "checksum: a download needs checksum and checksum-algorithm (sha256, sha512, ...): the file "
    "is what guests "
    "boot from, and without one PVE stores whatever the URL answers (pve-common Tools.pm "
    "download_file_from_url "
    "verifies only a given checksum). Declare verify: false to download it unverified"
)


@dataclass(frozen=True)
class Download:
    """One declared file: ``storage``, ``content``, ``filename`` (its volid is
    ``<storage>:<content>/<filename>``), ``url``, ``checksum`` and ``algorithm`` (None when ``verify:
    false``), ``compression``, ``verify_certificates``, ``nodes`` (a tuple, or None for all),
    ``replace`` (a changed file may be deleted and downloaded again), ``adopt``."""

    state_id: str
    target: str
    storage: str
    content: str
    filename: str
    url: str = ""
    checksum: str | None = None
    algorithm: str | None = None
    compression: str | None = None
    verify_certificates: bool = True
    nodes: tuple[str, ...] | None = None
    replace: bool = False
    adopt: bool = False

    @property
    def volid(self) -> str:
        """``<storage>:<content>/<filename>`` (pve-storage ``Plugin.pm`` ``parse_volname``)."""
        return f"{self.storage}:{self.content}/{self.filename}"

    @property
    def key(self) -> str:
        """The ownership row key, ``<target>/content/<volid>``."""
        return row_key(self.target, FAMILY, self.volid)

    @property
    def label(self) -> str:
        return f"{self.content} {self.volid}"

    def source(self) -> dict[str, object]:
        """What the file is made from: a change of any of it is another file (a re-download)."""
        return {
            "url": self.url,
            "checksum": self.checksum.lower() if self.checksum else None,
            "checksum-algorithm": self.algorithm,
            "compression": self.compression,
        }

    def form(self) -> dict[str, str]:
        """The ``download-url`` form (``download_url``'s parameters)."""
        form = {"url": self.url, "content": self.content, "filename": self.filename}
        if self.checksum:
            form.update({"checksum": self.checksum, "checksum-algorithm": str(self.algorithm)})
        if self.compression:
            form["compression"] = self.compression
        if not self.verify_certificates:
            form["verify-certificates"] = "0"
        return form


def filename_problem(content: object, filename: object) -> str | None:
    """None for a file name ``download_url`` keeps as it is for ``content``, else the reason."""
    if not isinstance(filename, str) or not filename:
        return "filename: the file's name in the storage is required (text)"
    normal = _UNSAFE.sub("_", re.sub(r"^.*[/\\]", "", filename.rstrip("\n")))
    if normal != filename:
        return (
            f"filename: PVE would store {shown(filename)} as {shown(normal)} (pve-storage Storage.pm "
            "normalize_content_filename keeps the part after the last / and [a-zA-Z0-9_.-]): "
            "declare that name"
        )
    if content in EXTENSIONS:
        pattern, said = EXTENSIONS[str(content)]
        if not pattern.match(filename):
            return (
                f"filename: {shown(filename)} is no {content} name PVE downloads (API2/Storage/Status.pm "
                f"download_url: wrong file extension; it takes {said})"
            )
    return None


def _checksum_problems(checksum: object, algorithm: object, verify: object) -> list[str]:
    if checksum is None and algorithm is None:
        return [] if verify is False else [UNVERIFIED]
    if checksum is None or algorithm is None:
        return ["checksum, checksum-algorithm: each requires the other (download_url: requires)"]
    if algorithm not in ALGORITHMS:
        return [f"checksum-algorithm: {shown(algorithm)} is not one of PVE's ({', '.join(ALGORITHMS)})"]
    length = ALGORITHMS[str(algorithm)]
    if not isinstance(checksum, str) or not re.fullmatch(rf"[0-9a-fA-F]{{{length}}}", checksum):
        return [
            f"checksum: expected the {algorithm} digest in hex ({length} characters), got {shown(checksum)}"
        ]
    if verify is False:
        return ["verify: false with a checksum: the checksum is verified; drop one of them"]
    return []


def _nodes(nodes: object) -> tuple[tuple[str, ...] | None, str | None]:
    if nodes is None or nodes == "all":
        return None, None
    if (
        isinstance(nodes, list | tuple)
        and nodes
        and all(isinstance(n, str) and _NODE.match(n) for n in nodes)
    ):
        return tuple(sorted(set(nodes))), None
    return None, f"nodes: expected all or a list of node names, got {shown(nodes)}"


def _problems(storage: object, content: object, filename: object) -> list[str]:
    problems = []
    if not isinstance(storage, str) or not STORAGE_ID.match(storage):
        problems.append(f"storage: {shown(storage)} is not a storage id (pve-storage-id)")
    if content not in CONTENTS:
        problems.append(
            f"content: {shown(content)} is not one PVE downloads (download_url: {', '.join(CONTENTS)})"
        )
    problem = filename_problem(content, filename)
    return [*problems, problem] if problem else problems


def declare(state_id: str, target: str, name: object = None, **declared: object) -> Download:
    """The checked declaration of ``present`` (``declared`` holds the ``KEYS``, pillar's spelling).
    Raises DeclarationError naming each bad key (module docstring)."""
    unknown = sorted(set(declared) - set(KEYS), key=str)
    get = declared.get
    content, filename = get("content"), get("filename")
    problems = (
        [f"unknown key(s) {', '.join(map(str, unknown))}: a download takes {', '.join(KEYS)}"]
        if unknown
        else []
    )
    problems += _problems(get("storage"), content, filename)
    url = get("url")
    if not isinstance(url, str) or not _URL.match(url):
        problems.append(f"url: {shown(url)} is not an http(s) URL (download_url: pattern https?://.*)")
    verify = get("verify", True)
    problems += [p for p in (boolean_problem("verify", verify),) if p]
    problems += _checksum_problems(get("checksum"), get("checksum-algorithm"), verify)
    compression = get("compression")
    if compression is not None and (compression not in COMPRESSIONS or content != "iso"):
        problems.append(
            f"compression: {shown(compression)}: PVE decompresses ISOs only, with one of "
            f"{', '.join(COMPRESSIONS)} (download_url: decompression not supported for {content})"
        )
    nodes, problem = _nodes(get("nodes"))
    for key in ("verify-certificates", "replace", "adopt"):
        problems += [p for p in (boolean_problem(key, get(key, key == "verify-certificates")),) if p]
    if problem:
        problems.append(problem)
    if problems:
        raise DeclarationError(problems)
    return Download(
        state_id, target, str(get("storage")), str(content), str(filename), str(url),
        str(get("checksum")) if get("checksum") else None, get("checksum-algorithm"),  # type: ignore[arg-type]
        compression, bool(get("verify-certificates", True)), nodes,  # type: ignore[arg-type]
        bool(get("replace", False)), bool(get("adopt", False)),
    )  # fmt: skip


def identify(state_id: str, target: str, name: object = None, **declared: object) -> Download:
    """A file by its storage, content and filename, for ``absent``. Raises DeclarationError."""
    unknown = sorted(set(declared) - set(ABSENT_KEYS), key=str)
    problems = (
        [f"unknown key(s) {', '.join(map(str, unknown))}: a download's absent takes {', '.join(ABSENT_KEYS)}"]
        if unknown
        else []
    )
    problems += _problems(declared.get("storage"), declared.get("content"), declared.get("filename"))
    if problems:
        raise DeclarationError(problems)
    return Download(
        state_id, target, str(declared["storage"]), str(declared["content"]), str(declared["filename"])
    )


def row_source(row: Mapping[str, object] | None) -> dict[str, object] | None:
    """The ``source`` an ownership row recorded, or None."""
    declared = (row or {}).get("declared")
    return dict(declared.get("source") or {}) if isinstance(declared, Mapping) else None  # type: ignore[arg-type]
