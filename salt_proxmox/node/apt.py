"""A node's APT repositories (``proxmox_node.apt_repository``): one object per node, its declared entries.

Source: pve-manager ``PVE/API2/APT.pm`` (``repositories``, ``add_repository``, ``change_repository``) over
proxmox-apt (proxmox-rs ``proxmox-apt/src/api.rs`` ``list_repositories``, ``add_repository_handle``,
``change_repository``; ``src/repositories/standard.rs``; branch ``stable-bookworm`` for PVE 8, ``master``
for PVE 9).

- Identity is the node: one state holds the node's declared entries, each a standard repository by its
  ``handle`` or a configured one by ``path`` and ``index`` (its place in the file, from 0), with
  ``enabled``. Only the declared entries are compared; the others are left as they are.
- Read ``GET /nodes/{node}/apt/repositories`` (Sys.Audit on ``/nodes/{node}``): ``files`` (each ``path``
  and its ``repositories`` with ``Enabled``), ``errors``, ``digest`` (one digest of every file),
  ``infos`` and ``standard-repos`` (``handle``, ``status``: absent when not configured, else whether it
  is enabled).
- A handle the node does not offer is refused at plan, naming the ones it offers (``standard-repos``:
  PVE 8, bookworm: ``enterprise``, ``no-subscription``, ``test`` and ``ceph-quincy-*``, ``ceph-reef-*``,
  ``ceph-squid-*``, ``mod.rs`` ``standard_repositories``; PVE 9, trixie: the host ones and
  ``ceph-squid-*``, ``ceph-tentacle-*``, ``standard.rs`` ``CEPH_RELEASES``).
- Writes need Sys.Modify on ``/nodes/{node}`` and carry the ``digest`` of the read right before them
  (``detect_modification``: ``detected modified configuration - file changed by other user? Try
  again.``). The digest covers every file, so each write after the first is sent with the digest read
  right after the one before it, and judged again on that read.
- An entry to enable that is configured but disabled is enabled where it is (``POST`` ``path``,
  ``index``, ``enabled=1``): on PVE 8 ``add_repository_handle`` looks for it with the product ``pbs``
  (``is_referenced_repository(handle, "pbs", ...)``), misses a disabled ``pve-*`` entry and appends a
  second one. One not configured is added (``PUT`` ``handle``: PVE writes the standard entry to its
  standard file, ``/etc/apt/sources.list`` or ``…/<product>-enterprise.list`` / ``ceph.list`` on
  bookworm, ``…/proxmox.sources``, ``…/pve-enterprise.sources``, ``…/ceph.sources`` on trixie). A file
  PVE cannot parse (``errors``) is refused, as PVE refuses writing it.
- Absence: the object is absent while none of its entries is enabled (and it enables one), so a first
  enable needs no ``adopt``; an entry to disable that is enabled is live, taken over with ``adopt``.
  ``removal: destroy`` disables exactly the entries this minion's last declaration enabled (PVE has no
  call removing an entry: ``APT.pm`` registers none). No upgrade and no ``apt update`` is ever run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, boolean_problem, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "apt_repository"

_HOST = ("enterprise", "no-subscription", "test")


def _ceph(*releases: str) -> tuple[str, ...]:
    return tuple(f"ceph-{release}-{channel}" for release in releases for channel in _HOST)


#: The standard handles by PVE major release: PVE 8 (bookworm), proxmox-apt ``stable-bookworm``
#: ``mod.rs`` ``standard_repositories``; PVE 9 (trixie), ``master`` ``standard.rs`` ``CEPH_RELEASES``.
HANDLES: dict[int, tuple[str, ...]] = {
    8: (*_HOST, *_ceph("quincy", "reef", "squid")),
    9: (*_HOST, *_ceph("squid", "tentacle")),
}
KNOWN = frozenset(handle for handles in HANDLES.values() for handle in handles)
#: A configured entry's key: its file's absolute path under /etc/apt and its index in the file.
_PLACED = re.compile(r"^(/etc/apt/\S+)#(\d+)\Z")
_ENTRY_KEYS = ("handle", "path", "index", "enabled")


@dataclass(frozen=True)
class Standard:
    """What identifies a standard repository's entry (``is_referenced_repository`` / ``is_referenced_by``):
    one of its ``uris`` (a trailing ``/`` trimmed) and one of its ``components``, type ``deb``."""

    uris: tuple[str, ...]
    components: tuple[str, ...]


_ENTERPRISE, _DOWNLOAD = "https://enterprise.proxmox.com/debian", "http://download.proxmox.com/debian"


def standard(handle: str) -> Standard:
    """The entry ``handle`` names (proxmox-apt ``standard.rs`` ``info`` on bookworm; ``host_product_entry``,
    ``ceph_release_entry`` on trixie: the legacy URI without ``/pve`` and the test component ``pvetest``
    accepted on both)."""
    if handle in _HOST:
        domain = _ENTERPRISE if handle == "enterprise" else _DOWNLOAD
        components = ("pvetest", "pve-test") if handle == "test" else (f"pve-{handle}",)
        return Standard((f"{domain}/pve", domain), components)
    release, channel = handle[len("ceph-") :].split("-", 1)
    domain = _ENTERPRISE if channel == "enterprise" else _DOWNLOAD
    # "In the past it was main instead of enterprise/no-subscription ... only for Quincy" (repository.rs).
    main = ("main",) if handle == "ceph-quincy-no-subscription" else ()
    return Standard((f"{domain}/ceph-{release}",), (channel, *main))


def _refers(repo: Mapping[str, object], handle: str, suite: str) -> bool:
    want = standard(handle)
    uris = {str(uri).rstrip("/") for uri in repo.get("URIs") or []}
    return (
        "deb" in (repo.get("Types") or [])
        and bool(uris & set(want.uris))
        and suite in (repo.get("Suites") or [])
        and bool(set(repo.get("Components") or []) & set(want.components))
    )


def _entry(state_id: str, target: str, index: int, entry: object) -> tuple[str, bool]:
    """``(key, enabled)`` of one declared entry. Raises DeclarationError naming it."""
    at = f"repositories[{index}]"
    if not isinstance(entry, Mapping):
        raise DeclarationError(f"{at}: expected {{handle, enabled}} or {{path, index, enabled}}")
    unknown = sorted(set(entry) - set(_ENTRY_KEYS))
    if unknown:
        raise DeclarationError(
            f"{at}: unknown key(s) {', '.join(unknown)}: an entry has {', '.join(_ENTRY_KEYS)}"
        )
    enabled = entry.get("enabled", True)
    problem = boolean_problem(f"{at}.enabled", enabled)
    if problem:
        raise DeclarationError(problem)
    if "handle" in entry:
        if "path" in entry or "index" in entry:
            raise DeclarationError(f"{at}: a handle or a path and index, not both")
        handle = entry["handle"]
        if handle not in KNOWN:
            raise DeclarationError(
                f"{at}.handle: {shown(handle)} is no standard repository of PVE 8 or 9 (proxmox-apt "
                f"standard repositories: {', '.join(sorted(KNOWN))})"
            )
        return str(handle), bool(enabled)
    path, place = entry.get("path"), entry.get("index")
    if not isinstance(path, str) or not path.startswith("/etc/apt/") or " " in path:
        raise DeclarationError(
            f"{at}.path: expected the absolute path of a file under /etc/apt/ (APT.pm path)"
        )
    if isinstance(place, bool) or not isinstance(place, int) or place < 0:
        raise DeclarationError(f"{at}.index: expected the entry's index in its file, an integer from 0")
    return f"{path}#{place}", bool(enabled)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """The APT repositories of node ``name``. Raises DeclarationError for an unknown key or a bad node."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: APT repositories take repositories"
        )
    if not isinstance(name, str) or not re.match(r"^[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?\Z", name):
        raise DeclarationError(f"name: {shown(name)} is not a node name (pve-node)")
    return Declared(
        state_id, target, identity=name, label=f"APT repositories of node {name}", names={"name": name}
    )


def declare(
    state_id: str,
    target: str,
    name: object = None,
    repositories: object = None,
    adopt: object = False,
    **recorded: object,
) -> Declared:
    """A checked declaration: ``name`` (the node), ``repositories`` (a list of ``{handle, enabled}`` or
    ``{path, index, enabled}``; ``enabled`` defaults to true), ``adopt``. ``recorded``: the entries as an
    ownership row keeps them (``{"no-subscription": true, "/etc/apt/sources.list#0": false}``). Values:
    ``{handle or "<path>#<index>": enabled}``. Raises DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name)
    values: dict[str, object] = {}
    unknown = sorted(key for key in recorded if key not in KNOWN and not _PLACED.match(key))
    if unknown:
        raise DeclarationError(
            f"unknown key(s) {', '.join(unknown)}: APT repositories take repositories (a list of entries)"
        )
    for key, enabled in recorded.items():
        problem = boolean_problem(key, enabled)
        if problem:
            raise DeclarationError(problem)
        values[key] = bool(enabled)
    if repositories is not None:
        if not isinstance(repositories, list | tuple):
            raise DeclarationError(
                "repositories: expected a list of entries ({handle, enabled} or {path, index, enabled})"
            )
        for index, entry in enumerate(repositories):
            key, enabled = _entry(state_id, target, index, entry)
            if key in values:
                raise DeclarationError(f"repositories[{index}]: {key} is declared twice")
            values[key] = enabled
    if not values:
        raise DeclarationError("repositories: declare at least one entry")
    return probe.declaring(values, adopt)


def _checked(data: object) -> Mapping[str, object]:
    if (
        not isinstance(data, Mapping)
        or not all(isinstance(data.get(key), list) for key in ("files", "errors", "standard-repos"))
        or not isinstance(data.get("digest"), str)
    ):
        raise ValueError("expected files, errors, digest and standard-repos (APT.pm repositories)")
    return data


def _configured(data: Mapping[str, object]) -> dict[str, bool]:
    """``{"<path>#<index>": Enabled}`` of every parsed entry."""
    out = {}
    for file in data["files"]:
        if not isinstance(file, Mapping) or not isinstance(file.get("path"), str):
            raise ValueError("a file without its path")
        for index, repo in enumerate(file.get("repositories") or []):
            out[f"{file['path']}#{index}"] = bool(isinstance(repo, Mapping) and repo.get("Enabled"))
    return out


def _status(data: Mapping[str, object]) -> dict[str, object]:
    """``{handle: status}`` of ``standard-repos`` (status None: not configured)."""
    return {
        str(row.get("handle")): row.get("status")
        for row in data["standard-repos"]
        if isinstance(row, Mapping) and row.get("handle")
    }


def parse(data: object, decl: Declared) -> dict | None:
    """``GET /nodes/{node}/apt/repositories`` → ``{key: enabled}`` of each declared entry (not configured:
    false), ``offered`` (the node's standard handles) and ``digest``; None when the declaration enables
    an entry and none of its entries is enabled (nothing of it in use,
    so nothing to take over), and, without declared entries, when the node enables no standard repository.
    Raises ValueError for another shape."""
    data = _checked(data)
    status, configured = _status(data), _configured(data)
    if not decl.values:  # a removal without a row: the node uses a standard repository, or none
        return {"offered": sorted(status), "digest": data["digest"]} if any(status.values()) else None
    keys = decl.values
    live: dict[str, object] = {
        key: bool(status.get(key)) if key in KNOWN else configured.get(key, False) for key in keys
    }
    if any(want is True for want in decl.values.values()) and not any(live[key] for key in decl.values):
        return None
    return {**live, "offered": sorted(status), "digest": data["digest"]}


def steps(decl: Declared, data: Mapping[str, object], suite: str, destroy: bool = False) -> list[Call]:
    """The writes that make ``data`` (an answer of ``GET …/apt/repositories``) hold ``decl``, in declared
    order, without ``digest``; ``destroy``: those disabling the entries ``decl`` enables. ``suite``: the
    node's Debian codename. Raises Refused for an entry in a file PVE cannot parse (``errors``)."""
    data = _checked(data)
    status, configured = _status(data), _configured(data)
    path = api_path("nodes", decl.identity, "apt", "repositories")
    bad = {str(e.get("path")): e.get("error") for e in data["errors"] if isinstance(e, Mapping)}
    out = []
    for key, want in decl.values.items():
        if destroy:
            if want is not True:
                continue
            want = False
        if key in KNOWN:
            places = [
                (file["path"], index, bool(repo.get("Enabled")))
                for file in data["files"]
                for index, repo in enumerate(file.get("repositories") or [])
                if isinstance(repo, Mapping) and _refers(repo, key, suite)
            ]
            if want and not status.get(key):
                off = [(p, i) for p, i, on in places if not on]
                if off:  # enabled where it is: PVE 8's add would append a second entry (module docstring)
                    out.append(_change(path, off[0][0], off[0][1], True))
                else:
                    out.append(Call("PUT", path, form={"handle": key}))
            elif not want and status.get(key):
                out += [_change(path, p, i, False) for p, i, on in places if on]
            continue
        file, index = key.rsplit("#", 1)
        if file in bad:
            raise Refused(f"{decl.label}: PVE cannot parse {file} ({bad[file]}), so it refuses to write it")
        if key not in configured:
            raise Refused(
                f"{decl.label}: {file} holds no entry {index} (change_repository: invalid path or index). "
                "Declare an entry the node has, by its handle or its path and index."
            )
        if configured[key] != want:
            out.append(_change(path, file, int(index), want))
    return out


def _change(path: str, file: str, index: int, enabled: bool) -> Call:
    return Call("POST", path, form={"path": file, "index": str(index), "enabled": "1" if enabled else "0"})


def _first(decl: Declared, live: Mapping[str, object], destroy: bool = False) -> Call | None:
    """The first write as the judged read shows it (the lifecycle's check); ``send`` decides each write
    on the read right before it."""
    path = api_path("nodes", decl.identity, "apt", "repositories")
    for key, want in decl.values.items():
        want = False if destroy else want
        if (destroy and decl.values[key] is not True) or bool(live.get(key)) == want:
            continue
        if key in KNOWN and want:
            return Call("PUT", path, form={"handle": key})
        file, _, index = key.rpartition("#") if key not in KNOWN else (key, "", "0")
        return _change(path, file, int(index), bool(want))
    return None


def suite(ctx: PveContext) -> str:
    """The node's Debian codename, by the cluster's PVE major (``GET /version``): 8 bookworm, 9 trixie."""
    from salt_proxmox.pve import facts

    return {8: "bookworm", 9: "trixie"}[facts.release(ctx).major]


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A handle the node does not offer (its ``standard-repos``), named with the ones it does; a destroy
    of a declaration that enables nothing. Raises what the read raises (a create's live is not kept)."""
    if action == "delete":
        if not any(want is True for want in decl.values.values()):
            return [
                f"{decl.label}: removal: destroy disables the entries the declaration enables, "
                "and it enables none"
            ]
        return []
    if live is None:
        data = _checked(ctx.client.request("GET", _read(decl).path, ctx.broker.read()))
        offered = sorted(_status(data))
    else:
        offered = list(live.get("offered") or [])
    return [
        f"repositories: {key} is not a standard repository of node {decl.identity} (APT.pm repositories "
        f"standard-repos: {', '.join(offered)})"
        for key in decl.values
        if key in KNOWN and key not in offered
    ]


def send(ctx: PveContext, decl: Declared, call: Call, what: str) -> None:
    """Write ``decl`` one entry at a time: each write decided on, and carrying the ``digest`` of, the read
    right before it (``digest`` covers every file, so it changes with each write). Raises Refused, and what
    the reads and writes raise."""
    from salt_proxmox.simple.lifecycle import send as send_call  # the lifecycle imports the families' specs

    codename, destroy = suite(ctx), what.startswith("delete ")
    for _ in range(len(decl.values) * 2 + 1):  # each entry takes at most a write or two
        data = _checked(ctx.client.request("GET", _read(decl).path, ctx.broker.read()))
        todo = steps(decl, data, codename, destroy)
        if not todo:
            return
        send_call(ctx, ctx.broker.provision(), todo[0].with_extra({"digest": data["digest"]}))
    raise Refused(f"{what}: the entries did not settle as declared; read the node's repositories")


def _read(decl: Declared) -> Call:
    return Call("GET", api_path("nodes", decl.identity, "apt", "repositories"))


def _rule(key: str) -> Rule | None:
    return {
        "handle": Rule("enum", choices=tuple(sorted(KNOWN))),
        "path": Rule(),
        "index": Rule("integer", minimum=0),
        "enabled": Rule("boolean"),
        "digest": Rule(max_length=80),
    }.get(key)


SPEC = ObjectSpec(
    family=FAMILY,
    noun="APT repositories",
    declare=declare,
    identify=identify,
    read=_read,
    absence="none of its entries enabled (GET /nodes/{node}/apt/repositories)",
    is_absent=lambda error, decl: False,
    parse=parse,
    confirm_absent=lambda ctx, credential, decl: None,  # the node's answer lists every file
    create=lambda decl: _first(decl, {}) or Call("PUT", _read(decl).path, form={}),
    create_endpoint=Endpoint("PUT /nodes/{node}/apt/repositories", (), _rule),
    update=_first,
    update_endpoint=Endpoint("POST /nodes/{node}/apt/repositories", (), _rule),
    delete=lambda decl, live: _first(decl, live, destroy=True) or Call("POST", _read(decl).path, form={}),
    refusals=refusals,
    send=send,
    identity_keys=("name",),
    not_exported=(
        "a node lists every configured repository entry, and exporting them all would make each one this "
        "minion's to disable on a destroy; declare the entries to manage under proxmox:nodes:<node>:apt "
        "from GET /nodes/<node>/apt/repositories"
    ),
    live_only=("offered", "digest"),
)
