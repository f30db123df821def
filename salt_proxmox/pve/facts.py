"""What differs between PVE 8 and PVE 9, and the cluster-wide settings a judge needs, read once per run.

Two reads, each at most once per Salt run and target (cached in the run's cache, Salt's
``__context__``), and only when a declaration needs them:

- ``GET /version`` (pve-manager ``PVE/API2.pm`` ``version``, open to every authenticated user):
  ``release`` is the point release ``x.y``, ``version`` the pve-manager package version. Only PVE
  8 and 9 are supported; another major is refused, because its rules are not known here.
- ``GET /cluster/options`` (pve-manager ``PVE/API2/Cluster.pm`` ``get_options``): ``tag-style``
  is returned even without Sys.Audit on ``/``; absent, it means PVE's defaults.

And, once per volume and run, whether a volume a write would name is there
(``volume_presence``: ``GET /nodes/{node}/storage/{storage}/content/{volume}``).

What differs by major release (``Release``), each from the two branches of the source:

- privilege names (pve-access-control ``src/PVE/AccessControl.pm`` ``$privgroups`` on
  ``stable-bookworm`` and ``master``): ``VM.Monitor`` exists on 8 only; ``VM.GuestAgent.*`` and
  ``VM.Replicate`` on 9 only. A role naming a privilege the cluster does not know is refused by
  ``create_role``/``update_role`` (``verify_privname``: "invalid privilege").
- a container create without ``unprivileged`` (pve-container ``src/PVE/API2/LXC.pm``
  ``create_vm``): privileged on 8; unprivileged on 9 (pve-container 6.0.6, "api: create CT:
  default to unprivileged containers"), where a privileged create also needs ``Sys.Modify`` on
  ``/``.
- resource pools (pve-manager ``PVE/API2/Pool.pm``, "fix #1148: api: pools: support nested pools",
  first in 8.1.0; pve-access-control 8.0.7 ``verify_poolname``): from 8.1 a pool is read, updated and
  deleted at ``/pools`` with its ``poolid`` in the query or body, and may be nested (``a/b``); 8.0
  has only ``/pools/{poolid}`` (``index`` takes no ``poolid``) and refuses ``/`` in a poolid.
- container options PVE 9 added (pve-container ``src/PVE/LXC/Config.pm``): ``host-managed`` of
  ``netN`` and ``idmap`` of ``rootfs``/``mpN``; PVE 8's ``parse_property_string`` refuses them
  ("invalid key in comma-separated list property").

Options a package added within a major release (``NEW_IN_PACKAGE``) cannot be told from ``GET
/version``: its ``version`` is pve-manager's, which does not pin the other packages (pve-manager
9.2.0 came out before qemu-server 9.1.18, and its ``debian/control`` asks for qemu-server >= 9.1.13
only). PVE 8 lacks them all; on PVE 9 the guest's node says which version it runs
(``package_version``: ``GET /nodes/{node}/apt/versions``, pve-manager ``PVE/API2/APT.pm``
``versions``, Sys.Audit on ``/nodes/{node}``; the installed version is ``OldVersion``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from salt_proxmox.errors import Refused
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import split_list
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.wire.propstring import flag, pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

SUPPORTED = (8, 9)

#: pve-access-control ``src/PVE/AccessControl.pm`` ``$privgroups`` plus ``Permissions.Modify``,
#: common to PVE 8 (``stable-bookworm``) and PVE 9 (``master``).
_COMMON = """
    Datastore.Allocate Datastore.AllocateSpace Datastore.AllocateTemplate Datastore.Audit
    Group.Allocate Mapping.Audit Mapping.Modify Mapping.Use Permissions.Modify Pool.Allocate
    Pool.Audit Realm.Allocate Realm.AllocateUser SDN.Allocate SDN.Audit SDN.Use Sys.AccessNetwork
    Sys.Audit Sys.Console Sys.Incoming Sys.Modify Sys.PowerMgmt Sys.Syslog User.Modify VM.Allocate
    VM.Audit VM.Backup VM.Clone VM.Config.CDROM VM.Config.CPU VM.Config.Cloudinit VM.Config.Disk
    VM.Config.HWType VM.Config.Memory VM.Config.Network VM.Config.Options VM.Console VM.Migrate
    VM.PowerMgmt VM.Snapshot VM.Snapshot.Rollback
"""
PRIVILEGES: dict[int, frozenset[str]] = {
    8: frozenset(split_list(_COMMON + " VM.Monitor")),
    9: frozenset(
        split_list(
            _COMMON
            + """ VM.GuestAgent.Audit VM.GuestAgent.FileRead VM.GuestAgent.FileSystemMgmt
            VM.GuestAgent.FileWrite VM.GuestAgent.Unrestricted VM.Replicate"""
        )
    ),
}
#: Every privilege name some supported release knows (what a declaration may name at all).
ANY_PRIVILEGE = frozenset().union(*PRIVILEGES.values())
#: The names every supported release knows (a role naming only these needs no ``/version`` read).
PRIVILEGES_OF_EVERY_RELEASE = frozenset.intersection(*PRIVILEGES.values())

#: Property-string options PVE 9 added, by family (pve-container ``src/PVE/LXC/Config.pm``;
#: qemu-server 9 ``PVE/QemuServer/Agent.pm`` ``$agent_fmt``'s ``freeze-fs`` and its alias
#: ``guest-fsfreeze``, PVE 8 knowing ``freeze-fs-on-backup`` only, and ``Machine.pm``
#: ``$machine_fmt``'s ``aw-bits``).
NEW_IN_9 = {
    "net": frozenset({"host-managed"}),
    "volume": frozenset({"idmap"}),
    "agent": frozenset({"freeze-fs", "guest-fsfreeze"}),
    "machine": frozenset({"aw-bits"}),
}

#: Options a package added within PVE 9, by family: ``{family: {option: (package, first version)}}``.
#: qemu-server 9.1.18 (``debian/changelog``, "fix #7627"; ``src/PVE/QemuServer/Network.pm``
#: ``$net_fmt``) added the VM NIC option ``host-tunnel``; an older one refuses it ("invalid key in
#: comma-separated list property").
NEW_IN_PACKAGE: dict[str, dict[str, tuple[str, tuple[int, ...]]]] = {
    "net": {"host-tunnel": ("qemu-server", (9, 1, 18))},
}

_RELEASE = re.compile(r"^([0-9]+)\.([0-9]+)")
_VERSION = re.compile(r"^(?:[0-9]+:)?([0-9]+(?:\.[0-9]+)*)")


@dataclass(frozen=True)
class Release:
    """The cluster's PVE release: ``release`` (``'9.0'``) and ``version`` (``'9.0.3'``)."""

    release: str
    version: str = ""

    @property
    def major(self) -> int:
        """8 or 9."""
        return int(_RELEASE.match(self.release).group(1))  # type: ignore[union-attr]

    @property
    def minor(self) -> int:
        """The point release's second number: 0 for ``8.0``."""
        return int(_RELEASE.match(self.release).group(2))  # type: ignore[union-attr]

    @property
    def nested_pools(self) -> bool:
        """True from PVE 8.1: pools nest, and are read, updated and deleted at ``/pools`` by
        ``poolid`` (``GET /pools?poolid=``); 8.0 knows only ``/pools/{poolid}``."""
        return (self.major, self.minor) >= (8, 1)

    @property
    def privileges(self) -> frozenset[str]:
        """The privilege names this release knows (``verify_privname``)."""
        return PRIVILEGES[self.major]

    @property
    def creates_unprivileged(self) -> bool:
        """True when a create without ``unprivileged`` makes an unprivileged container (PVE 9)."""
        return self.major >= 9

    @property
    def privileged_create_needs_sys_modify(self) -> bool:
        """True when creating a privileged container needs ``Sys.Modify`` on ``/`` (PVE 9)."""
        return self.major >= 9

    def unknown_options(self, family: str, options: object) -> list[str]:
        """The options of ``family`` (``net``, ``volume``, ``agent``, ``machine``) this release does
        not know."""
        if self.major >= 9:
            return []
        return sorted(set(options) & NEW_IN_9.get(family, frozenset()))  # type: ignore[arg-type]


#: What a judge assumes when no cluster was asked (pure tests, the declaration alone): PVE 9.
LATEST = Release("9.0")


def parse_release(data: object) -> Release:
    """``GET /version`` data as a Release. Raises ValueError for another shape, Refused for a
    release this product does not know the rules of."""
    if not isinstance(data, Mapping) or not isinstance(data.get("release"), str):
        raise ValueError("expected an object with a release (x.y)")
    match = _RELEASE.match(data["release"])
    if match is None:
        raise ValueError(f"release {data['release']!r} is not x.y")
    found = Release(data["release"], str(data.get("version") or ""))
    if found.major not in SUPPORTED:
        raise Refused(
            f"the cluster runs PVE {found.release}; this product knows the rules of PVE 8 and 9 only, so "
            "it plans nothing against it. Nothing was written."
        )
    return found


@dataclass(frozen=True)
class TagStyle:
    """The datacenter's ``tag-style`` as it shapes stored tags (pve-guest-common
    ``src/PVE/GuestHelpers.pm`` ``get_unique_tags``): ``case_sensitive`` (``case-sensitive=1``)
    keeps each tag's case, else tags are lower-cased; ``ordered`` (``ordering=config``) keeps the
    declared order, else tags are sorted (case-insensitively unless case-sensitive)."""

    case_sensitive: bool = False
    ordered: bool = False

    def unique(self, value: str) -> str:
        """Tags as PVE stores them: split (``split_list``), cased and ordered by the style,
        de-duplicated (first one kept), ``;``-joined — ``get_unique_tags`` line for line."""
        tags = split_list(value)
        if not self.ordered:
            tags = sorted(tags, key=(lambda tag: tag) if self.case_sensitive else str.lower)
        seen: dict[str, None] = {}
        for tag in tags:
            seen.setdefault(tag if self.case_sensitive else tag.lower(), None)
        return ";".join(seen)


DEFAULT_TAG_STYLE = TagStyle()


def parse_tag_style(data: object) -> TagStyle:
    """``GET /cluster/options`` data's ``tag-style`` (an object, or the property string
    ``datacenter.cfg`` holds) as a TagStyle; absent is PVE's default. Raises ValueError for
    another shape."""
    if not isinstance(data, Mapping):
        raise ValueError("expected an object of datacenter options")
    raw = data.get("tag-style")
    if raw is None or raw == "":
        return DEFAULT_TAG_STYLE
    if isinstance(raw, str):
        raw = dict(pairs(raw))
    if not isinstance(raw, Mapping):
        raise ValueError("tag-style is neither an object nor a property string")
    try:
        case_sensitive = flag(raw.get("case-sensitive", 0)) == "1"
    except ValueError:
        raise ValueError(f"tag-style case-sensitive is {raw.get('case-sensitive')!r}") from None
    return TagStyle(case_sensitive=case_sensitive, ordered=raw.get("ordering") == "config")


def _read_once(ctx: PveContext, path: str, parse: Callable[[object], object]) -> object:
    """``parse`` of ``GET path`` read with the ``read`` credential, kept in the run's reads
    (``ctx.memo``, dropped when another run begins) for the rest of the run. A ValueError
    from ``parse`` becomes PveMalformed naming the path."""
    key = _fact_key(ctx, path)
    if key in ctx.memo:
        return ctx.memo[key]
    data = ctx.client.request("GET", path, ctx.broker.read())
    try:
        found = parse(data)
    except ValueError as why:
        raise PveMalformed("GET", path, str(why)) from None
    ctx.memo[key] = found
    return found


def _fact_key(ctx: PveContext, path: str) -> str:
    return f"salt_proxmox.facts/{ctx.target.name}/{path}"


def forget(ctx: PveContext, path: str) -> None:
    """Drop the run's memo of ``GET path`` (a write changed it: ``PUT /cluster/options``), so the next
    state that needs it reads it again."""
    ctx.memo.pop(_fact_key(ctx, path), None)


def expect_tag_style(ctx: PveContext, style: TagStyle) -> None:
    """Make ``style`` the run's tag style (``tag_style``): a plan of ``tag-style`` makes the guests
    planned after it compare tags as PVE will store them once it is written."""
    ctx.memo[_fact_key(ctx, "cluster/options")] = style


#: pve-storage ``Plugin.pm`` ``@SHARED_STORAGE``: types ``parse_config`` marks ``shared`` whatever the
#: config says.
SHARED_TYPES = frozenset({"iscsi", "nfs", "cifs", "rbd", "cephfs", "iscsidirect", "zfs", "drbd", "pbs"})


def parse_storages(data: object) -> dict[str, dict[str, object]]:
    """``GET /storage`` as ``{storage id: {type, shared (bool), content, path, nodes, disable (bool),
    content-dirs}}`` (text as PVE lists it, ``""`` when unset); ``shared`` as ``parse_config`` makes it
    (``SHARED_TYPES``). Raises ValueError for rows without ``storage`` or ``type``."""
    out: dict[str, dict[str, object]] = {}
    for row in data or []:  # type: ignore[union-attr]
        if not isinstance(row, Mapping) or not row.get("storage") or not row.get("type"):
            raise ValueError("a storage row without storage or type")
        kind = str(row["type"])
        shared = kind in SHARED_TYPES or str(row.get("shared") or "0") not in ("0", "")
        out[str(row["storage"])] = {
            "type": kind,
            "shared": shared,
            "disable": str(row.get("disable") or "0") not in ("0", ""),
            **{key: str(row.get(key) or "") for key in ("content", "path", "nodes", "content-dirs")},
        }
    return out


def storages(ctx: PveContext) -> dict[str, dict[str, object]]:
    """The cluster's storage config (``GET /storage``, pve-manager ``PVE/API2/Storage/Config.pm``
    ``index``: the storages the ``read`` credential may audit), read once per run
    (``parse_storages``). Raises PveError, PveMalformed, PveUnreachable, CredentialError."""
    return _read_once(ctx, "storage", parse_storages)  # type: ignore[return-value]


def node_storages(ctx: PveContext, node: str) -> dict[str, Mapping[str, object]]:
    """``{storage id: row}`` of ``GET /nodes/{node}/storage`` (pve-storage ``API2/Storage/Status.pm``
    ``index``: ``enabled``, ``active``, ``shared``, ...; a storage not available on the node is not
    listed, one disabled there has ``enabled`` 0), read with the ``read`` credential. Raises PveError,
    PveMalformed (not a list of rows naming their storage), PveUnreachable, CredentialError."""
    from salt_proxmox.pve.listing import get_rows

    rows = get_rows(ctx.client, api_path("nodes", node, "storage"), ctx.broker.read(), what="storages")
    return {str(row.get("storage")): row for row in rows}


def release(ctx: PveContext) -> Release:
    """The cluster's release (``GET /version``), read with the ``read`` credential once per run.

    Raises PveError, PveMalformed, PveUnreachable, CredentialError, Refused (unsupported release).
    """
    return _read_once(ctx, "version", parse_release)


def tag_style(ctx: PveContext) -> TagStyle:
    """The datacenter's tag style (``GET /cluster/options``), read with the ``read`` credential
    once per run.

    Raises PveError, PveMalformed, PveUnreachable, CredentialError.
    """
    return _read_once(ctx, "cluster/options", parse_tag_style)


#: PVE's answers for a volume that is not there. pve-storage ``src/PVE/API2/Storage/Content.pm``
#: ``info`` dies (HTTP 500) in ``volume_size_info``: a file that cannot be stat'ed has no format
#: ("volume_size_info on '<volid>' failed - no format"; ``file_size_info``: "failed to stat"),
#: a block storage's ``parse_volname``/``path`` says "volume '<volid>' does not exist", and a
#: storage that is not configured "storage '<id>' does not exist" (``storage_config``).
_MISSING = re.compile(
    r"does not exist|failed - no (?:format|size)|(?:failed to|could not) stat|no such file", re.IGNORECASE
)


@dataclass(frozen=True)
class Presence:
    """What ``GET …/content/{volume}`` said of one volume: ``state`` is ``present``, ``missing``
    (PVE's answer for a volume that is not there) or ``unchecked`` (HTTP 403: the read credential
    may not look); ``said`` is PVE's message for the last two."""

    state: str
    said: str = ""


def volume_presence(ctx: PveContext, node: str, volid: str) -> Presence:
    """Whether volume ``volid`` (``local:iso/debian.iso``) is on its storage as node ``node`` sees
    it: ``GET /nodes/{node}/storage/{storage}/content/{volid}`` (pve-storage
    ``src/PVE/API2/Storage/Content.pm`` ``info``; ``check_volume_access`` lets an ISO be read with
    ``Datastore.Audit`` or ``Datastore.AllocateSpace`` on ``/storage/{storage}``), read with the
    ``read`` credential once per volume and run (``ctx.memo``).

    Raises PveError (another answer than present, missing or 403: that state's error, never
    kept), PveUnreachable, CredentialError.
    """
    storage = volid.partition(":")[0]
    key = f"salt_proxmox.volumes/{ctx.target.name}/{node}/{volid}"
    if key in ctx.memo:
        return ctx.memo[key]  # type: ignore[return-value]
    path = api_path("nodes", node, "storage", storage, "content", volid)
    try:
        ctx.client.request("GET", path, ctx.broker.read())
        found = Presence("present")
    except PveError as exc:
        if exc.status == 403:
            found = Presence("unchecked", exc.message)
        elif _MISSING.search(exc.message):
            found = Presence("missing", exc.message)
        else:
            raise
    ctx.memo[key] = found
    return found


def version_tuple(version: str) -> tuple[int, ...] | None:
    """The numbers of a Debian package version's upstream part (``9.1.18`` → ``(9, 1, 18)``; an
    epoch and a ``-``/``~``/``+`` suffix are left out), or None when it does not start with one."""
    match = _VERSION.match(version.strip())
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


@dataclass(frozen=True)
class Installed:
    """What ``package_version`` learned: ``version`` (``'9.1.18'``; '' when not known) and, when
    not known, ``said`` (why: PVE's 403, or the package not listed)."""

    version: str = ""
    said: str = ""


def package_version(ctx: PveContext, node: str, package: str) -> Installed:
    """The version of ``package`` installed on ``node``: ``GET /nodes/{node}/apt/versions``
    (pve-manager ``PVE/API2/APT.pm`` ``versions``: a row per important package, ``Package`` and the
    installed ``OldVersion``; Sys.Audit on ``/nodes/{node}``), read with the ``read`` credential once
    per node and run (``ctx.memo``). A 403 is kept as not known, with PVE's words.

    Raises PveError other than 403, PveMalformed (not a list of objects), PveUnreachable,
    CredentialError."""
    key = f"salt_proxmox.packages/{ctx.target.name}/{node}"
    rows = ctx.memo.get(key)
    if rows is None:
        path = f"{api_path('nodes', node)}/apt/versions"
        try:
            data = ctx.client.request("GET", path, ctx.broker.read())
        except PveError as exc:
            if exc.status != 403:
                raise
            data = exc.message
        if isinstance(data, list):
            if not all(isinstance(row, Mapping) for row in data):
                raise PveMalformed("GET", path, "expected a list of packages")
            data = {str(row.get("Package")): str(row.get("OldVersion") or "") for row in data}
        ctx.memo[key] = rows = data
    if isinstance(rows, str):
        return Installed(said=rows)
    version = rows.get(package)  # type: ignore[union-attr]
    return Installed(version) if version else Installed(said=f"{package} is not listed as installed")


def package_at_least(ctx: PveContext, package: str, version: tuple[int, ...]) -> tuple[bool, str]:
    """``(True, what each node runs)`` when every node of the cluster (``GET /nodes``) runs ``package``
    at ``version`` or later (``package_version``), else ``(False, why)``: a node with an older one, or
    one whose version cannot be read (a 403 names the privilege). For a rule a package added within a
    major release (pve-access-control 9.1.0's token ``regenerate``). Raises what the reads raise."""
    from salt_proxmox.pve.listing import get_rows

    wanted = ".".join(map(str, version))
    nodes = get_rows(ctx.client, "nodes", ctx.broker.read(), what="nodes", reads=ctx.reads)
    seen = []
    for row in sorted(nodes, key=lambda row: str(row.get("node"))):
        node = str(row.get("node"))
        installed = package_version(ctx, node, package)
        found = version_tuple(installed.version) if installed.version else None
        if found is None:
            return False, f"{package} on {node} is not known ({installed.said}; Sys.Audit on /nodes/{node})"
        if found < version:
            return False, f"{node} runs {package} {installed.version}, older than {wanted}"
        seen.append(f"{node} {installed.version}")
    return True, f"{package} {', '.join(seen)}"
