"""A node's DNS settings (``proxmox_node.dns``): ``/etc/resolv.conf``'s search domain and name servers.

Source: pve-manager ``PVE/API2/Nodes.pm`` ``dns`` (GET, Sys.Audit on ``/nodes/{node}``) and ``update_dns``
(PUT, Sys.Modify on ``/nodes/{node}``) over pve-common ``src/PVE/INotify.pm`` ``read_etc_resolv_conf`` and
``update_etc_resolv_conf``.

- Read: ``search`` from the first ``search``/``domain`` line (its first word only: ``(\\S+)``), and
  ``dns1``..``dns3`` from the first three ``nameserver`` lines in file order. Only the declared keys are
  compared; a key PVE does not answer is unset (None).
- Write: ``update_dns`` requires ``search`` (not ``optional`` in its parameters), and
  ``update_etc_resolv_conf`` rewrites every ``search``/``domain``/``nameserver`` line from the PUT alone
  (other lines kept): a name server the PUT leaves out is gone. So each PUT carries ``search`` and every
  name server that stays, declared or not; a declared None or ``''`` clears that one (PVE's way: left out
  of the PUT). An undeclared ``search`` is sent as the node holds it; a node holding none needs one
  declared.
- Refused at plan, as they would not read back as written: a ``search`` with white space (only its first
  word is read); a name server equal to another (``update_etc_resolv_conf`` writes each once) or
  ``0.0.0.0`` (never written); a gap (``dns3`` with ``dns2`` unset reads back as ``dns2``: servers are
  numbered in file order). ``dnsN`` is ``format => 'ip'`` (IPv4 or IPv6), compared as an address.
- No digest in any answer: each write is preceded by a fresh read compared with the one judged
  (``simple.spec.reread_guard``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.node import common
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple.spec import Call, Declared, fingerprint, reread_guard

FAMILY = "node_dns"
SERVERS = ("dns1", "dns2", "dns3")
KEYS = ("search", *SERVERS)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """The DNS settings of node ``name``. Raises DeclarationError."""
    return common.identify_node(
        state_id, target, name, extra, what="DNS settings", has="search, dns1, dns2, dns3"
    )


def _address(key: str, value: object) -> str:
    """``dnsN`` canonical (``ipaddress``'s spelling). Raises ValueError naming PVE's rule."""
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected an IP address as text, got {shown(value)}")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{key}: {value!r} is not an IP address (Nodes.pm update_dns format ip)") from None


def declare(
    state_id: str, target: str, name: object = None, adopt: object = False, **options: object
) -> Declared:
    """A checked declaration: ``search`` (one domain, no white space), ``dns1``..``dns3`` (IP addresses;
    None or ``''`` clears one), ``adopt``. Raises DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name, **{k: v for k, v in options.items() if k not in KEYS})
    problems, values = [], {}
    for key in KEYS:
        if key not in options:
            continue
        value = options[key]
        if key == "search":
            if not isinstance(value, str) or not value or any(c.isspace() for c in value):
                problems.append(
                    f"search: expected one domain without white space, got {shown(value)} (Nodes.pm "
                    "update_dns requires search; INotify.pm read_etc_resolv_conf reads its first word only)"
                )
            else:
                values[key] = value
        elif value is None or value == "":
            values[key] = None
        else:
            try:
                values[key] = _address(key, value)
            except ValueError as exc:
                problems.append(str(exc))
    servers = [values.get(key) for key in SERVERS if values.get(key)]
    if "0.0.0.0" in servers:  # noqa: S104 - an address compared, nothing bound
        problems.append("dnsN: 0.0.0.0 is never written (INotify.pm update_etc_resolv_conf skips it)")
    if len(set(servers)) < len(servers):
        problems.append(
            "dnsN: a name server declared twice is written once (INotify.pm update_etc_resolv_conf), so the "
            "later one would read back unset"
        )
    if not values:
        problems.append("declare at least one of search, dns1, dns2, dns3")
    problem = boolean_problem("adopt", adopt)
    if problem:
        problems.append(problem)
    if problems:
        raise DeclarationError(problems)
    return probe.declaring(values, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET /nodes/{node}/dns`` → ``search`` and ``dns1``..``dns3`` (None when unset, servers canonical)
    and ``fingerprint``. Raises ValueError for another shape."""
    if not isinstance(data, Mapping):
        raise ValueError("expected the node's DNS settings object")
    live: dict[str, object] = {"search": data.get("search") or None}
    for key in SERVERS:
        raw = data.get(key)
        live[key] = _address(key, raw) if raw not in (None, "") else None
    live["fingerprint"] = fingerprint(data)
    return live


def merged(decl: Declared, live: Mapping[str, object]) -> dict[str, object]:
    """What the node holds after the write: each declared key, each other as the node holds it."""
    return {key: decl.values[key] if key in decl.values else live.get(key) for key in KEYS}


def _path(decl: Declared) -> str:
    return api_path("nodes", decl.names["name"], "dns")


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /nodes/{node}/dns``: ``search`` and every name server that stays (``merged``); None when
    every declared key is as the node holds it."""
    if all(live.get(key) == want for key, want in decl.values.items()):
        return None
    form = {key: str(value) for key, value in merged(decl, live).items() if value}
    return Call("PUT", _path(decl), form=form)


def refusals(ctx, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A write the node would not read back as declared: no ``search`` to send, a name server equal to
    one the node keeps, a gap in ``dns1``..``dns3`` (``read_etc_resolv_conf`` numbers them in file
    order)."""
    if action == "delete" or live is None:
        return []
    after, out = merged(decl, live), []
    if not after["search"]:
        out.append(
            f"search: node {decl.names['name']} holds none and PVE's PUT requires one (Nodes.pm update_dns): "
            "declare search"
        )
    servers = [after[key] for key in SERVERS]
    kept = [server for server in servers if server]
    if len(set(kept)) < len(kept):
        out.append(
            "dnsN: a declared name server is one the node keeps under another dnsN, and PVE writes each once "
            "(INotify.pm update_etc_resolv_conf): declare all three"
        )
    for number, key in enumerate(SERVERS[1:], start=1):
        if after[key] and not all(servers[:number]):
            out.append(
                f"{key}: with {SERVERS[number - 1]} unset it would read back as a lower dnsN (INotify.pm "
                "read_etc_resolv_conf numbers name servers in file order): declare them without a gap"
            )
            break
    return out


def _rule(key: str) -> Rule | None:
    return Rule() if key in KEYS else None


ENDPOINT = Endpoint("PUT /nodes/{node}/dns", ("search",), _rule)

SPEC = common.setting_spec(
    "DNS settings",
    "never: a node always has DNS settings (pve-manager PVE/API2/Nodes.pm dns)",
    family=FAMILY,
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    parse=parse,
    create=lambda decl: update(decl, {}) or Call("PUT", _path(decl), form={}),
    create_endpoint=ENDPOINT,
    update=update,
    update_endpoint=ENDPOINT,
    write_guard=reread_guard(_path, "GET /nodes/{node}/dns shows no digest"),
    refusals=refusals,
    export_values=lambda live, probe: {k: v for k, v in live.items() if k in KEYS and v is not None},
    live_only=("fingerprint",),
)
