"""One snippet as declared (``Snippet``), checked before anything is read: its storage id, its file
name as PVE takes it, its content (text, compared by its sha256 and never shown) and whether it is
executable (a hookscript must be: pve-guest-common ``src/PVE/GuestHelpers.pm`` ``check_hookscript``,
``script '<volid>' is not executable``).

File names (pve-storage ``src/PVE/Storage/Plugin.pm``): ``parse_volname`` takes a snippet's volume
name as ``m!^snippets/([^/]+)$!`` — any name without ``/``; ``get_subdir_files`` lists a storage's
snippets with the glob ``<$path/*>``, which never matches a name starting with ``.``, so such a file
would be on disk yet absent from every content listing: refused too.

The content is a secret of the state (``SECRETS``, the registry's ``Kind.secrets``): cloud-init user data
may hold passwords and keys, and Salt keeps a state's arguments in ``highstate.cache.p`` in its cachedir
and in the lowstate every state is handed. A state names the pillar mapping holding it
(``secrets_pillar``, as the proxmox formula passes ``proxmox:snippets:<storage>:<file>``) and the
execution module reads it from pillar; a ``source: salt://...`` is read by the execution module too
(``read_source``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.storage.objects import STORAGE_ID

FAMILY = "snippet"
#: The volume type and, unless the storage's ``content-dirs`` says otherwise, its directory
#: (pve-storage ``Plugin.pm`` ``$vtype_subdirs``: ``snippets => 'snippets'``).
VTYPE = "snippets"
#: The modes a snippet is written with: 0644, or 0755 when ``executable`` (a hookscript).
MODES = {False: 0o644, True: 0o755}
#: The keys a present state takes besides ``name``, and an absent one.
KEYS = ("storage", "content", "executable", "adopt")
#: The keys read from pillar through ``secrets_pillar``, never state arguments (module docstring).
SECRETS = frozenset({"content"})
ABSENT_KEYS = ("storage", "removal")
#: A volid naming a snippet (pve-storage ``Storage.pm`` ``parse_volume_id`` then ``parse_volname``).
VOLID = re.compile(r"^([a-z][a-z0-9\-_.]*[a-z0-9]):snippets/([^/]+)$", re.IGNORECASE)


#: The refusal of a declaration without text.
CONTENT_REQUIRED = (
    "content: the snippet's text is required (a string in the pillar mapping secrets_pillar names, or "
    "source: salt://...)"
)


@dataclass(frozen=True)
class Snippet:
    """One declared snippet: ``storage``, ``file`` (its name in the snippets directory), ``data`` (the
    bytes to write, never in a repr, a return or a row), ``executable``, ``adopt``."""

    state_id: str
    target: str
    storage: str
    file: str
    data: bytes = field(default=b"", repr=False, compare=False)
    executable: bool = False
    adopt: bool = False

    @property
    def volid(self) -> str:
        """``<storage>:snippets/<file>``, as ``cicustom`` and ``hookscript`` name it."""
        return f"{self.storage}:{VTYPE}/{self.file}"

    @property
    def key(self) -> str:
        """The ownership row key, ``<target>/snippet/<volid>``."""
        return row_key(self.target, FAMILY, self.volid)

    @property
    def label(self) -> str:
        return f"snippet {self.volid}"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def mode(self) -> int:
        return MODES[self.executable]

    def stored(self) -> dict[str, object]:
        """What the ownership row keeps: the names, the hash, size and mode written (never the content)."""
        return {
            "name": self.file,
            "storage": self.storage,
            "sha256": self.sha256,
            "size": self.size,
            "mode": oct(self.mode),
        }


def file_problem(name: object) -> str | None:
    """None for a snippet file name PVE takes and lists, else the reason (module docstring)."""
    if not isinstance(name, str) or not name:
        return "name: the snippet's file name is required (text)"
    if "/" in name or "\0" in name:
        return (
            f"name: {shown(name)} holds a / (pve-storage Plugin.pm parse_volname takes a snippet as "
            "snippets/<file>, one name in the snippets directory)"
        )
    if name.startswith("."):
        return (
            f"name: {shown(name)} starts with a dot: PVE lists a storage's snippets with the glob <path/*> "
            "(Plugin.pm get_subdir_files), which skips it, so no guest could be pointed at it"
        )
    return None


def storage_problem(storage: object) -> str | None:
    """None for a storage id PVE takes (``pve-storage-id``), else the sentence naming the key."""
    if not isinstance(storage, str) or not storage:
        return "storage: the storage holding the snippet is required (a storage id)"
    if not STORAGE_ID.match(storage):
        return (
            f"storage: {shown(storage)} is not a storage id (pve-storage-id: a letter, then letters, digits, "
            "-, _, .)"
        )
    return None


def _unknown(extra: dict, has: tuple[str, ...], fun: str) -> str | None:
    if not extra:
        return None
    said = (
        f"unknown key(s) {', '.join(sorted(map(str, extra)))}: a snippet's {fun} takes name, {', '.join(has)}"
    )
    if "source" in extra:
        said += " (source: salt://... is read into content by the proxmox execution module)"
    return said


def declare(
    state_id: str,
    target: str,
    name: object = None,
    storage: object = None,
    content: object = None,
    executable: object = False,
    adopt: object = False,
    **extra: object,
) -> Snippet:
    """The checked declaration. Raises DeclarationError naming each bad key (an unknown key, a file
    name or storage id PVE refuses, content that is not text, a switch that is not a boolean)."""
    problems = [
        problem
        for problem in (
            _unknown(extra, KEYS, "present"),
            file_problem(name),
            storage_problem(storage),
            None if isinstance(content, str) else CONTENT_REQUIRED,
            boolean_problem("executable", executable),
            boolean_problem("adopt", adopt),
        )
        if problem
    ]
    if problems:
        raise DeclarationError(problems)
    return Snippet(
        state_id, target, str(storage), str(name), str(content).encode(), bool(executable), bool(adopt)
    )


def identify(
    state_id: str, target: str, name: object = None, storage: object = None, **extra: object
) -> Snippet:
    """A snippet by its storage and file name, for ``absent``. Raises DeclarationError as ``declare``."""
    problems = [
        p for p in (_unknown(extra, ABSENT_KEYS, "absent"), file_problem(name), storage_problem(storage)) if p
    ]
    if problems:
        raise DeclarationError(problems)
    return Snippet(state_id, target, str(storage), str(name))


def read_source(declared: Mapping[str, object], fetch, render) -> dict[str, object]:
    """``declared`` with ``source`` (a ``salt://`` file, read by ``fetch``, then rendered by ``render``
    when ``template`` names a Salt renderer, with ``context``) read into ``content`` (the registry's
    ``Kind.sources``: Salt's file server is the execution module's, so this package reads no file).
    ``declared`` holds the ``content`` read from pillar too, so a source beside it is refused. Raises
    DeclarationError for ``source`` with ``content``, a source that is not a ``salt://`` URL or cannot
    be read, or ``template``/``context`` without ``source``."""
    found = dict(declared)
    source = found.pop("source", None)
    template, context = found.pop("template", None), found.pop("context", None)
    if source is None:
        if template is not None or context is not None:
            raise DeclarationError("template, context: they render a source; declare source: salt://...")
        return found
    if found.get("content") is not None:
        raise DeclarationError("content, source: declare one of them, not both")
    if not isinstance(source, str) or not source.startswith("salt://"):
        raise DeclarationError(f"source: {shown(source)} is not a salt:// URL of the Salt file server")
    if context is not None and not isinstance(context, Mapping):
        raise DeclarationError("context: expected a mapping of the template's variables")
    text = fetch(source)
    if not isinstance(text, str):
        raise DeclarationError(f"source: {source} cannot be read from the Salt file server")
    if template is not None:
        if not isinstance(template, str):
            raise DeclarationError(f"template: {shown(template)} is not the name of a Salt renderer (jinja)")
        text = render(text, template, dict(context or {}))
        if not isinstance(text, str):
            raise DeclarationError(f"template: {source} could not be rendered with {template}")
    found["content"] = text
    return found


def snippet_volids(key: str, value: object) -> list[str]:
    """The snippet volids a guest's ``key`` names: ``hookscript`` is one volid; ``cicustom`` a property
    string of ``user``, ``network``, ``meta``, ``vendor`` volids (qemu-server ``QemuServer.pm``
    ``$cicustom_fmt``). Volids of another type are left out (PVE's own checks judge them)."""
    if not isinstance(value, str):
        return []
    parts = [value] if key == "hookscript" else [p.partition("=")[2] for p in value.split(",") if "=" in p]
    return [part.strip() for part in parts if VOLID.match(part.strip())]
