"""Cluster options (``proxmox_cluster_options``): ``datacenter.cfg``, one object per cluster.

Source: pve-manager ``PVE/API2/Cluster.pm`` ``get_options``/``set_options`` over pve-cluster
``src/PVE/DataCenterConfig.pm`` (``parse_datacenter_config``, ``write_datacenter_config``; the keys and
their formats are ``salt_proxmox.datacenter.dcformats``).

- Identity is the target: the state's name is a label, so two states of one run declaring options of
  one cluster are both refused (one object, one state).
- Read ``GET /cluster/options`` (Sys.Audit on ``/``): ``cfs_read_file('datacenter.cfg')``, the property
  strings parsed to objects, ``mac_prefix`` defaulted to ``BC:24:11``, ``description`` joined from the
  comment lines. Without Sys.Audit PVE answers ``console`` and ``tag-style`` alone (and no error), so an
  answer without ``mac_prefix``, which PVE always gives an auditor, is refused, never read as unset.
- Only the declared keys are compared, each by meaning (``dcformats.canonical``); PVE's defaults are no
  drift. A declared property string is the whole key: its sub-keys left out are PVE's defaults.
- Write ``PUT /cluster/options`` (Sys.Modify on ``/``): each key that differs as its property string, and
  ``delete`` for the keys the declaration clears (None or ``''``, or PVE's default). PVE stores a value
  as sent (``$conf->{$_} = $param->{$_}``) and takes no digest, so each write is preceded by a fresh
  read compared with the one judged (``simple.spec.reread_guard``).
- ``next-id`` with ``lower`` above ``upper`` is refused (``write_datacenter_config``: ``lower (X) <=
  upper (Y) boundary rule broken``); a key, sub-key or value newer than the cluster is refused at plan
  (``GET /version``; within PVE 9, pve-cluster's version on every node).
- ``http_proxy`` may hold a password (``http://user:pass@host:port``): it is read from pillar
  (``secrets_pillar``), its password never shown (``<password>`` in plans, returns and the ownership
  row) and compared with the one PVE holds by value (PVE answers it to an auditor).
- Absence, as for firewall options: the options always exist; "absent" means none of the declared keys
  is set, so the first write needs no ``adopt``. ``absent`` with ``removal: destroy`` clears exactly the
  keys this minion's last declaration set (``delete=``).
- ``tag-style`` shapes how guest ``tags`` compare (``pve.facts.tag_style``): a plan of it makes the
  guests planned after it in the run compare with the declared style, and a write of it makes them read
  it again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.datacenter import dcformats as dc
from salt_proxmox.errors import DeclarationError, boolean_problem
from salt_proxmox.pve import facts
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, fingerprint, reread_guard
from salt_proxmox.wire.propstring import pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "cluster_options"
IDENTITY = "cluster"
PATH = "cluster/options"
#: Read from pillar (``run.config.pillar_secrets``): ``http_proxy`` may carry a password.
SECRETS = ("http_proxy",)
#: What a plan, a return and the ownership row show for a password in ``http_proxy``; ``OTHER`` for a
#: live password other than the declared one.
HIDDEN, OTHER = "<password>", "<another password>"
_USERINFO = re.compile(r"^(http://[^/@:]*):([^/@]*)@")


def proxy_password(url: str) -> str | None:
    """The password of an ``http://user:pass@host`` URL, None without one."""
    match = _USERINFO.match(url)
    return match.group(2) if match else None


def hidden(url: str, marker: str = HIDDEN) -> str:
    """``url`` with its password replaced by ``marker``."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}:{marker}@", url, count=1)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """The options of the target's cluster; ``name`` is the state's label. Raises DeclarationError."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: cluster options take the keys of datacenter.cfg"
        )
    if not isinstance(name, str) or not name:
        raise DeclarationError("name: a label is required (text)")
    return Declared(state_id, target, identity=IDENTITY, label="cluster options", names={"name": name})


#: Keys whose values are an operator's own text, kept out of the ownership row (``Declared.unstored``).
UNSTORED = ("consent-text", "description")


def declare(
    state_id: str, target: str, name: object = None, adopt: object = False, **options: object
) -> Declared:
    """A checked declaration: ``name`` (a label), ``datacenter.cfg`` keys as the API spells them (a
    property string as its text or a mapping of sub-keys; None or ``''`` clears a key), ``adopt``.
    ``http_proxy`` (from pillar) keeps its password in ``Declared.secrets``. Raises DeclarationError
    naming each key and rule."""
    probe = identify(state_id, target, name=name)
    problems, values, secrets = [], {}, {}
    for key in sorted(options):
        value = options[key]
        if key in dc.NOT_DECLARED:
            problems.append(f"{key}: {dc.NOT_DECLARED[key]}")
        elif key not in dc.KEYS:
            problems.append(
                f"{key}: not a datacenter.cfg key (DataCenterConfig.pm $datacenter_schema; unknown key)"
            )
        elif key == "http_proxy" and isinstance(value, str) and proxy_password(value) is not None:
            problem = dc.KEYS[key].rule.problem(value)
            if problem:
                problems.append(f"{key}: {problem}")
                continue
            values[key] = hidden(value)
            if proxy_password(value) != HIDDEN:  # a recorded declaration holds the marker only
                secrets[key] = value
        else:
            try:
                values[key] = dc.canonical(key, value)
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
    if not options:
        problems.append("declare at least one datacenter.cfg key (keyboard, migration, tag-style, ...)")
    next_id = values.get("next-id")
    if isinstance(next_id, str):
        bounds = dict(pairs(next_id))
        lower, upper = int(bounds.get("lower", 100)), int(bounds.get("upper", 1_000_000))
        if lower > upper:
            problems.append(
                f"next-id: lower ({lower}) <= upper ({upper}) boundary rule broken (DataCenterConfig.pm "
                "write_datacenter_config refuses it)"
            )
    problem = boolean_problem("adopt", adopt)
    if problem:
        problems.append(problem)
    if problems:
        raise DeclarationError(problems)
    found = probe.declaring(values, adopt)
    # Text a human wrote is never stored in the rows or grains (docs/design.md §6, as a guest's
    # description): removal: destroy therefore leaves description and consent-text as they are.
    unstored = frozenset(key for key in UNSTORED if key in values)
    return Declared(**{**found.__dict__, "secrets": secrets, "unstored": unstored})


def live_value(key: str, raw: object, decl: Declared) -> object:
    """``key`` as ``GET /cluster/options`` answered it (``raw``), canonical; ``http_proxy``'s password
    as ``HIDDEN`` when it is the declared one (or none is declared), else ``OTHER``. Raises
    ValueError naming the rule for a value PVE would not hold."""
    if key == "http_proxy" and isinstance(raw, str) and proxy_password(raw) is not None:
        secret = decl.secrets.get(key)
        return hidden(raw, HIDDEN if secret is None or secret == raw else OTHER)
    return dc.canonical(key, raw)


def set_keys(data: Mapping[str, object], decl: Declared) -> dict:
    """Every key of ``KEYS`` that ``data`` sets, canonical (PVE's defaults left out). Raises ValueError."""
    live = {}
    for key in dc.KEYS:
        try:
            value = live_value(key, data.get(key), decl)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
        if value is not None:
            live[key] = value
    return live


def parse(data: object, decl: Declared) -> dict | None:
    """``GET /cluster/options`` → the declared keys, canonical, and ``fingerprint``; None when none of
    them is set and the declaration sets one (nothing to take over). Raises ValueError for another shape,
    a value PVE would not hold, or an answer cut down for want of Sys.Audit on ``/``."""
    if not isinstance(data, Mapping):
        raise ValueError("expected the datacenter options object")
    if "mac_prefix" not in data:
        raise ValueError(
            "the answer holds no mac_prefix, which PVE gives every caller with Sys.Audit on / (Cluster.pm "
            "get_options answers console and tag-style alone without it): grant the read credential "
            "Sys.Audit on /"
        )
    if not decl.values:
        live = set_keys(data, decl)
        return {**live, "fingerprint": fingerprint(data)} if live else None
    live = {}
    for key in decl.values:
        try:
            live[key] = live_value(key, data.get(key), decl)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    if all(value is None for value in live.values()) and any(v is not None for v in decl.values.values()):
        return None
    live["fingerprint"] = fingerprint(data)
    return live


def _put(decl: Declared, live: Mapping[str, object]) -> Call | None:
    form, cleared = {}, []
    for key, want in decl.values.items():
        if live.get(key) == want:
            continue
        if want is None:
            cleared.append(key)
        else:
            form[key] = decl.secrets.get(key, str(want))
    if cleared:
        form["delete"] = ",".join(sorted(cleared))
    return Call("PUT", PATH, form=form) if form else None


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A write of ``http_proxy`` whose password is not known; a key, sub-key or value the cluster's
    release does not know (``dcformats.release_needs``: ``GET /version``, and within PVE 9 pve-cluster's
    version on every node, ``facts.package_at_least``). Raises what those reads raise."""
    if action == "delete":
        return []
    out, changed = [], {k: v for k, v in decl.values.items() if v is not None and (live or {}).get(k) != v}
    if (
        "http_proxy" in changed
        and "http_proxy" not in decl.secrets
        and proxy_password(str(changed["http_proxy"]))
    ):
        out.append(
            "http_proxy: its password is not known here (declared as <password>): declare it in pillar"
        )
    for key, value in sorted(changed.items()):
        needs = dc.release_needs(key, value)
        if needs == (8,):
            continue
        cluster = facts.release(ctx)
        if cluster.major < needs[0]:
            ok, why = False, f"the cluster runs PVE {cluster.release}"
        elif len(needs) > 1:
            ok, why = facts.package_at_least(ctx, "pve-cluster", needs)
        else:
            ok, why = True, ""
        if not ok:
            out.append(
                f"{key}: {shown_value(key, value)} needs pve-cluster {'.'.join(map(str, needs))} "
                f"(DataCenterConfig.pm), and {why}, so PVE refuses it (property is not defined in schema). "
                "Leave it out, or upgrade."
            )
    return out


def shown_value(key: str, value: object) -> str:
    return f"{key}={value}" if key != "http_proxy" else key


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """A write of ``tag-style``: the guests judged after it in this run compare tags with the declared
    style (``facts.expect_tag_style``), as PVE will store them once it is written."""
    if action == "delete" or "tag-style" not in decl.values:
        return []
    facts.expect_tag_style(ctx, facts.parse_tag_style({"tag-style": decl.values["tag-style"] or ""}))
    return ["cluster options: guests planned after this state compare tags with the declared tag-style"]


def send(ctx: PveContext, decl: Declared, call: Call, what: str) -> None:
    """Send one write, then drop the run's memo of ``GET /cluster/options`` (``facts.forget``), so a later
    state reads the tag style the write left."""
    from salt_proxmox.simple.lifecycle import send as send_call  # the lifecycle imports the families' specs

    try:
        send_call(ctx, ctx.broker.provision(), call)
    finally:
        facts.forget(ctx, PATH)


def export_values(live: Mapping[str, object], probe: Declared) -> dict:
    """``proxmox.export``: every key the cluster sets, but ``http_proxy`` holding a password (a secret)."""
    return {
        key: value
        for key, value in live.items()
        if key != "fingerprint" and not (key == "http_proxy" and proxy_password(str(value)))
    }


def _rule(key: str) -> Rule | None:
    """A key of ``datacenter.cfg`` or ``delete`` (``declare`` checked each value)."""
    return Rule() if key in dc.KEYS or key == "delete" else None


def _the_cluster(row: Mapping[str, object]) -> Mapping[str, object] | None:
    """``GET /cluster/status``'s ``cluster`` row, or the node row of a node in no cluster (``nodeid`` 0)."""
    if row.get("type") == "cluster" or (
        row.get("type") == "node" and row.get("local") and not row.get("nodeid")
    ):
        return {"name": IDENTITY}
    return None


SPEC = ObjectSpec(
    family=FAMILY,
    noun="cluster options",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", PATH),
    absence="none of the declared keys set (GET /cluster/options; PVE's defaults are nobody's)",
    is_absent=lambda error, decl: False,
    parse=parse,
    confirm_absent=lambda ctx, credential, decl: None,  # datacenter.cfg is the whole record
    create=lambda decl: _put(decl, {}) or Call("PUT", PATH, form={}),
    create_endpoint=Endpoint("PUT /cluster/options", (), _rule),
    update=_put,
    update_endpoint=Endpoint("PUT /cluster/options", (), _rule),
    delete=lambda decl, live: Call("PUT", PATH, form={"delete": ",".join(sorted(decl.values))}),
    write_guard=reread_guard(lambda decl: PATH, "PUT /cluster/options takes no digest"),
    delete_guard=True,
    refusals=refusals,
    side_effects=side_effects,
    send=send,
    export_names=_the_cluster,
    export_listings=lambda ctx: [(Call("GET", "cluster/status"), {})],
    export_values=export_values,
    export_secrets=lambda live: (
        {"http_proxy"} if proxy_password(str(live.get("http_proxy") or "")) else set()
    ),
    live_only=("fingerprint",),
)
