"""Firewall options (``proxmox_firewall.options``): the options of one scope's firewall, named by the
scope (``cluster``, ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>``).

Source: pve-firewall 6.0.4 (git 6f1311f) ``src/PVE/Firewall.pm`` (``$cluster_option_properties``,
``$host_option_properties``, ``$vm_option_properties``; ``parse_clusterfw_option``,
``parse_hostfw_option``, ``parse_vmfw_option``; the compiler's effective defaults) and
``src/PVE/API2/Firewall/{Cluster,Host,VM}.pm`` (``get_options``/``set_options``).

What PVE does, and so how this family compares and writes:

- each scope takes its own table (``TABLES``); a key of another scope is refused by name (PVE:
  ``property is not defined in schema``). A container takes the VM table (``VM.pm`` serves both).
- **defaults are never drift**: a key left unset behaves as its default, so this family compares the
  effective value, with ``None`` standing for PVE's default: declaring the default, or ``None``/``''``
  (clear), is the same declaration, and a live key set explicitly to its default is the same as unset.
  The effective default is the compiler's where it differs from the schema's: ``dhcp`` (schema 0; the
  compiler allows DHCP unless ``dhcp`` is 0: ``ruleset_create_vm_chain``) and ``nosmurfs`` (on unless
  0: ``ruleset_chain_add_input_filters``); ``policy_in`` DROP, ``policy_out`` ACCEPT
  (``generate_tap_rules_direction``, ``enable_host_firewall``), ``policy_forward`` ACCEPT.
- **spellings**: booleans as PVE's ``parse_boolean`` reads them, written 1/0; policies upper case
  (``parse_*_option``: ``uc``), log levels lower case (``lc``), ``nf_conntrack_helpers`` lower case
  (``lc``) in any order; ``log_ratelimit`` as its property string with defaults
  (``enable=1,rate=1/second,burst=5``).
- **the cluster's enable**: ``set_options`` stores ``time()`` for a value above 1, and
  ``parse_clusterfw_option`` reads a stored value above 1 as 0 once it is 60 seconds old (the GUI's
  anti-lockout dance): a live value above 1 is enabled (1) here, and a declared value above 1 is
  refused (it would turn itself off a minute later). A node's and a guest's ``enable`` are booleans.
  **fakepve 0.5.0 differs**: it answers the time stamp for ever; the unit tests pin PVE's 0.
- **writes**: one ``PUT …/options`` with the changed keys and ``delete=`` for the keys going back to
  their default, guarded by the options' digest (``copy_opject_with_digest``, checked by
  ``assert_if_modified``), read right before the write and checked to show the options as judged.
- **absence**: options always exist; here "absent" means the live options hold none of the declared
  keys explicitly (nothing to take over: PVE's defaults are nobody's). Then the first write needs no
  ``adopt``; a scope where one of them is set is someone's, and needs ``adopt: true``. ``absent`` with
  ``removal: destroy`` sends ``delete=`` for the declared keys.
- **lockout**: a change that enables the firewall or sets ``policy_in``/``policy_out`` to DROP or
  REJECT is handed to ``lockout_refusals`` (the no-lockout check), unless ``allow_lockout: true``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, boolean_problem
from salt_proxmox.firewall import scope as scopes
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec
from salt_proxmox.wire.propstring import flag

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "firewall_options"
LOG_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog")
POLICIES = ("ACCEPT", "REJECT", "DROP")
#: ``pve-fw-conntrack-helper`` (``pve_fw_verify_conntrack_helper``).
HELPERS = ("amanda", "ftp", "irc", "netbios-ns", "pptp", "sane", "sip", "snmp", "tftp")
_RATE = re.compile(r"^[1-9][0-9]*/(second|minute|hour|day)\Z")


@dataclass(frozen=True)
class Option:
    """One option: ``kind`` (``bool``, ``int``, ``enum``, ``level``, ``enable`` — the cluster's,
    ``ratelimit``, ``helpers``), its effective ``default`` (canonical), and bounds or values."""

    kind: str
    default: object = None
    minimum: int | None = None
    maximum: int | None = None
    values: tuple[str, ...] = ()


def _bool(default: int) -> Option:
    return Option("bool", default)


_LEVEL = Option("level", "nolog")
_VM = {
    "enable": _bool(0),
    "macfilter": _bool(1),
    "dhcp": _bool(1),
    "ndp": _bool(1),
    "radv": _bool(0),
    "ipfilter": _bool(0),
    "policy_in": Option("enum", "DROP", values=POLICIES),
    "policy_out": Option("enum", "ACCEPT", values=POLICIES),
    "log_level_in": _LEVEL,
    "log_level_out": _LEVEL,
}
#: Each scope's table (``$cluster_option_properties``, ``$host_option_properties``,
#: ``$vm_option_properties``).
TABLES: dict[str, dict[str, Option]] = {
    "cluster": {
        "enable": Option("enable", 0, minimum=0),
        "ebtables": _bool(1),
        "policy_in": Option("enum", "DROP", values=POLICIES),
        "policy_out": Option("enum", "ACCEPT", values=POLICIES),
        "policy_forward": Option("enum", "ACCEPT", values=("ACCEPT", "DROP")),
        "log_ratelimit": Option("ratelimit", "enable=1,rate=1/second,burst=5"),
    },
    "node": {
        "enable": _bool(1),
        "log_level_in": _LEVEL,
        "log_level_out": _LEVEL,
        "log_level_forward": _LEVEL,
        "tcp_flags_log_level": _LEVEL,
        "smurf_log_level": _LEVEL,
        "nosmurfs": _bool(1),
        "tcpflags": _bool(0),
        "nf_conntrack_max": Option("int", 262144, minimum=32768),
        "nf_conntrack_tcp_timeout_established": Option("int", 432000, minimum=7875),
        "nf_conntrack_tcp_timeout_syn_recv": Option("int", 60, minimum=30, maximum=60),
        "ndp": _bool(1),
        "nf_conntrack_allow_invalid": _bool(0),
        "nf_conntrack_helpers": Option("helpers", ""),
        "protection_synflood": _bool(0),
        "protection_synflood_rate": Option("int", 200),
        "protection_synflood_burst": Option("int", 1000),
        "log_nf_conntrack": _bool(0),
        "nftables": _bool(0),
    },
    "vm": _VM,
    "ct": _VM,
}


def _ratelimit(value: str) -> str:
    parts: dict[str, str] = {}
    for index, part in enumerate(value.split(",")):
        key, eq, item = part.partition("=")
        if not eq and index == 0:
            key, item = "enable", key
        if key not in ("enable", "rate", "burst") or key in parts:
            raise ValueError(f"{value!r}: expected enable=<0|1>,rate=<n>/<unit>,burst=<n>")
        parts[key] = item.strip()
    enable = flag(parts.get("enable", "1"))
    rate = parts.get("rate", "1/second")
    if not _RATE.match(rate):
        raise ValueError(f"rate {rate!r} does not match [1-9][0-9]*/(second|minute|hour|day)")
    burst = parts.get("burst", "5")
    if not burst.isdigit():
        raise ValueError(f"burst {burst!r} must be an integer of 0 or more")
    return f"enable={enable},rate={rate},burst={int(burst)}"


def canonical(option: Option, value: object, live: bool = False) -> object:
    """``value`` in the spelling this family compares (None: PVE's default). ``live``: the value PVE
    answered (the cluster's enable may then be a time stamp). Raises ValueError naming the rule."""
    if value is None or value == "":
        return None
    if option.kind in ("bool", "enable"):
        if option.kind == "enable" and not isinstance(value, bool) and re.fullmatch(r"[0-9]+", str(value)):
            number = int(str(value))
            if number > 1 and not live:
                raise ValueError(
                    "a value above 1 is stored as a time stamp that PVE reads as 0 a minute later "
                    "(pve-firewall parse_clusterfw_option): declare 1"
                )
            found: object = min(number, 1)
        else:
            found = int(flag(value))
    elif option.kind == "int":
        if isinstance(value, bool) or not re.fullmatch(r"[0-9]+", str(value).strip()):
            raise ValueError(f"{value!r} is not an integer")
        found = int(str(value).strip())
        if option.minimum is not None and found < option.minimum:
            raise ValueError(f"value must have a minimum value of {option.minimum}")
        if option.maximum is not None and found > option.maximum:
            raise ValueError(f"value must have a maximum value of {option.maximum}")
    elif option.kind == "enum":
        found = str(value).strip().upper()
        if found not in option.values:
            raise ValueError(f"value {value!r} is not one of {', '.join(option.values)}")
    elif option.kind == "level":
        found = str(value).strip().lower()
        if found not in LOG_LEVELS:
            raise ValueError(f"value {value!r} is not one of {', '.join(LOG_LEVELS)}")
    elif option.kind == "helpers":
        names = sorted({part.strip().lower() for part in str(value).split(",") if part.strip()})
        unknown = [name for name in names if name not in HELPERS]
        if unknown:
            raise ValueError(
                f"unknown conntrack helper(s) {', '.join(unknown)} (PVE takes {', '.join(HELPERS)})"
            )
        found = ",".join(names)
    else:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a property string")
        found = _ratelimit(value.strip())
    return None if found == option.default else found


def wire(option: Option, value: object) -> str:
    """A canonical value as the ``PUT`` sends it."""
    return str(value)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """The options of one scope (``name``). Raises DeclarationError."""
    if extra:
        raise DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}")
    where = scopes.parse(name)
    return Declared(state_id, target, identity=str(where), label=f"firewall options of {where.label}",
                    names={"name": str(where)})  # fmt: skip


def declare(
    state_id: str,
    target: str,
    name: object = None,
    adopt: object = False,
    allow_lockout: object = False,
    **options: object,
) -> Declared:
    """A checked declaration: ``name`` (the scope), the scope's options (each its canonical value,
    None for PVE's default), ``adopt``, ``allow_lockout``. Raises DeclarationError naming each key and
    rule (a key of another scope: ``property is not defined in schema``)."""
    problems: list[str] = []
    try:
        probe = identify(state_id, target, name=name)
    except DeclarationError as exc:
        raise DeclarationError(exc.problems) from None
    table = TABLES[scopes.parse(name).kind]
    values: dict[str, object] = {}
    for key in sorted(options):
        option = table.get(key)
        if option is None:
            problems.append(
                f"{key}: property is not defined in schema: the {probe.names['name']} firewall takes "
                f"{', '.join(sorted(table))}"
            )
            continue
        try:
            values[key] = canonical(option, options[key])
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
    if not options:
        problems.append(
            f"declare at least one option of the {probe.names['name']} firewall ({', '.join(table)})"
        )
    for switch, value in (("adopt", adopt), ("allow_lockout", allow_lockout)):
        problem = boolean_problem(switch, value)
        if problem:
            problems.append(problem)
    if problems:
        raise DeclarationError(problems)
    decl = probe.declaring(values, adopt)
    # Kept with the names (so the ownership row keeps it for a later destroy), only when true.
    return replace(decl, names={**decl.names, **({"allow_lockout": True} if allow_lockout else {})})


def parse(data: object, decl: Declared) -> dict | None:
    """``GET …/options`` → ``{key: canonical}`` for the declared keys, or None when none of them is set
    and the declaration has something to write (see the module text; a declaration of PVE's defaults
    alone on a scope that sets none of them matches it as it is). Raises ValueError for another shape or
    a value PVE would not hold."""
    if not isinstance(data, Mapping):
        raise ValueError("expected the options object")
    table = TABLES[scopes.parse(decl.names["name"]).kind]
    if not decl.values:
        # A scope alone (an absent state without a recorded declaration): what it sets is live and
        # nobody's until adopted; a scope setting nothing holds nothing to remove.
        live = set_options(table, data, lambda why: ValueError(why))
        return live or None
    unset = not any(data.get(key) not in (None, "") for key in decl.values)
    if unset and any(want is not None for want in decl.values.values()):
        return None
    live = {}
    for key in decl.values:
        try:
            live[key] = canonical(table[key], data.get(key), live=True)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return live


def _changes(decl: Declared, live: Mapping[str, object]) -> tuple[dict[str, str], list[str]]:
    table = TABLES[scopes.parse(decl.names["name"]).kind]
    form, cleared = {}, []
    for key, want in decl.values.items():
        if live.get(key) == want:
            continue
        if want is None:
            cleared.append(key)
        else:
            form[key] = wire(table[key], want)
    return form, cleared


def _put(base: str, decl: Declared, live: Mapping[str, object]) -> Call | None:
    form, cleared = _changes(decl, live)
    if cleared:
        form["delete"] = ",".join(cleared)
    return Call("PUT", f"{base}/options", form=form) if form else None


def _bound(ctx: PveContext, decl: Declared) -> ObjectSpec:
    base = scopes.base(ctx, scopes.parse(decl.names["name"])).path
    return replace(
        SPEC,
        read=lambda d: Call("GET", f"{base}/options"),
        create=lambda d: _put(base, d, {}) or Call("PUT", f"{base}/options", form={}),
        update=lambda d, live: _put(base, d, live),
        delete=lambda d, live: Call("PUT", f"{base}/options", form={"delete": ",".join(sorted(d.values))}),
    )


def digest_guard(ctx: PveContext, credential: Credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The write guard: ``{digest}`` of the scope's options, read now and checked to show them as judged
    (``live``; ``{}`` before the first write: none of the declared keys set). Raises PveMalformed for
    options without a digest, Refused when they changed between the two reads."""
    base = scopes.base(ctx, scopes.parse(decl.names["name"])).path
    data = ctx.client.request("GET", f"{base}/options", credential)
    digest = data.get("digest") if isinstance(data, Mapping) else None
    if not isinstance(digest, str) or not digest:
        raise PveMalformed("GET", f"{base}/options", "the options carry no digest")
    try:
        now = parse(data, decl)
    except ValueError as exc:
        raise PveMalformed("GET", f"{base}/options", str(exc)) from None
    if (now or {}) != dict(live):
        raise Refused(f"{decl.label} changed between two reads; nothing was written. Run again.")
    return {"digest": digest}


def dropping(decl: Declared, live: Mapping[str, object] | None) -> dict[str, object]:
    """The declared changes that can cut traffic: the firewall enabled, or a policy set to DROP or
    REJECT (``{key: new value}``, effective values); ``{}`` when none."""
    table = TABLES[scopes.parse(decl.names["name"]).kind]
    cut: dict[str, object] = {}
    for key, want in decl.values.items():
        before = (live or {}).get(key)
        if want == before:
            continue
        effective = table[key].default if want is None else want
        if key == "enable" and effective == 1:
            cut[key] = 1
        elif key in ("policy_in", "policy_out") and effective in ("DROP", "REJECT"):
            cut[key] = effective
    return cut


def lockout_refusals(ctx: PveContext, decl: Declared, live: Mapping[str, object] | None) -> list[str]:
    """The one call site of the no-lockout check for options: the dropping changes (``dropping``) of
    ``decl`` judged by ``firewall.guard.options_lockout`` unless the declaration says
    ``allow_lockout: true``. Raises what its reads raise."""
    cut = dropping(decl, live)
    if not cut or decl.names.get("allow_lockout"):
        return []
    from salt_proxmox.firewall import guard  # rules → … → options: imported when judged

    return guard.options_lockout(ctx, decl.names["name"], cut)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """What the plan refuses of a write of options: a change that would lock this minion out
    (``lockout_refusals``). Raises what the check raises."""
    if action == "delete":
        return []
    return lockout_refusals(ctx, decl, live)


def export_scope(row: Mapping[str, object]) -> Mapping[str, object] | None:
    """``proxmox.export``: the options scope a ``GET /cluster/status`` row (``cluster``, ``node/<name>``)
    or a guest index row (``vm/<vmid>``, ``ct/<vmid>``: ``scope.guest_scope``) names, None for another
    row."""
    if row.get("type") == "cluster":
        return {"name": "cluster"}
    if row.get("type") == "node" and isinstance(row.get("name"), str):
        return {"name": f"node/{row['name']}"}
    guest = scopes.guest_scope(row)
    return None if guest is None else {"name": guest}


def export_read(ctx: PveContext, probe: Declared) -> dict | None:
    """``proxmox.export``: every option the scope sets, canonical (PVE's defaults left out, as a
    declaration never needs them). Raises PveError, PveMalformed for a value PVE would not hold."""
    call = _bound(ctx, probe).read(probe)
    data = ctx.client.request("GET", call.path, ctx.broker.read(), params=call.params)
    if not isinstance(data, Mapping):
        raise PveMalformed("GET", call.path, "expected the options object")
    table = TABLES[scopes.parse(probe.names["name"]).kind]
    # A scope that sets none holds nothing to declare (PVE's defaults are nobody's).
    return set_options(table, data, lambda why: PveMalformed("GET", call.path, why)) or None


def set_options(table: Mapping[str, object], data: Mapping[str, object], error) -> dict:
    """Every option of ``table`` that ``data`` (``GET …/options``) sets, canonical. Raises ``error(why)``
    for a value PVE would not hold."""
    live = {}
    for key, value in data.items():
        if key in table and value not in (None, ""):
            try:
                live[key] = canonical(table[key], value, live=True)
            except ValueError as exc:
                raise error(f"{key}: {exc}") from None
    return live


def _rule(key: str) -> Rule | None:
    """A key some scope's table has (``declare`` checked the value against that scope's own)."""
    return Rule() if any(key in table for table in TABLES.values()) else None


SPEC = ObjectSpec(
    family=FAMILY,
    noun="firewall options",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", "cluster/firewall/options"),
    absence="none of the declared options set (GET …/firewall/options; PVE's defaults are nobody's)",
    is_absent=lambda error, decl: False,
    parse=parse,
    confirm_absent=lambda ctx, credential, decl: None,  # the options object is the scope's whole record
    create=lambda decl: Call("PUT", "cluster/firewall/options", form={}),
    create_endpoint=Endpoint("PUT …/firewall/options", (), _rule),
    update=lambda decl, live: None,
    update_endpoint=Endpoint("PUT …/firewall/options", (), _rule),
    delete=lambda decl, live: Call("PUT", "cluster/firewall/options"),
    write_guard=digest_guard,
    refusals=refusals,
    for_cluster=_bound,
    create_on_cluster=True,
    create_guard=True,
    # A guest's options, planned in the run that creates the guest: PVE's defaults, nothing set.
    unborn=lambda ctx, decl: scopes.unborn(ctx, scopes.parse(decl.names["name"])),
    # A clone's: read at its template's, which PVE copies to it (qemu-server clone_vm: clone_vmfw_conf).
    copied=lambda ctx, decl: scopes.copied(ctx, scopes.parse(decl.names["name"])),
    # The cluster's and each node's options, named by GET /cluster/status (its ``cluster`` row and one
    # ``node`` row per member), and each guest's, named by the guest index.
    export_names=export_scope,
    export_read=lambda ctx, probe: export_read(ctx, probe),
    export_listings=lambda ctx: [
        (Call("GET", "cluster/status"), {}),
        (Call("GET", "cluster/resources", params={"type": "vm"}), {}),
    ],
)
