"""External metric servers (``proxmox_metric_server``): one ``status.cfg`` section, cluster-wide, by id.

Source: pve-manager 9.2.11 ``PVE/API2/Cluster/MetricServer.pm`` (``server_index``, ``read``, ``create``,
``update``, ``delete``) over ``PVE/Status/Plugin.pm`` (the common properties), ``Graphite.pm``,
``InfluxDB.pm`` and ``OpenTelemetry.pm`` (each type's ``properties`` and ``options``: what it takes,
what it requires), and pve-common ``SectionConfig.pm`` (``check_config``, ``createSchema``,
``updateSchema``). ``stable-8`` has the same graphite and influxdb tables; ``OpenTelemetry.pm`` came with
pve-manager 9.0.0 ("external metric server: add support for OpenTelemetry").

- Read ``GET /cluster/metrics/server/{id}`` (Sys.Audit on ``/``): the section's options and ``type``,
  never the InfluxDB ``token`` (``extract_sensitive_params``: ``on_add_hook`` keeps it in
  ``priv/metricserver/<id>.pw``) and no digest. Absence is exactly HTTP 500 ``status server entry '<id>'
  does not exist``.
- Create ``POST /cluster/metrics/server/{id}``; update ``PUT`` with the options that differ and
  ``delete`` for those going back to PVE's default; delete ``DELETE``. All need Sys.Modify on ``/``.
  ``server`` and ``port`` are in no type's ``optional`` list of ``Plugin.pm``'s ``propertyList``, so both
  schemas require them (``createSchema``/``updateSchema`` copy a non-optional property as it is): every
  POST and PUT carries them, and a declaration without ``port`` gets the type's default port (graphite
  2003, ``Graphite.pm`` ``_connect``; OpenTelemetry 4318 over https, 4317 over http, ``_get_otlp_url``).
  influxdb requires its port (``options``: ``port => {}``).
- PVE's defaults are no drift: an option PVE does not hold is compared as the value PVE uses for it
  (``DEFAULTS``, read from each plugin's ``properties`` defaults and the ``// <value>`` its code falls
  back on), and a declared value equal to it is written as ``delete=<key>``.
- ``type`` is identity: ``update`` takes no ``type`` (``updateSchema`` leaves it out and looks the plugin up
  from the stored section), so another type is refused at plan naming a new id as the remedy.
- An option of another type is refused by name (``check_value``: ``unexpected property '<key>'``);
  ``opentelemetry`` on a cluster older than PVE 9 is refused at plan (``GET /version``).
- ``otel-headers`` and ``otel-resource-attributes`` must be base64 of a JSON object: PVE stores anything
  and only warns when it sends (``_parse_headers``: ``Failed to parse headers``), so the headers would
  silently go unsent.
- The InfluxDB ``token`` comes from pillar (``secrets_pillar``) and is sent at create and when
  ``secret_serial`` (recorded in the ownership row) changes; never read back, shown, stored or compared.
- PVE tests the connection before it saves a create or an update (``Plugin.pm`` ``test_connection``, an
  InfluxDB over http(s) asks ``/health``, OpenTelemetry POSTs an empty batch even when disabled): an
  unreachable server refuses the write, which the read credential cannot foresee, so the plan says so.
- PVE's answers show no digest of ``status.cfg``, so a write is preceded by a fresh read compared with
  the one the decision was made on (``simple.spec.reread_guard``).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule, check_dns_name
from salt_proxmox.pve.facts import release
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.fields import secret_serial as secret_serial_value
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    exact_message,
    export_by,
    fingerprint,
    identify_by_name,
    reread_guard,
)

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "metric_server"
#: The metric server pillar entries' secrets, as declared (``run.config.pillar_secrets``).
SECRETS = ("token",)

#: pve-common ``JSONSchema.pm`` ``$CONFIGID_RE`` (the ``pve-configid`` format of ``id``).
CONFIGID = re.compile(r"^[a-z][a-z0-9_-]+\Z", re.IGNORECASE)
#: ``Graphite.pm`` ``pve_verify_graphite_path``.
_GRAPHITE_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?"
GRAPHITE_PATH = re.compile(rf"^(?:{_GRAPHITE_LABEL}\.)*{_GRAPHITE_LABEL}\Z")


def _address(text: str) -> str | None:
    """``address`` (``pve_verify_address``): an IP address or a DNS name."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return None if check_dns_name(text) is None else f"value does not look like a valid address: {text}"
    return None


def _longest(limit: int):
    return lambda text: f"at most {limit} characters" if len(text) > limit else None


def _base64_json(text: str) -> str | None:
    """``OpenTelemetry.pm`` ``_decode_base64_json`` then a JSON object (``_parse_headers``,
    ``_parse_resource_attributes``), at most 1024 characters (``maxLength``)."""
    if len(text) > 1024:
        return "at most 1024 characters"
    try:
        decoded = json.loads(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        decoded = None
    if not isinstance(decoded, dict):
        return (
            "expected base64 of a JSON object; PVE stores anything and only warns when it sends "
            "(OpenTelemetry.pm _parse_headers), so it would silently send none"
        )
    return None


#: Every option of the three types (``Plugin.pm`` ``propertyList`` and each plugin's ``properties``).
FIELDS: dict[str, Field] = {
    "server": Field(check=_address),
    "port": Field("integer", minimum=1, maximum=64 * 1024),
    "disable": Field("flag"),
    "mtu": Field("integer", minimum=512, maximum=64 * 1024),
    "timeout": Field("integer", minimum=0),
    "path": Field(
        check=lambda t: None if GRAPHITE_PATH.match(t) else "value does not look like a valid graphite path"
    ),
    "proto": Field("choice", choices=("udp", "tcp")),
    "influxdbproto": Field("choice", choices=("udp", "http", "https")),
    "organization": Field(),
    "bucket": Field(),
    "api-path-prefix": Field(),
    "max-body-size": Field("integer", minimum=1),
    "verify-certificate": Field("flag"),
    "otel-protocol": Field("choice", choices=("http", "https")),
    "otel-path": Field(),
    "otel-timeout": Field("integer", minimum=1, maximum=10),
    "otel-headers": Field(check=_base64_json),
    "otel-verify-ssl": Field("flag"),
    "otel-max-body-size": Field("integer", minimum=1024),
    "otel-resource-attributes": Field(check=_base64_json),
    "otel-compression": Field("choice", choices=("none", "gzip")),
}


@dataclass(frozen=True)
class MetricType:
    """One plugin: its ``options`` (the plugin's ``options``, the secret included), the ``required`` ones,
    the value PVE uses for each it may not hold (``defaults``), its ``secrets``, its ``source``, and the
    first PVE major release that has it."""

    name: str
    options: frozenset[str]
    required: tuple[str, ...]
    defaults: Mapping[str, object]
    source: str
    secrets: tuple[str, ...] = ()
    since: int = 8
    #: The option whose value picks the default port (OpenTelemetry: ``otel-protocol``), and the port
    #: for each of its values.
    ports: Mapping[str, int] = field(default_factory=dict)

    def default(self, key: str, values: Mapping[str, object]) -> object:
        """The value PVE uses for ``key`` when the section holds none, given the section's ``values``."""
        if key == "port" and self.ports:
            return self.ports[str(values.get("otel-protocol") or self.defaults["otel-protocol"])]
        return self.defaults.get(key, FIELDS[key].cleared())


_COMMON = {"disable": 0}
TYPES: dict[str, MetricType] = {
    "graphite": MetricType(
        "graphite",
        frozenset({"server", "port", "mtu", "proto", "timeout", "path", "disable"}),
        ("server",),
        # properties defaults; ``_connect`` (port || 2003, proto || udp), ``assemble`` (path // proxmox).
        {**_COMMON, "port": 2003, "mtu": 1500, "proto": "udp", "timeout": 1, "path": "proxmox"},
        "pve-manager PVE/Status/Graphite.pm",
    ),
    "influxdb": MetricType(
        "influxdb",
        frozenset(
            {
                "server",
                "port",
                "mtu",
                "disable",
                "organization",
                "bucket",
                "token",
                "influxdbproto",
                "timeout",
                "max-body-size",
                "api-path-prefix",
                "verify-certificate",
            }
        ),
        ("server", "port"),
        # properties defaults; ``_connect`` (organization // proxmox, bucket // proxmox), ``send``
        # (timeout // 1).
        {
            **_COMMON,
            "mtu": 1500,
            "influxdbproto": "udp",
            "organization": "proxmox",
            "bucket": "proxmox",
            "timeout": 1,
            "max-body-size": 25_000_000,
            "verify-certificate": 1,
        },
        "pve-manager PVE/Status/InfluxDB.pm",
        secrets=("token",),
    ),
    "opentelemetry": MetricType(
        "opentelemetry",
        frozenset(
            {
                "server",
                "port",
                "disable",
                "otel-protocol",
                "otel-path",
                "otel-timeout",
                "otel-headers",
                "otel-verify-ssl",
                "otel-max-body-size",
                "otel-resource-attributes",
                "otel-compression",
            }
        ),
        ("server",),
        {
            **_COMMON,
            "otel-protocol": "https",
            "otel-path": "/v1/metrics",
            "otel-timeout": 5,
            "otel-verify-ssl": 1,
            "otel-max-body-size": 10_000_000,
            "otel-compression": "gzip",
        },
        "pve-manager PVE/Status/OpenTelemetry.pm",
        since=9,
        ports={"https": 4318, "http": 4317},  # ``_get_otlp_url``
    ),
}


def _rule(key: str) -> Rule | None:
    if key == "type":
        return Rule("enum", choices=tuple(TYPES))
    if key == "token":
        return Rule()
    found = FIELDS.get(key)
    return found.rule() if found is not None else None


CREATE = Endpoint("POST /cluster/metrics/server/{id}", ("type", "server", "port"), _rule)
UPDATE = Endpoint("PUT /cluster/metrics/server/{id}", ("server", "port"), _rule)


def _id_problem(name: str) -> str | None:
    return None if CONFIGID.match(name) else f"invalid configuration ID '{name}' (pve-configid)"


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A metric server by its id (``name``). Raises DeclarationError for an unknown key or a bad id."""
    found = identify_by_name(
        state_id,
        target,
        name,
        extra,
        noun="metric server",
        has="name, type and its options",
        check=_id_problem,
    )
    return Declared(
        state_id, target, identity=found.identity, label=f"metric server {name}", names=found.names
    )


def _takers(key: str) -> str:
    return ", ".join(sorted(kind.name for kind in TYPES.values() if key in kind.options)) or "no type"


def declare(
    state_id: str,
    target: str,
    name: object = None,
    type: object = None,
    adopt: object = False,
    secret_serial: object = None,
    **options: object,
) -> Declared:
    """A checked metric server declaration: ``name`` (the id), ``type`` (graphite, influxdb, opentelemetry),
    the type's options as the API spells them, ``token`` (influxdb, from pillar: kept in
    ``Declared.secrets``), ``secret_serial`` (an integer; the token is written again when it changes),
    ``adopt``. A cleared option (None or ``''``) is PVE's default; ``port`` left out is the type's default
    port. Raises DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name)
    kind = TYPES.get(type) if isinstance(type, str) else None
    if kind is None:
        raise DeclarationError(f"type: {shown(type)} is not a metric server type ({', '.join(TYPES)})")
    problems, secrets, values = [], {}, {}
    for key, value in options.items():
        if key not in FIELDS and key not in SECRETS:
            problems.append(f"{key}: not a metric server option (unknown key)")
        elif key not in kind.options:
            problems.append(
                f"{key}: not an option of a {kind.name} metric server ({kind.source} options; PVE: "
                f"`unexpected property '{key}'`); {_takers(key)} take it"
            )
        elif key in kind.secrets:
            if not isinstance(value, str) or not value:
                problems.append(f"{key}: expected non-empty text (a secret, never shown)")
            else:
                secrets[key] = value
        elif value is None or value == "":
            if key in kind.required:
                problems.append(
                    f"{key}: a {kind.name} metric server requires it ({kind.source} options; PVE: `unable to "
                    f"delete required option '{key}'`)"
                )
        else:
            try:
                values[key] = FIELDS[key].canonical(value)
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
    for key in kind.required:
        if key not in options:
            problems.append(f"{key}: a {kind.name} metric server requires it ({kind.source} options)")
    if secret_serial is not None:
        number, problem = secret_serial_value(secret_serial, secrets, "token")
        if problem:
            problems.append(problem)
        else:
            values["secret_serial"] = number
    if problems:
        raise DeclarationError(problems)
    for key in options:  # a cleared option is the value PVE uses without it
        if key in FIELDS and key not in values:
            values[key] = kind.default(key, values)
    values.setdefault("port", kind.default("port", values))  # every POST and PUT carries a port
    found = probe.declaring({"type": kind.name, **values}, adopt)
    return Declared(**{**found.__dict__, "secrets": secrets})


def parse(data: object, decl: Declared) -> dict:
    """``GET /cluster/metrics/server/{id}`` → ``type``, ``fingerprint`` and every option of its type, an
    option PVE does not hold as the value PVE uses (``MetricType.default``); no token. A value no
    declaration can spell is kept as PVE's text (it differs). Raises ValueError for another shape."""
    if not isinstance(data, Mapping) or data.get("type") not in TYPES:
        raise ValueError("expected the metric server's options with a type this product knows")
    kind = TYPES[str(data["type"])]
    found: dict[str, object] = {}
    for key in sorted(kind.options - set(kind.secrets), key=lambda key: key == "port"):
        raw = data.get(key)
        if raw is None or raw == "":
            found[key] = kind.default(key, found)
            continue
        try:
            found[key] = FIELDS[key].canonical(raw)
        except ValueError:
            found[key] = str(raw)
    found["type"] = kind.name
    found["fingerprint"] = fingerprint(data)
    return found


def _path(decl: Declared) -> str:
    return api_path("cluster", "metrics", "server", decl.names["name"])


def _plain(decl: Declared) -> dict:
    return {key: value for key, value in decl.values.items() if key not in ("type", "secret_serial")}


def _wire(key: str, value: object) -> str:
    return FIELDS[key].wire(value)


def create(decl: Declared) -> Call:
    """``POST /cluster/metrics/server/{id}``: the type, every declared option (flags at 0 too, defaults
    as declared), the token."""
    form = {"type": str(decl.values["type"])}
    form.update({key: _wire(key, value) for key, value in _plain(decl).items() if value != ""})
    form.update(decl.secrets)
    return Call("POST", _path(decl), form=form)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /cluster/metrics/server/{id}``: ``server`` and ``port`` (the schema requires them), each
    declared option that differs (``delete`` for one going back to PVE's default), and the token when
    ``secret_serial`` differs from the recorded one. None when nothing differs."""
    kind = TYPES[str(decl.values["type"])]
    changed = {key: value for key, value in _plain(decl).items() if live.get(key) != value}
    due = "secret_serial" in decl.values and live.get("secret_serial") != decl.values["secret_serial"]
    other_type = live.get("type") != kind.name
    if not changed and not due and not other_type:
        return None
    form = {key: _wire(key, decl.values[key]) for key in ("server", "port")}
    gone = []
    for key, value in changed.items():
        if key in ("server", "port"):
            continue
        if value == kind.default(key, decl.values):
            gone.append(key)
        else:
            form[key] = _wire(key, value)
    if gone:
        form["delete"] = ",".join(sorted(gone))
    if other_type:
        form["type"] = kind.name  # never sent: ``refusals`` refuses another type
    if due:
        form.update(decl.secrets)
    return Call("PUT", _path(decl), form=form)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """Another type than the live one; a type newer than the cluster's release (``GET /version``)."""
    if action == "delete":
        return []
    kind = TYPES[str(decl.values["type"])]
    if live is not None and live.get("type") != kind.name:
        return [
            f"{decl.label} is a {live.get('type')} metric server, and PVE cannot change its type (PUT "
            "/cluster/metrics/server/{id} takes no type: MetricServer.pm update looks the plugin up from the "
            f"stored section). Declare the {kind.name} server under a new id (and this one absent)."
        ]
    if kind.since > 8:
        cluster = release(ctx)
        if cluster.major < kind.since:
            return [
                f"type: the cluster runs PVE {cluster.release}, which has no {kind.name} metric server "
                f"({kind.source} came with pve-manager {kind.since}.0.0), so PVE refuses it (type: value "
                "not in the enumeration graphite, influxdb). Declare graphite or influxdb, or upgrade."
            ]
    return []


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What PVE does beside the write: the connection test of a create or update, the token's file
    removed with an InfluxDB server."""
    kind = TYPES[str(decl.values["type"])]
    if action == "delete":
        if kind.secrets:
            return [f"{decl.label}: PVE deletes the token it keeps for it (InfluxDB.pm on_delete_hook)"]
        return []
    if decl.values.get("disable") == 1 and kind.name != "opentelemetry":
        return []
    return [
        f"{decl.label}: PVE connects to {decl.values.get('server')}:{decl.values.get('port')} from the node "
        f"taking the write before it saves it ({kind.source} test_connection"
        + ("; even when disabled" if kind.name == "opentelemetry" else "")
        + "): an unreachable server refuses the write and nothing is saved"
    ]


def export_values(live: Mapping[str, object], probe: Declared) -> dict:
    """``proxmox.export``: a live server's type, server and port and each option it holds other than
    PVE's default; never the token (PVE shows none)."""
    kind = TYPES[str(live["type"])]
    return {
        key: value
        for key, value in live.items()
        if key in ("type", "server", "port")
        or (key in kind.options and key not in kind.secrets and value != kind.default(key, live))
    }


SPEC = ObjectSpec(
    family=FAMILY,
    noun="metric server",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence=(
        "HTTP 500 \"status server entry '<id>' does not exist\" "
        "(pve-manager API2/Cluster/MetricServer.pm read)"
    ),
    is_absent=exact_message(500, "status server entry '{name}' does not exist"),
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    write_guard=reread_guard(_path, "PVE's answers for a metric server show no digest of status.cfg"),
    delete_guard=True,
    refusals=refusals,
    side_effects=side_effects,
    recorded=("secret_serial",),
    # GET /cluster/metrics/server (MetricServer.pm server_index) names each server by ``id``.
    export_names=export_by("id"),
    export_listings=lambda ctx: [(Call("GET", "cluster/metrics/server"), {})],
    export_values=export_values,
    export_secrets=lambda live: set(TYPES[str(live["type"])].secrets),
    live_only=("fingerprint",),
)
