"""What the conformance suite needs of a family, and the one place each rule of the contract is read from
a family's registry entry (``salt_proxmox.registry.Family``): its example runs, its pillar entry, the
writes its plan names, the reads that prove absence, and the places a secret must never reach.

A family whose entry lacks something here (a pillar section the formula does not nest as ``pillar_of``
knows, a plan change no rule maps to a write, an apply whose writes ``APPLY_WRITES`` does not know) makes
``missing`` name it, and the suite's first test fails for that family.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from salt_proxmox.entry import SIMPLE_PRESENT, imported
from salt_proxmox.registry import Family, Kind
from tests.conformance.examples import Examples, examples_of
from tests.conformance.examples_node import CONTENT_URLS
from tests.support.saltworld import Low, SaltWorld

#: The phases every family's examples go through, in order: (phase, Examples attribute, kind function).
PHASES = (("create", "present"), ("update", "present"), ("clear", "present"), ("delete", "absent"))

#: Plan changes that name the object's own write rather than a field of it.
CREATED = ("created",)
DELETED = ("deleted", "destroyed")
#: Plan changes that name no write at all: only the minion's ownership row changes.
ROW_ONLY = ("ownership",)
#: The change an apply state plans (``{"reload": {"planned": [...]}}``): its family's APPLY_WRITES.
RELOAD = "reload"

#: The writes a family's apply state sends to make what the run staged live, as ``"METHOD path"``
#: patterns: a node's reload (pve-manager ``API2/Network.pm`` ``reload_network_config``: ``PUT
#: /nodes/{node}/network``), the SDN commit under PVE's SDN lock (pve-network ``API2/Network/SDN.pm``
#: ``lock``/``reload``/``release_lock``).
APPLY_WRITES: dict[str, tuple[str, ...]] = {
    "network": (r"PUT /nodes/[^/]+/network",),
    "sdn": (r"POST /cluster/sdn/lock", r"PUT /cluster/sdn", r"DELETE /cluster/sdn/lock"),
}


def _pve8(pve: Any) -> None:
    pve.version, pve.release_version = "8.4.14", "8.4"


def _ha_resource_of_ct120(pve: Any) -> None:
    pve.ha_resources["ct:120"] = {}


def _content_urls(pve: Any) -> None:
    pve.content_urls.update(CONTENT_URLS)


#: The cluster a family's examples need besides the seeded one, by family: an HA group exists on PVE 8
#: only, an HA rule names HA resources that must exist (pve-ha-manager API2/HA/Groups.pm, Rules.pm), a
#: download's URLs serve what the examples' checksums are of (tests.support.content).
CLUSTER_FOR: dict[str, Any] = {"ha_group": _pve8, "ha_rule": _ha_resource_of_ct120, "content": _content_urls}


def _snippet_storage(pve: Any, tmp: Path) -> Path:
    """Storage ``snippets``: a dir storage at ``tmp/snippets-store`` taking snippets (its path)."""
    from tests.support.snippets import add_snippet_storage

    (tmp / "snippets-store").mkdir()
    add_snippet_storage(pve, tmp / "snippets-store", "snippets")
    return tmp / "snippets-store"


#: Families that write files on the root lane's node rather than send API writes (a snippet: PVE has no
#: API call that writes one, pve-storage API2/Storage/Status.pm upload): given the fake cluster and the
#: test's temporary directory, the directory they write under. Their target gets the fake root lane
#: (tests.support.pvesh), and each file created, changed or removed there counts as one write
#: (``disk_writes``): a POST, PUT or DELETE of ``/disk/<file>`` naming the ``sha256``, ``size`` and
#: ``mode`` it changed. An answer cannot be lost after such a write reached its server: there is none.
ON_DISK: dict[str, Any] = {"snippet": _snippet_storage}
#: Families some of whose objects only root@pam may read and write (ACME accounts: pve-manager
#: API2/ACMEAccount.pm, no ``permissions``): their target gets the fake root lane too (tests.support.pvesh,
#: forwarding to the fake cluster as root@pam, whose ticket logins are no write of theirs).
LANE: frozenset[str] = frozenset({"acme"})


def through_lane(kind: Kind) -> bool:
    """Whether ``kind``'s writes go through the root lane (``ObjectSpec.writes_with``)."""
    return kind.spec is not None and getattr(kind.load(), "writes_with", "") == "root_lane"


def disk_state(root: Path) -> dict[str, tuple[str, int, str]]:
    """``{relative path: (sha256, size, mode)}`` of every file under ``root``."""
    import hashlib

    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            found[str(path.relative_to(root))] = (
                hashlib.sha256(data).hexdigest(), len(data), oct(path.stat().st_mode & 0o777)
            )  # fmt: skip
    return found


def disk_writes(before: Mapping[str, tuple], after: Mapping[str, tuple]) -> list[tuple[str, str, Any]]:
    """The writes (``(method, path, JSON body)``) that turned the files ``before`` into ``after``."""
    out = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if new is None:
            out.append(("DELETE", f"/disk/{name}", None))
            continue
        fields = {key: value for key, value, was in zip(("sha256", "size", "mode"), new, old or (None,) * 3,
                                                        strict=True) if value != was}  # fmt: skip
        out.append(("POST" if old is None else "PUT", f"/disk/{name}", json.dumps(fields)))
    return out


#: Writes a family sends to OpenBao as part of one object write, and the plan changes they carry: an API
#: token's secret, shown by PVE once, stored at its ``store`` path after a check that it may be written
#: there (``sys/capabilities-self``), at create and when the secret is drawn anew
#: (salt_proxmox/access/token.py ``send``).
STORE_WRITES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "token": ((r"POST /v1/sys/capabilities-self", r"(?:PUT|POST) /v1/.+"), ("store", "secret_serial")),
}

#: Plan changes that describe a family's written value rather than name a field of the write, by family:
#: a policy's plan shows its text's digest, grants and diff, and the write sends the text
#: (``PUT /v1/sys/policy/<name>`` ``{"policy": text}``, salt_proxmox/openbao_policy/lifecycle.py).
FIELD_OF: dict[str, dict[str, str]] = {
    "policy": {"sha256": "policy", "path_grants": "policy", "diff": "policy"},
    # An HA resource's ha_state is PVE's state (Salt keeps state in every chunk: salt_proxmox/ha/resource.py).
    "ha_resource": {"ha_state": "state"},
    # A replication job's target_node is PVE's target (``target`` names the proxmox:targets entry).
    "replication": {"target_node": "target"},
    # A matcher's targets are PVE's target list (target names the cluster in every state).
    "notification": {"targets": "target"},
    # A node's managed hosts entries are written as the whole file (Nodes.pm write_etc_hosts: data).
    "node": {"entries": "data"},
    # A node certificate's fingerprint is the one of the chain it uploads (salt_proxmox/certificate/spec.py).
    "certificate": {"fingerprint": "certificates"},
}

#: Families whose update write replaces the whole object, so a field the plan clears is one the write
#: leaves out: a firewall alias (pve-firewall ``API2/Firewall/Aliases.pm`` ``update_alias`` stores
#: ``{name, cidr}`` plus ``comment`` only when one is given); a node's DNS settings (pve-common
#: ``INotify.pm`` ``update_etc_resolv_conf`` rewrites every ``nameserver`` line from the PUT alone).
REPLACED_WHOLE = ("firewall_alias", "node_dns")

#: Body fields a family's create sends with one fixed value, naming the endpoint's own kind of object
#: rather than a declared field: an SDN subnet's ``type=subnet`` (pve-network ``SubnetPlugin.pm``
#: ``type``, which ``API2/Network/SDN/Subnets.pm`` ``create`` requires).
CONSTANTS: dict[str, dict[str, str]] = {
    "sdn": {"type": "subnet"},
    # A replication job's type=local: ReplicationConfig.pm's one type, which create requires.
    "replication": {"type": "local"},
    # upload_custom_cert: restart=1 (pveproxy serves the new file), force=1 over an owned file.
    "certificate": {"restart": "1", "force": "1"},
}

#: Changes that carry a family's pillar secret with them: a node certificate's key goes with every new
#: certificate (pve-manager ``API2/Certificates.pm`` ``upload_custom_cert``: the key of its public key).
SENT_WITH: dict[str, tuple[str, ...]] = {"certificate": ("fingerprint",)}

#: Kinds whose removal is no DELETE: a scope's firewall options cannot be deleted, so their destroy puts
#: every key back to PVE's default (``PUT …/firewall/options`` with ``delete=<keys>``, pve-firewall
#: ``API2/Firewall/{Cluster,Host,VM}.pm`` ``set_options``).
RESETS = ("firewall_options", "cluster_options")

#: Kinds PVE has no delete for, whose ``removal: destroy`` is refused naming why, nothing read or written:
#: a node's DNS settings, hosts file and time zone (pve-manager ``PVE/API2/Nodes.pm`` registers no DELETE
#: for ``dns``, ``hosts``, ``time``). Their examples' delete is ``ensure: absent`` alone (forget).
KEPT = ("node_dns", "node_hosts", "node_time")

#: Kinds whose one state writes a list entry by entry, by the field holding the list: an IP set's
#: entries are each a ``POST …/ipset/<name>``, ``PUT``/``DELETE …/ipset/<name>/<cidr>`` (pve-firewall
#: ``API2/Firewall/IPSet.pm``: the set has no write taking its entries). The plan's change of that field
#: (old and new lists) names the entries added, removed and changed: one write each.
ENTRIES: dict[str, str] = {"firewall_ipset": "cidrs"}

#: Kinds whose state writes an ordered list with several writes, and lists them in its plan's
#: ``changes["writes"]`` in words (``insert `IN ACCEPT …```, ``move …``, ``update …``, ``delete …``): the
#: apply must send exactly that sequence, each word's method (a firewall rule list: pve-firewall
#: ``API2/Firewall/Rules.pm`` ``create_rule`` POST, ``update_rule`` PUT with or without ``moveto``,
#: ``delete_rule`` DELETE).
LISTED_WRITES: dict[str, dict[str, str]] = {
    "firewall_rules": {"insert": "POST", "move": "PUT", "update": "PUT", "delete": "DELETE"},
}
#: Kinds whose plan changes one key per entry, each entry its own writes: ``PER_ENTRY`` (below ``Write``).

#: Body keys that guard or steer a write rather than set a field: PVE's digest, the apply's lock token,
#: ``delete`` (its values are the fields it clears; ``delete=1`` on ``PUT /access/acl`` removes the entry).
GUARDS = ("digest", "lock-token", "delete", "allow-pending")


@dataclass(frozen=True)
class Case:
    """One kind of one family the suite runs: its ``examples`` (None when it has none: ``missing``
    names it). ``id`` is the family's name for its first kind, ``<family>-<kind>`` for the others."""

    family: Family
    kind: Kind
    examples: Examples | None

    @property
    def id(self) -> str:
        first = self.kind == self.family.kinds[0]
        return self.family.name if first else f"{self.family.name}-{self.kind.name}"


def cases(families: tuple[Family, ...]) -> list[Case]:
    """Every kind of every family in ``families``, each a ``Case``."""
    return [Case(family, kind, examples_of(kind.name)) for family in families for kind in family.kinds]


def kind_functions(case: Case) -> tuple[str, str]:
    """The present and absent state functions of the case's kind."""
    return case.kind.present, case.kind.absent


def lows(case: Case, phase: str) -> list[Low]:
    """One run of ``phase`` (create, update, clear, delete): the example's state, then the family's
    applies (``Examples.applies``)."""
    present, absent = kind_functions(case)
    declared = getattr(case.examples, phase)
    fun = absent if phase == "delete" else present
    state = case.family.state
    return [Low(state, fun, declared), *(Low(state, f, d) for f, d in case.examples.applies)]


def make_given(case: Case, minion: Any) -> None:
    """Apply the case's ``given`` states on ``minion`` (``conftest.Minion``); raises AssertionError when
    one fails."""
    made = given(case)
    if made:
        returns, _ = minion.run(made, test=False)
        failed = [(r.get("__id__"), r.get("comment")) for r in returns if r["result"] is not True]
        assert not failed, f"the examples' given objects: {failed}"


def given(case: Case) -> list[Low]:
    """The states that make what the case's examples need (``Examples.given``), then its applies."""
    if not case.examples.given:
        return []
    made = [Low(state, fun, declared, f"conformance-given-{n}") for n, (state, fun, declared) in
            enumerate(case.examples.given)]  # fmt: skip
    return [*made, *(Low(case.family.state, f, d) for f, d in case.examples.applies)]


def node_key(fun: str) -> str:
    """The key under ``proxmox:nodes:<node>`` of a node kind's state function (``apt_repository``: apt),
    as ``salt_proxmox.node.PILLAR_KEYS`` names it."""
    from salt_proxmox.node import PILLAR_KEYS
    from salt_proxmox.registry import FAMILIES

    (kind,) = [k for f in FAMILIES if f.name == "node" for k in f.kinds if fun in (k.present, k.absent)]
    return PILLAR_KEYS[kind.name]


def pillar_of(family: Family, fun: str, declared: Mapping[str, Any]) -> dict:
    """The pillar entry the formula turns into ``family.state``.``fun`` with ``declared``: the entry under
    the family's section keyed by its name (``proxmox:pools:example``; an ACME plugin under
    ``proxmox:acme:plugins``), a node's interface under
    ``proxmox:networks:<node>:interfaces``, an SDN object under ``proxmox:sdn:<kind>s``, a resource
    mapping under ``proxmox:mappings:<kind>``, a snippet under ``proxmox:snippets:<storage>``; an absent
    function is ``ensure: absent``. Raises LookupError for a section it does not know."""
    entry = dict(declared)
    name = str(entry.pop("name"))
    if fun in (kind.absent for kind in family.kinds):
        entry["ensure"] = "absent"
    top, _, section = family.section.partition(":")
    if family.section == "proxmox:networks":
        node = entry.pop("node")
        return {top: {section: {node: {"interfaces": {name: entry}}}}}
    if family.section == "proxmox:snippets":
        storage = entry.pop("storage")
        return {top: {section: {storage: {name: entry}}}}
    if family.section in ("proxmox:sdn", "proxmox:acme", "proxmox:notifications"):
        kind = fun.removesuffix("_absent")
        return {top: {section: {kind if kind == "dns" else f"{kind}s": {name: entry}}}}
    if family.section == "proxmox:nodes":  # one entry per node and kind: proxmox:nodes:<node>:<kind>
        return {top: {section: {name: {node_key(fun): entry}}}}
    if family.section == "proxmox:mappings":
        return {top: {section: {fun.removesuffix("_absent"): {name: entry}}}}
    if family.section == "proxmox:{lxc,qemu}:<id>:snapshots":
        # A snapshot is an entry of its guest's snapshots list; the guest entry declares the guest too.
        guest = {"vmid": entry.pop("vmid"), "node": entry.pop("node")}
        kind = entry.pop("type")
        snap = {"snapname": name, **{key: value for key, value in entry.items()}}
        return {top: {kind: {f"guest-{guest['vmid']}": {**guest, "snapshots": [snap]}}}}
    if family.section == "proxmox:firewall":
        kind = fun.removesuffix("_absent")
        return {top: {section: {kind if kind in ("rules", "options") else f"{kind}s": {name: entry}}}}
    if not section:
        raise LookupError(f"{family.name}: pillar section {family.section} is not one pillar_of knows")
    nested: dict = {name: entry}
    for part in reversed(section.split(":")):  # proxmox:pbs:datastores nests one level deeper
        nested = {part: nested}
    return {top: nested}


def on_pbs(family: Family) -> bool:
    """Whether the family's objects live on a PBS target (``proxmox:pbs:...``), not the PVE cluster."""
    return family.section.startswith("proxmox:pbs:")


def missing(case: Case) -> list[str]:
    """What the ``case`` lacks for the suite: [] when nothing."""
    family, examples = case.family, case.examples
    if examples is None:
        return [f"kind {case.kind.name} has no examples (tests/conformance/examples.py EXAMPLES)"]
    problems = []
    for phase, _ in PHASES:
        if not getattr(examples, phase).get("name"):
            problems.append(f"examples.{phase} has no name")
    for what in ("salt keyword", "unknown key", "misspelt ensure", "misspelt removal", "wrong type"):
        if what not in examples.bad:
            problems.append(f"examples.bad has no {what!r} entry")
    for fun, _ in examples.applies:
        if fun not in family.calls:
            problems.append(f"examples.applies names {fun}, not a state function of {family.state}")
    # A kind PVE writes at once (an SDN IPAM or DNS server, Ipams.pm/Dns.pm) has nothing for the apply.
    staged = case.kind.present_run != SIMPLE_PRESENT
    if any(fun == "applied" for fun in family.calls) and staged and not examples.applies:
        problems.append("it has an apply state but examples.applies declares none")
    if examples.applies and not staged:
        problems.append("PVE writes it at once, yet examples.applies declares an apply")
    if examples.applies and family.name not in APPLY_WRITES:
        problems.append("its apply's writes are not in tests/conformance/contract.py APPLY_WRITES")
    try:
        pillar_of(family, case.kind.present, examples.create)
    except LookupError as exc:
        problems.append(str(exc))
    return problems


# ----------------------------------------------------------------------------------- writes


@dataclass
class Write:
    """One write sent: ``line`` (``"PUT /pools"``) and the fields its body names (set or deleted)."""

    line: str
    fields: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)

    @property
    def removes(self) -> bool:
        return self.line.startswith("DELETE ") or self.fields.get("delete") == "1"


@dataclass(frozen=True)
class Entries:
    """How a ``PER_ENTRY`` kind's plan names its writes: every write sent matches ``pattern``; ``want``
    gives the writes one plan return's changes name, ``said`` a sent write in the same words, and the
    two agree (in any order)."""

    pattern: str
    want: Callable[[Mapping[str, Any]], list[str]]
    said: Callable[[Write], str]


def _apt_want(changes: Mapping[str, Any]) -> list[str]:
    """An added or enabled repository is ``on``, a disabled one ``off``; a destroy one ``off``."""
    if set(changes) & set(DELETED):
        return ["off"]
    keys = sorted(set(changes) - {*CREATED, *ROW_ONLY})
    return ["on" if (changes[key] or {}).get("new") else "off" for key in keys]


#: A downloaded file's plan changes one key per node (salt_proxmox/content/lifecycle.py): ``download`` is
#: one ``download-url`` POST there (pve-storage API2/Storage/Status.pm), ``replace`` a DELETE of the
#: volume (API2/Storage/Content.pm ``delete``) then that POST, a destroy's ``new: None`` the DELETE;
#: ``source`` tells what a replace downloads, no write of its own.
_CONTENT_WRITES = {"download": ("download",), "replace": ("delete", "download"), None: ("delete",)}


def _content_want(changes: Mapping[str, Any]) -> list[str]:
    return [f"{verb} {node}" for node, change in changes.items() if node not in ("source", *ROW_ONLY)
            for verb in _CONTENT_WRITES.get((change or {}).get("new"), ("unknown",))]  # fmt: skip


#: Kinds whose plan changes one key per entry, each entry its own writes: a node's APT repositories
#: (salt_proxmox/node/apt.py; pve-manager API2/APT.pm ``add_repository`` PUT ``handle``,
#: ``change_repository`` POST ``path``, ``index``, ``enabled``), whose destroy disables (``enabled=0``);
#: a downloaded file on each node a storage that is not shared holds it on (``_CONTENT_WRITES``).
PER_ENTRY: dict[str, Entries] = {
    "apt_repository": Entries(
        r"(PUT|POST) /nodes/[^/]+/apt/repositories",
        _apt_want,
        lambda w: "on" if w.line.startswith("PUT ") or w.fields.get("enabled") == "1" else "off",
    ),
    "content": Entries(
        r"POST /nodes/[^/]+/storage/[^/]+/download-url|DELETE /nodes/[^/]+/storage/[^/]+/content/.+",
        _content_want,
        lambda w: f"{'download' if w.line.startswith('POST ') else 'delete'} {w.line.split('/')[2]}",
    ),
}


def _body(body: object) -> dict[str, str]:
    if not body:
        return {}
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    if text.lstrip().startswith("{"):
        try:
            return {str(k): _flat(v) for k, v in json.loads(text).items()}
        except ValueError:
            return {}
    return {key: values[-1] for key, values in parse_qs(text, keep_blank_values=True).items()}


def _flat(value: object) -> str:
    """A declared or sent value as PVE's form takes it: booleans 1/0, lists comma-joined."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list | tuple):
        return ",".join(_flat(item) for item in value)
    return "" if value is None else str(value)


def sent(log: list[tuple[str, str, Any]]) -> list[Write]:
    """The writes of a request log (``(method, path, body)``, the path without ``/api2/json``)."""
    out = []
    for method, path, body in log:
        if method == "GET":
            continue
        fields = _body(body)
        deleted = {
            part for part in fields.get("delete", "").split(",") if part and fields.get("delete") != "1"
        }
        out.append(Write(f"{method} {unquote(path).split('?', 1)[0]}", fields, deleted))
    return out


def apply_writes(family: Family, writes: list[Write]) -> tuple[list[Write], list[Write]]:
    """``(the apply's writes, the objects' writes)`` of ``writes``, by ``APPLY_WRITES``."""
    patterns = [re.compile(p + "$") for p in APPLY_WRITES.get(family.name, ())]
    ours = [w for w in writes if any(p.fullmatch(w.line) for p in patterns)]
    return ours, [w for w in writes if w not in ours]


def _entry_key(entry: object) -> str:
    """An IP set entry as a plan shows it (``!10.9.1.7``, ``10.9.0.0/24 # comment``) → its cidr."""
    return str(entry).lstrip("!").split()[0] if str(entry).strip() else ""


def entry_writes(change: Mapping[str, Any]) -> int:
    """How many entry writes a plan's change of a list field (``{old: [...], new: [...]}``) names: one
    per entry added, removed or changed."""
    old = {_entry_key(e): str(e) for e in change.get("old") or []}
    new = {_entry_key(e): str(e) for e in change.get("new") or []}
    return len(old.keys() ^ new.keys()) + sum(1 for key in old.keys() & new.keys() if old[key] != new[key])


def _take_entry_writes(kind: str | None, plan: list[dict], objects: list[Write]) -> tuple[list, list]:
    """The ``ENTRIES`` kind's entry writes taken out of ``objects``, and the problems found: each plan
    return changing the list field takes as many writes under its object's path as it names."""
    problems: list[str] = []
    field_name = ENTRIES.get(kind or "")
    if field_name is None:
        return objects, problems
    rest = list(objects)
    for ret in plan:
        change = (ret.get("changes") or {}).get(field_name)
        if not change or set(ret["changes"]) & set(DELETED):
            continue
        name = str(ret.get("name") or ret["__id__"])
        under = [w for w in rest if re.search(rf" \S*/ipset/{re.escape(name)}(/.*)?$", w.line) and
                 not w.line.endswith("/ipset")]  # fmt: skip
        want = entry_writes(change)
        if len(under) != want:
            problems.append(f"{ret['__id__']}: the plan names {want} entry write(s), the apply sent "
                            f"{[w.line for w in under]}")  # fmt: skip
        for write in under[:want]:
            rest.remove(write)
    return rest, problems


def write_problems(
    family: Family, plan: list[dict], declared: Mapping[str, Any], log, kind: str | None = None
) -> list[str]:
    """Where the writes of an apply (``log``) differ from what its ``plan`` (the run's plan returns)
    listed: one object write per state whose plan changes something besides its ownership row, which
    creates (``created``), removes (``deleted``/``destroyed``) or sets and clears exactly the fields
    its plan names, naming nothing else but values ``declared`` holds (identity, values PVE takes whole);
    the apply's writes (``APPLY_WRITES``) if and only if an apply state plans a ``reload``."""
    applies, objects = apply_writes(family, sent(log))
    objects, problems = _take_entry_writes(kind, plan, objects)
    entry_field = ENTRIES.get(kind or "")
    patterns, carried = STORE_WRITES.get(family.name, ((), ()))
    stores = [w for w in objects if any(re.fullmatch(p, w.line) for p in patterns)]
    objects = [w for w in objects if w not in stores]
    drawn = [ret for ret in plan if set(ret.get("changes") or {}) & {*CREATED, *carried}]
    if patterns and bool(stores) != bool(drawn):
        problems.append(
            f"the plan {'draws' if drawn else 'draws no'} secret, the apply stored {[w.line for w in stores]}"
        )
    reloads = [ret for ret in plan if RELOAD in (ret.get("changes") or {})]
    if bool(reloads) != bool(applies):
        problems.append(
            f"the plan {'names' if reloads else 'does not name'} a reload, the apply sent "
            f"{[w.line for w in applies] or 'none'}"
        )
    planned = [ret for ret in plan if set(ret.get("changes") or {}) - {RELOAD, *ROW_ONLY, entry_field}]
    if kind in LISTED_WRITES:
        return problems + _listed_problems(LISTED_WRITES[kind], planned, objects)
    if kind in PER_ENTRY:
        return problems + _per_entry_problems(PER_ENTRY[kind], planned, objects)
    if len(objects) != len(planned):
        problems.append(
            f"the plan lists {len(planned)} object write(s), the apply sent {[w.line for w in objects]}"
        )
        return problems
    known = {_flat(value) for value in declared.values()} | {_flat(declared.get("name"))}
    secrets_of = next((k.secrets for k in family.kinds if k.name == kind and k.secrets), None)
    pillar_secrets = set(imported(secrets_of)) if secrets_of else set()
    for ret, write in zip(planned, objects, strict=True):
        changes = set(ret["changes"])
        fields = changes - {*CREATED, *DELETED, *ROW_ONLY, entry_field}
        if changes & set(DELETED):
            if kind in RESETS:
                if not (write.line.startswith("PUT ") and write.deleted):
                    problems.append(f"{ret['__id__']}: planned a reset to PVE's defaults, sent {write.line}")
                continue
            if not write.removes:
                problems.append(f"{ret['__id__']}: planned a removal, sent {write.line}")
            continue
        if changes & set(CREATED) and not write.line.startswith(("POST ", "PUT ")):
            problems.append(f"{ret['__id__']}: planned a create, sent {write.line}")
        fields = {FIELD_OF.get(family.name, {}).get(key, key) for key in fields}
        named = (
            (set(write.fields) - set(GUARDS)) | write.deleted | (set(carried) & fields if stores else set())
        )
        if family.name in REPLACED_WHOLE or kind in REPLACED_WHOLE:
            # A field the plan clears (new value empty) is one the replacing write leaves out.
            named |= {key for key in fields if not _flat((ret["changes"][key] or {}).get("new"))} - set(
                write.fields
            )
        for key in sorted(fields - named):
            problems.append(f"{ret['__id__']}: the plan changes {key}, {write.line} does not send it")
        for key in sorted(named - fields):
            if key in pillar_secrets and changes & {
                *CREATED,
                "secret_serial",
                *SENT_WITH.get(family.name, ()),
            }:
                continue  # a secret from pillar: sent at create and on a secret_serial bump, never shown
            constant = CONSTANTS.get(family.name, {}).get(key)
            if constant is not None and write.fields.get(key) == constant and key not in write.deleted:
                continue
            if key in write.deleted or write.fields.get(key) not in known:
                problems.append(f"{ret['__id__']}: {write.line} sends {key}, which the plan does not change")
    return problems


def _per_entry_problems(entries: Entries, planned: list[dict], objects: list[Write]) -> list[str]:
    """Where the writes sent differ from the ones the plans name entry by entry (``Entries``)."""
    want = sorted(said for ret in planned for said in entries.want(ret["changes"]))
    got = [w for w in objects if re.fullmatch(entries.pattern, w.line)]
    if len(got) != len(objects) or sorted(map(entries.said, got)) != want:
        return [f"the plans change entries {want}, the apply sent {[(w.line, w.fields) for w in objects]}"]
    return []


def _listed_problems(methods: Mapping[str, str], planned: list[dict], objects: list[Write]) -> list[str]:
    """Where the writes sent differ from the ones the plans list in words, in order."""
    listed = [
        (ret["__id__"], methods.get(str(said).split(" ", 1)[0], "?"))
        for ret in planned
        for said in (ret["changes"].get("writes") or [])
    ]
    if [method for _, method in listed] != [w.line.split(" ", 1)[0] for w in objects]:
        return [f"the plans list writes {listed}, the apply sent {[w.line for w in objects]}"]
    return []


# ----------------------------------------------------------------------------------- reads


def object_reads(declared: Mapping[str, Any], log) -> list[str]:
    """The reads of the object in a plan's request log: the GET paths naming it (its name or vmid) and
    the listings above them (``/cluster/firewall/aliases`` above ``…/aliases/example_net``), else the
    plan's first GET (a listing the object is found in). Never empty for a plan that read."""
    gets = []
    for method, path, _ in log:
        path = unquote(path).split("?", 1)[0]
        if method == "GET" and path not in gets:
            gets.append(path)
    names = {str(declared[key]) for key in ("name", "vmid") if key in declared}
    naming = [p for p in gets if any(p.rstrip("/").endswith("/" + n) or f"/{n}/" in p for n in names)]
    listings = [p for p in gets if any(n.startswith(p + "/") and "/" not in n[len(p) + 1 :] for n in naming)]
    return naming + listings or gets[:1]


# ----------------------------------------------------------------------------------- secrets


def leak_places(world: SaltWorld, returns: list[dict], log_lines: list[str]) -> dict[str, str]:
    """Every place a secret must never reach: the returns, the log, the rows file, the run's cache
    (``__context__``, Salt's in-memory cache of the minion) and Salt's grains."""
    rows: Path = world.rows_file
    return {
        "returns": json.dumps(returns, default=repr),
        "log": "\n".join(log_lines),
        "rows file": rows.read_text() if rows.exists() else "",
        "__context__": repr(world.context),
        "grains": json.dumps(world.grains, default=repr),
    }


def salt_keywords() -> frozenset[str]:
    """The keys Salt reads as its own among a state's arguments, as the formula knows them
    (``formula/proxmox/init.sls`` ``SALT_KEYWORDS``, ``SALT_ARGUMENTS``)."""
    from tests.support.saltworld import ROOT, _load

    module = _load(ROOT / "formula" / "proxmox" / "init.sls", "conformance_formula_keywords")
    return frozenset(getattr(module, "SALT_KEYWORDS", ())) | frozenset(getattr(module, "SALT_ARGUMENTS", ()))
