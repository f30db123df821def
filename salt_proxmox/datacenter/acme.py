"""ACME challenge plugins (``proxmox_acme.plugin``): one section of ``priv/acme/plugins.cfg``, by id.

Source: pve-manager ``PVE/API2/ACMEPlugin.pm`` (``index``, ``get_plugin_config``, ``add_plugin``,
``update_plugin``, ``delete_plugin``, ``load_config``) over proxmox-acme ``PVE/ACME/Challenge.pm``
(``parse_config``, the common ``disable`` and ``nodes``), ``DNSChallenge.pm`` (``api``, ``data``,
``validation-delay``: ``properties``/``options``) and ``StandAlone.pm``; pve-common ``SectionConfig.pm``
(``check_config`` decodes a value with ``decode_value``, ``write_config`` encodes it; ``parse_config``
does not decode).

- Every method, the reads too, needs Sys.Modify on ``/`` (``permissions``): the read credential must hold
  it to see a plugin at all, since the section holds the DNS API's credentials.
- Read ``GET /cluster/acme/plugins/{id}``: the section, ``plugin`` (the id) and the file's ``digest``,
  ``data`` included. Absence is exactly HTTP 500 ``ACME plugin '<id>' not defined``
  (``$modify_cfg_for_api``). An update carries the digest (``assert_if_modified``).
- ``data`` (the DNS API's settings, one ``KEY=value`` a line) is a secret from pillar: sent base64url
  encoded (pvenode ``param_mapping``: ``encode_value``, "base64url encode for storage"; ``check_config``
  decodes it), at create and when ``secret_serial`` changes; PVE's answer holds it, but it is never
  compared, shown, stored or exported: a change of it is said by bumping the serial.
- ``type`` (``dns``, ``standalone``) is identity: ``update_plugin`` takes none (it looks the plugin up
  from the stored section), so another type is refused naming a new id as the remedy.
- ``api`` must be one of PVE's DNS APIs (``GET /cluster/acme/challenge-schema``, ``DNSChallenge.pm``
  ``get_supported_plugins``), refused at plan otherwise; a dns plugin requires it (``options``: ``api =>
  {}``).
- ``validation-delay`` defaults to 30 (0..172800, ``DNSChallenge.pm`` ``properties``; ``setup``: ``// 30``),
  ``disable`` to 0, ``nodes`` to every node; a declared default is written as ``delete=``; ``nodes`` is a
  set.
- The ``standalone`` plugin is built in: ``parse_config`` adds it whenever the file lacks it, so deleting
  it does not stick and a dns plugin of that id would be replaced; it is never deleted, never another type.
- A plugin a node's certificate configuration names (``acmedomainN: <domain>,plugin=<id>`` in ``GET
  /nodes/{node}/config``, pve-manager ``PVE/NodeConfig.pm`` ``get_acme_conf``: ``plugin '<id>' for domain
  '<domain>' not found!``) is never deleted: ``delete_plugin`` checks nothing, and the node's next order
  would fail.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.datacenter.metrics import CONFIGID
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.ha.common import NODES, digest_guard
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.listing import node_names
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.fields import secret_serial as secret_serial_value
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    exact_message,
    export_by,
    identify_by_name,
)
from salt_proxmox.wire.propstring import pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "acme_plugin"
#: The plugin pillar entries' secrets, as declared (``run.config.pillar_secrets``).
SECRETS = ("data",)
#: The built-in plugin (``Challenge.pm`` ``parse_config``: "standalone plugin definition as fallback").
BUILT_IN = "standalone"
#: ``NodeConfig.pm`` ``$MAXDOMAINS``: ``acmedomain0`` .. ``acmedomain5``.
MAXDOMAINS = 5

FIELDS: dict[str, Field] = {
    "api": Field(),
    "validation-delay": Field("integer", minimum=0, maximum=2 * 24 * 60 * 60),
    "disable": Field("flag"),
    "nodes": NODES,
}
#: Each type's options (``DNSChallenge.pm``/``StandAlone.pm`` ``options``, the secret included), its
#: required ones, and the value PVE uses for an option the section does not hold.
OPTIONS = {"dns": {"api", "data", "validation-delay", "disable", "nodes"}, "standalone": {"disable", "nodes"}}
REQUIRED = {"dns": ("api",), "standalone": ()}
DEFAULTS = {"validation-delay": 30, "disable": 0, "nodes": ""}


def _rule(key: str) -> Rule | None:
    if key == "type":
        return Rule("enum", choices=tuple(OPTIONS))
    if key in ("data", "id"):
        return Rule()
    found = FIELDS.get(key)
    return found.rule() if found is not None else None


CREATE = Endpoint("POST /cluster/acme/plugins", ("id", "type"), _rule)
UPDATE = Endpoint("PUT /cluster/acme/plugins/{id}", (), _rule)


def _id_problem(name: str) -> str | None:
    return None if CONFIGID.match(name) else f"invalid configuration ID '{name}' (pve-configid)"


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """An ACME plugin by its id (``name``). Raises DeclarationError for an unknown key or a bad id."""
    found = identify_by_name(
        state_id, target, name, extra, noun="ACME plugin", has="name, type and its options", check=_id_problem
    )
    return Declared(state_id, target, identity=found.identity, label=f"ACME plugin {name}", names=found.names)


def _data_lines(value: object) -> tuple[str | None, str | None]:
    """``(the KEY=value lines, None)`` of a declared ``data`` (text, or a mapping of KEY: value), or
    ``(None, the reason)``; the reason never holds the value."""
    if isinstance(value, Mapping):
        if not value or not all(isinstance(k, str) and k and "=" not in k for k in value):
            return None, "data: expected a mapping of the DNS API's settings (KEY: value), never shown"
        lines = [f"{key}={value[key]}" for key in value]
    elif isinstance(value, str) and value.strip():
        lines = [line for line in value.splitlines() if line.strip()]
    else:
        return None, "data: expected the DNS API's settings (KEY=value lines or a mapping), never shown"
    if not all("=" in line and line.partition("=")[0].strip() for line in lines):
        return None, "data: each line must be KEY=value (proxmox-acme reads the plugin's settings so)"
    return "\n".join(lines) + "\n", None


def declare(
    state_id: str,
    target: str,
    name: object = None,
    type: object = "dns",
    adopt: object = False,
    secret_serial: object = None,
    **options: object,
) -> Declared:
    """A checked ACME plugin declaration: ``name`` (the id), ``type`` (``dns``, the default, or
    ``standalone``), ``api`` (a DNS API of PVE's challenge schema), ``validation-delay``, ``nodes``
    (a set of node names), ``disable``, ``data`` (the DNS API's settings from pillar, kept in
    ``Declared.secrets``), ``secret_serial`` (data is written again when it changes), ``adopt``. A cleared
    option is PVE's default. Raises DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name)
    if type not in OPTIONS:
        raise DeclarationError(f"type: {shown(type)} is not an ACME plugin type (dns, standalone)")
    if name == BUILT_IN and type != "standalone":
        raise DeclarationError(
            f"name: {BUILT_IN} is PVE's built-in standalone plugin (proxmox-acme Challenge.pm "
            "parse_config puts it back as a standalone one whenever the file holds another), so it is "
            "never a dns plugin"
        )
    problems, secrets, values = [], {}, {"type": type}
    for key, value in options.items():
        if key not in FIELDS and key not in SECRETS:
            problems.append(f"{key}: not an ACME plugin option (unknown key)")
        elif key not in OPTIONS[type]:
            problems.append(
                f"{key}: not an option of a {type} ACME plugin (PVE: `unexpected property '{key}'`)"
            )
        elif key == "data":
            lines, problem = _data_lines(value)
            if problem:
                problems.append(problem)
            else:
                secrets["data"] = base64.urlsafe_b64encode(lines.encode()).decode()
        elif value is None or value == "":
            if key in REQUIRED[type]:
                problems.append(
                    f"{key}: a {type} plugin requires it (PVE: `unable to delete required option`)"
                )
            else:
                values[key] = DEFAULTS[key]
        else:
            try:
                values[key] = FIELDS[key].canonical(value)
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
    missing = [key for key in REQUIRED[type] if key not in options]
    problems += [f"{key}: a {type} ACME plugin requires it (DNSChallenge.pm options)" for key in missing]
    if secret_serial is not None:
        number, problem = secret_serial_value(secret_serial, secrets, "data")
        if problem:
            problems.append(problem)
        else:
            values["secret_serial"] = number
    if problems:
        raise DeclarationError(problems)
    found = probe.declaring(values, adopt)
    return Declared(**{**found.__dict__, "secrets": secrets})


def parse(data: object, decl: Declared) -> dict:
    """``GET /cluster/acme/plugins/{id}`` → ``type``, ``digest`` and every option of its type but ``data``
    (never compared), one PVE does not hold as its default. Raises ValueError for another shape."""
    if not isinstance(data, Mapping) or data.get("type") not in OPTIONS:
        raise ValueError("expected the ACME plugin's options with its type (dns or standalone)")
    kind = str(data["type"])
    found: dict[str, object] = {"type": kind}
    for key in sorted(OPTIONS[kind] - set(SECRETS)):
        raw = data.get(key)
        try:
            found[key] = DEFAULTS.get(key, "") if raw is None or raw == "" else FIELDS[key].canonical(raw)
        except ValueError:
            found[key] = str(raw)
    if isinstance(data.get("digest"), str):
        found["digest"] = data["digest"]
    return found


def _path(decl: Declared) -> str:
    return api_path("cluster", "acme", "plugins", decl.names["name"])


def _plain(decl: Declared) -> dict:
    return {k: v for k, v in decl.values.items() if k not in ("type", "secret_serial")}


def create(decl: Declared) -> Call:
    """``POST /cluster/acme/plugins``: id, type, each declared option other than PVE's default, ``data``."""
    form = {"id": decl.names["name"], "type": str(decl.values["type"])}
    form.update({k: FIELDS[k].wire(v) for k, v in _plain(decl).items() if v != DEFAULTS.get(k)})
    form.update(decl.secrets)
    return Call("POST", "cluster/acme/plugins", form=form)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /cluster/acme/plugins/{id}``: each declared option that differs (``delete`` for one going
    back to PVE's default), ``data`` when ``secret_serial`` differs from the recorded one. None when
    nothing differs."""
    changed = {k: v for k, v in _plain(decl).items() if live.get(k) != v}
    due = "secret_serial" in decl.values and live.get("secret_serial") != decl.values["secret_serial"]
    if not changed and not due:
        return None
    form = {k: FIELDS[k].wire(v) for k, v in changed.items() if v != DEFAULTS.get(k)}
    gone = sorted(k for k, v in changed.items() if v == DEFAULTS.get(k))
    if gone:
        form["delete"] = ",".join(gone)
    if due:
        form.update(decl.secrets)
    return Call("PUT", _path(decl), form=form)


def _dns_apis(ctx: PveContext) -> set[str]:
    """The DNS APIs this cluster's proxmox-acme has (``GET /cluster/acme/challenge-schema``, any user)."""
    key = f"salt_proxmox.acme-apis/{ctx.target.name}"
    if key not in ctx.memo:
        rows = ctx.client.request("GET", "cluster/acme/challenge-schema", ctx.broker.read())
        ctx.memo[key] = {
            row.get("id") for row in rows if isinstance(row, Mapping) and row.get("type") == "dns"
        } if isinstance(rows, list) else set()  # fmt: skip
    return ctx.memo[key]


def users(ctx: PveContext, plugin: str) -> list[str]:
    """``node: acmedomainN`` for each node's certificate domain naming ``plugin`` (``GET /nodes`` then
    ``GET /nodes/{node}/config``, Sys.Audit on ``/``: pve-manager ``API2/NodeConfig.pm`` ``get_config``;
    ``NodeConfig.pm`` ``acmedomainN``:
    ``plugin`` defaults to standalone, and the ``acme`` key's ``domains`` are always standalone's).
    Raises what the reads raise."""
    credential = ctx.broker.read()
    found = []
    for node in node_names(ctx.client, credential):
        config = ctx.client.request("GET", api_path("nodes", node, "config"), credential)
        config = config if isinstance(config, Mapping) else {}
        for index in range(MAXDOMAINS + 1):
            raw = config.get(f"acmedomain{index}")
            if isinstance(raw, str):
                try:
                    parsed = dict(pairs(raw, default_key="domain"))
                except ValueError:
                    parsed = {}
                if (parsed.get("plugin") or BUILT_IN) == plugin:
                    found.append(f"{node}: acmedomain{index} ({parsed.get('domain')})")
        if plugin == BUILT_IN and isinstance(config.get("acme"), str) and "domains=" in config["acme"]:
            found.append(f"{node}: acme (domains)")
    return found


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """The built-in plugin's or a used plugin's delete; another type than the live one; an ``api`` this
    cluster's proxmox-acme lacks."""
    if action == "delete":
        if decl.names["name"] == BUILT_IN:
            return [
                f"{decl.label} is PVE's built-in standalone plugin: proxmox-acme Challenge.pm parse_config "
                "puts it back whenever plugins.cfg lacks it, so it is never deleted. Declare it absent with "
                "removal: retain."
            ]
        named = users(ctx, decl.names["name"])
        if named:
            return [
                f"{decl.label} is named by the certificate configuration of {'; '.join(named)} (pve-manager "
                "NodeConfig.pm get_acme_conf: `plugin '<id>' for domain '<domain>' not found!` at the next "
                "order). Point those domains at another plugin (pvenode config set --acmedomainN) first."
            ]
        return []
    problems = []
    kind = decl.values["type"]
    if live is not None and live.get("type") != kind:
        problems.append(
            f"{decl.label} is a {live.get('type')} plugin, and PVE cannot change its type (PUT "
            "/cluster/acme/plugins/{id} takes no type: ACMEPlugin.pm update_plugin looks the plugin up from "
            f"the stored section). Declare the {kind} plugin under a new id (and this one absent)."
        )
    api = decl.values.get("api")
    if kind == "dns" and isinstance(api, str):
        apis = _dns_apis(ctx)
        if api not in apis:
            problems.append(
                f"api: {api} is not a DNS API of this cluster's proxmox-acme (GET "
                f"/cluster/acme/challenge-schema lists {len(apis)}; DNSChallenge.pm get_supported_plugins), "
                "so PVE refuses it (api: value "
                "not in the enumeration). Declare one it lists."
            )
    return problems


def export_values(live: Mapping[str, object], probe: Declared) -> dict:
    """``proxmox.export``: a live plugin's type and each option other than PVE's default; never ``data``."""
    return {k: v for k, v in live.items() if k == "type" or (k in FIELDS and v != DEFAULTS.get(k, ""))}


SPEC = ObjectSpec(
    family=FAMILY,
    noun="ACME plugin",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence=(
        "HTTP 500 \"ACME plugin '<id>' not defined\" (pve-manager API2/ACMEPlugin.pm $modify_cfg_for_api)"
    ),
    is_absent=exact_message(500, "ACME plugin '{name}' not defined"),
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    write_guard=digest_guard,
    refusals=refusals,
    recorded=("secret_serial",),
    # GET /cluster/acme/plugins (ACMEPlugin.pm index) names each plugin by ``plugin``.
    export_names=export_by("plugin"),
    export_listings=lambda ctx: [(Call("GET", "cluster/acme/plugins"), {})],
    export_values=export_values,
    export_secrets=lambda live: {"data"} if live.get("type") == "dns" else set(),
    live_only=("digest",),
    # Every ACMEPlugin.pm method asks Sys.Modify on /: read with the provision credential, so the read
    # token never needs a write privilege.
    reads_with="provision",
)
