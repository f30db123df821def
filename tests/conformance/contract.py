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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from salt_proxmox.registry import Family
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

#: Plan changes that describe a family's written value rather than name a field of the write, by family:
#: a policy's plan shows its text's digest, grants and diff, and the write sends the text
#: (``PUT /v1/sys/policy/<name>`` ``{"policy": text}``, salt_proxmox/openbao_policy/lifecycle.py).
FIELD_OF: dict[str, dict[str, str]] = {
    "policy": {"sha256": "policy", "path_grants": "policy", "diff": "policy"},
}

#: Families whose update write replaces the whole object, so a field the plan clears is one the write
#: leaves out: a firewall alias (pve-firewall ``API2/Firewall/Aliases.pm`` ``update_alias`` stores
#: ``{name, cidr}`` plus ``comment`` only when one is given).
REPLACED_WHOLE = ("firewall_alias",)

#: Body keys that guard or steer a write rather than set a field: PVE's digest, the apply's lock token,
#: ``delete`` (its values are the fields it clears; ``delete=1`` on ``PUT /access/acl`` removes the entry).
GUARDS = ("digest", "lock-token", "delete", "allow-pending")


def kind_functions(family: Family) -> tuple[str, str]:
    """The present and absent state functions of the kind the examples declare: the first kind's."""
    kind = family.kinds[0]
    return kind.present, kind.absent


def lows(family: Family, phase: str) -> list[Low]:
    """One run of ``phase`` (create, update, clear, delete): the example's state, then the family's
    applies (``Examples.applies``)."""
    present, absent = kind_functions(family)
    declared = getattr(family.examples, phase)
    fun = absent if phase == "delete" else present
    return [Low(family.state, fun, declared), *(Low(family.state, f, d) for f, d in family.examples.applies)]


def pillar_of(family: Family, fun: str, declared: Mapping[str, Any]) -> dict:
    """The pillar entry the formula turns into ``family.state``.``fun`` with ``declared``: the entry under
    the family's section keyed by its name (``proxmox:pools:example``), a node's interface under
    ``proxmox:networks:<node>:interfaces``, an SDN object under ``proxmox:sdn:<kind>s``; an absent
    function is ``ensure: absent``. Raises LookupError for a section it does not know."""
    _, absent = kind_functions(family)
    entry = dict(declared)
    name = str(entry.pop("name"))
    if fun in (absent, *(kind.absent for kind in family.kinds)):
        entry["ensure"] = "absent"
    top, _, section = family.section.partition(":")
    if family.section == "proxmox:networks":
        node = entry.pop("node")
        return {top: {section: {node: {"interfaces": {name: entry}}}}}
    if family.section == "proxmox:sdn":
        kind = fun.removesuffix("_absent")
        return {top: {section: {f"{kind}s": {name: entry}}}}
    if family.section == "proxmox:{lxc,qemu}:<id>:snapshots":
        # A snapshot is an entry of its guest's snapshots list; the guest entry declares the guest too.
        guest = {"vmid": entry.pop("vmid"), "node": entry.pop("node")}
        kind = entry.pop("type")
        snap = {"snapname": name, **{key: value for key, value in entry.items()}}
        return {top: {kind: {f"guest-{guest['vmid']}": {**guest, "snapshots": [snap]}}}}
    if section.count(":") or not section:
        raise LookupError(f"{family.name}: pillar section {family.section} is not one pillar_of knows")
    return {top: {section: {name: entry}}}


def missing(family: Family) -> list[str]:
    """What ``family`` lacks for the suite: [] when nothing."""
    problems = []
    examples = family.examples
    for phase, _ in PHASES:
        if not getattr(examples, phase).get("name"):
            problems.append(f"examples.{phase} has no name")
    for what in ("salt keyword", "unknown key", "misspelt ensure", "misspelt removal", "wrong type"):
        if what not in examples.bad:
            problems.append(f"examples.bad has no {what!r} entry")
    for fun, _ in examples.applies:
        if fun not in family.calls:
            problems.append(f"examples.applies names {fun}, not a state function of {family.state}")
    if any(fun == "applied" for fun in family.calls) and not examples.applies:
        problems.append("it has an apply state but examples.applies declares none")
    if examples.applies and family.name not in APPLY_WRITES:
        problems.append("its apply's writes are not in tests/conformance/contract.py APPLY_WRITES")
    try:
        pillar_of(family, kind_functions(family)[0], examples.create)
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


def write_problems(family: Family, plan: list[dict], declared: Mapping[str, Any], log) -> list[str]:
    """Where the writes of an apply (``log``) differ from what its ``plan`` (the run's plan returns)
    listed: one object write per state whose plan changes something besides its ownership row, which
    creates (``created``), removes (``deleted``/``destroyed``) or sets and clears exactly the fields
    its plan names, naming nothing else but values ``declared`` holds (identity, values PVE takes whole);
    the apply's writes (``APPLY_WRITES``) if and only if an apply state plans a ``reload``."""
    problems = []
    applies, objects = apply_writes(family, sent(log))
    reloads = [ret for ret in plan if RELOAD in (ret.get("changes") or {})]
    if bool(reloads) != bool(applies):
        problems.append(
            f"the plan {'names' if reloads else 'does not name'} a reload, the apply sent "
            f"{[w.line for w in applies] or 'none'}"
        )
    planned = [ret for ret in plan if set(ret.get("changes") or {}) - {RELOAD, *ROW_ONLY}]
    if len(objects) != len(planned):
        problems.append(
            f"the plan lists {len(planned)} object write(s), the apply sent {[w.line for w in objects]}"
        )
        return problems
    known = {_flat(value) for value in declared.values()} | {_flat(declared.get("name"))}
    for ret, write in zip(planned, objects, strict=True):
        changes = set(ret["changes"])
        fields = changes - {*CREATED, *DELETED, *ROW_ONLY}
        if changes & set(DELETED):
            if not write.removes:
                problems.append(f"{ret['__id__']}: planned a removal, sent {write.line}")
            continue
        if changes & set(CREATED) and not write.line.startswith(("POST ", "PUT ")):
            problems.append(f"{ret['__id__']}: planned a create, sent {write.line}")
        fields = {FIELD_OF.get(family.name, {}).get(key, key) for key in fields}
        named = (set(write.fields) - set(GUARDS)) | write.deleted
        if family.name in REPLACED_WHOLE:
            # A field the plan clears (new value empty) is one the replacing write leaves out.
            named |= {key for key in fields if not _flat((ret["changes"][key] or {}).get("new"))} - set(
                write.fields
            )
        for key in sorted(fields - named):
            problems.append(f"{ret['__id__']}: the plan changes {key}, {write.line} does not send it")
        for key in sorted(named - fields):
            if key in write.deleted or write.fields.get(key) not in known:
                problems.append(f"{ret['__id__']}: {write.line} sends {key}, which the plan does not change")
    return problems


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
