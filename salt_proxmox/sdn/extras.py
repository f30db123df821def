"""SDN controllers, IPAMs and DNS servers (``proxmox_sdn.controller``/``ipam``/``dns``), as simple objects.

Sources (pve-network master ``ecf98c5`` for PVE 9, ``stable-bookworm`` for PVE 8):
``src/PVE/API2/Network/SDN/{Controllers,Ipams,Dns}.pm`` (the API), ``src/PVE/Network/SDN/Controllers/
{Plugin,EvpnPlugin,BgpPlugin,IsisPlugin}.pm``, ``Ipams/{Plugin,PVEPlugin,NetboxPlugin,PhpIpamPlugin}.pm``,
``Dns/{Plugin,PowerdnsPlugin}.pm`` (each type's ``properties`` and ``options``: what it takes and
requires) and ``Ipams.pm`` ``config`` (the built-in ``pve`` IPAM).

- **controller**: id ``pve-sdn-controller-id`` (``[a-zA-Z][a-zA-Z0-9_-]*[a-zA-Z0-9]``, 2-64
  characters). Written to the **pending** ``controllers.cfg`` like zones: the controllers API takes
  ``pending``/``running`` and the SDN apply (``PUT /cluster/sdn``, ``salt_proxmox.sdn.apply``)
  commits it. Types ``evpn`` (``asn``; PVE 9: exactly one of ``peers``/``fabric``; PVE 8: ``peers``,
  no fabrics), ``bgp`` (``node``, ``asn``, ``peers``; ``ebgp``, ``ebgp-multihop``, ``loopback``,
  ``bgp-multipath-as-path-relax``), ``isis`` (``node``, ``isis-domain``, ``isis-net``,
  ``isis-ifaces``; ``loopback``). ``peers`` (``ip-list``) is a set of addresses compared by meaning.
- **ipam**: id ``pve-sdn-ipam-id`` (``[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]``, 2 or more). ``netbox``
  (``url``, ``token``; ``fingerprint``), ``phpipam`` (``url``, ``token``, ``section``;
  ``fingerprint``), ``pve`` (no option: PVE's own, which ``Ipams.pm`` ``config`` adds to every read).
- **dns**: id ``pve-sdn-dns-id`` (as an IPAM's). ``powerdns`` (``url``, ``key``; ``ttl``,
  ``reversemaskv6``, ``fingerprint``); ``reversev6mask`` is in ``Dns/Plugin.pm``'s ``propertyList``
  but in no type's ``options``, so PVE refuses it.
- IPAMs and DNS servers are **not** staged: ``Ipams.pm``/``Dns.pm`` ``create``/``update`` write
  ``ipams.cfg``/``dns.cfg`` at once, with no running copy, so the plan says they take effect without
  the SDN apply. PVE first asks the server's API from the node taking the write (``verify_api``,
  ``powerdns_api_request`` in each ``on_update_hook``): an unreachable server refuses the write.
- Each is read from its listing (``GET /cluster/sdn/{controllers,ipams,dns}``: SDN.Audit or
  SDN.Allocate on ``/sdn/<kind>/<id>``; the one-object GET wants SDN.Allocate), which hides what
  the read credential may not audit: absence is proven only with SDN.Audit there. Each row carries
  the file's ``digest``, which an update sends (``assert_if_modified``).
- The ``token`` (IPAM) and ``key`` (DNS) come from pillar, are sent at create and when
  ``secret_serial`` changes, and are never compared, shown or exported: ``ipams.cfg``/``dns.cfg``
  keep them in the clear and the listings answer them, so ``parse`` drops them.
- The type cannot change (``update`` looks the plugin up from the stored section).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.access.privileges import listing_privileges
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.sdn import extras_rules
from salt_proxmox.simple.fields import Field, deleted_keys, form_values, serial
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, audited_listing, export_by

#: ``pve-sdn-controller-id`` (Controllers/Plugin.pm); ``pve-sdn-ipam-id``, ``pve-sdn-dns-id``.
CONTROLLER_ID = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]*[a-zA-Z0-9]\Z", re.ASCII)
PLUGIN_ID = re.compile(r"^[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]\Z", re.ASCII)
#: IsisPlugin.pm ``pve_verify_sdn_isis_net``.
ISIS_NET = re.compile(r"^[a-fA-F0-9]{2}(\.[a-fA-F0-9]{4}){3,9}\.[a-fA-F0-9]{2}\Z")
#: The pillar entries' secrets (``run.config.pillar_secrets``): an IPAM's token, a DNS server's key.
IPAM_SECRETS = ("token",)
DNS_SECRETS = ("key",)


def _ip_set(text: str) -> str:
    """An ``ip-list`` by meaning: each address canonical, sorted, comma-joined. Raises ValueError."""
    found = set()
    for part in text.split(","):
        try:
            found.add(ipaddress.ip_address(part.strip()))
        except ValueError:
            raise ValueError(f"{shown(part)} is not an IP address") from None
    return ",".join(ip.compressed for ip in sorted(found, key=lambda ip: (ip.version, ip)))


def _iface(text: str) -> str | None:
    bad = [name for name in text.split(",") if not re.match(r"^[a-zA-Z][a-zA-Z0-9_.-]*\Z", name)]
    return f"not interface names: {', '.join(bad)}" if bad else None


FIELDS: dict[str, Field] = {
    # Controllers (each plugin's ``properties``).
    "asn": Field("integer", minimum=0, maximum=2**32 - 1),
    "peers": Field("set", separator=",", normal=_ip_set),
    "fabric": Field(),
    "node": Field(check=lambda v: None if NODE.match(v) else "not a node name"),
    "ebgp": Field("flag"),
    "ebgp-multihop": Field("integer"),
    "bgp-multipath-as-path-relax": Field("flag"),
    "loopback": Field(),
    "isis-domain": Field(),
    "isis-ifaces": Field("set", separator=",", check=_iface),
    "isis-net": Field(
        check=lambda v: None if ISIS_NET.match(v) else "value does not look like a valid isis net"
    ),
    # IPAMs and DNS servers.
    "url": Field(),
    "section": Field("integer"),
    "fingerprint": Field(
        check=lambda v: (
            None
            if re.match(r"^([A-Fa-f0-9]{2}:){31}[A-Fa-f0-9]{2}\Z", v)
            else "not a SHA-256 fingerprint (fingerprint-sha256)"
        )
    ),
    "ttl": Field("integer"),
    "reversemaskv6": Field("integer"),
}


@dataclass(frozen=True)
class Plugin:
    """One type: the keys it takes (its ``options``, secrets included), those it requires, its secrets,
    its source file, and on PVE 8 (``stable-bookworm``) what differs."""

    options: frozenset[str]
    required: tuple[str, ...]
    source: str
    secrets: tuple[str, ...] = ()
    pve8_options: frozenset[str] | None = None
    pve8_required: tuple[str, ...] | None = None


_BGP = {"node", "asn", "peers", "ebgp", "ebgp-multihop", "bgp-multipath-as-path-relax", "loopback"}
CONTROLLER_TYPES = {
    # PVE 9: peers or fabric (on_update_hook: exactly one); PVE 8: peers required, no fabric.
    "evpn": Plugin(
        frozenset({"asn", "peers", "fabric"}),
        ("asn",),
        "Controllers/EvpnPlugin.pm",
        pve8_options=frozenset({"asn", "peers"}),
        pve8_required=("asn", "peers"),
    ),
    "bgp": Plugin(frozenset(_BGP), ("node", "asn", "peers"), "Controllers/BgpPlugin.pm"),
    "isis": Plugin(
        frozenset({"isis-domain", "isis-net", "isis-ifaces", "node", "loopback"}),
        ("isis-domain", "isis-net", "isis-ifaces", "node"),
        "Controllers/IsisPlugin.pm",
    ),
}
IPAM_TYPES = {
    "pve": Plugin(frozenset(), (), "Ipams/PVEPlugin.pm"),
    "netbox": Plugin(
        frozenset({"url", "token", "fingerprint"}), ("url", "token"), "Ipams/NetboxPlugin.pm", ("token",)
    ),
    "phpipam": Plugin(
        frozenset({"url", "token", "section", "fingerprint"}),
        ("url", "token", "section"),
        "Ipams/PhpIpamPlugin.pm",
        ("token",),
    ),
}
DNS_TYPES = {
    "powerdns": Plugin(
        frozenset({"url", "key", "ttl", "reversemaskv6", "fingerprint"}),
        ("url", "key"),
        "Dns/PowerdnsPlugin.pm",
        ("key",),
    )
}


@dataclass(frozen=True)
class Section:
    """One of the three: its ``kind`` (``controller``, ``ipam``, ``dns``: the listing's id key and the
    path's last part), its id pattern and types."""

    kind: str
    plural: str
    noun: str
    pattern: re.Pattern
    max_length: int | None
    types: Mapping[str, Plugin]
    staged: bool

    @property
    def path(self) -> str:
        return f"cluster/sdn/{self.plural}"

    def id_problem(self, value: str) -> str | None:
        if not self.pattern.match(value) or (self.max_length and len(value) > self.max_length):
            limit = f"2-{self.max_length}" if self.max_length else "2 or more"
            return f"{shown(value)} is not an SDN {self.kind} id ({self.pattern.pattern}, {limit} characters)"
        return None


CONTROLLERS = Section(
    "controller", "controllers", "SDN controller", CONTROLLER_ID, 64, CONTROLLER_TYPES, True
)
IPAMS = Section("ipam", "ipams", "SDN IPAM", PLUGIN_ID, None, IPAM_TYPES, False)
DNS = Section("dns", "dns", "SDN DNS server", PLUGIN_ID, None, DNS_TYPES, False)


def _identify(section: Section):
    def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
        """An SDN controller, IPAM or DNS server by its id (``name``). Raises DeclarationError."""
        problems = (
            [f"unknown key(s) {', '.join(sorted(extra))}: not keys of a {section.noun}"] if extra else []
        )
        if not isinstance(name, str):
            problems.append(f"name: the {section.kind} id is required (text)")
        elif section.id_problem(name):
            problems.append(f"name: {section.id_problem(name)}")
        if problems:
            raise DeclarationError(problems)
        return Declared(state_id, target, identity=name, label=f"{section.noun} {name}", names={"name": name})

    return identify


def _declare(section: Section):
    identify = _identify(section)

    def declare(
        state_id: str,
        target: str,
        name: object = None,
        type: object = None,
        adopt: object = False,
        secret_serial: object = None,
        **options: object,
    ) -> Declared:
        """A checked declaration: ``name``, ``type`` and that type's keys (its plugin's ``options``),
        its secret from pillar (kept in ``Declared.secrets``), ``secret_serial``, ``adopt``. What the
        release decides (PVE 8's evpn) is judged at plan (``extras_rules``). Raises DeclarationError
        naming every bad key and its rule."""
        probe = identify(state_id, target, name=name)
        plugin = section.types.get(type) if isinstance(type, str) else None
        if plugin is None:
            raise DeclarationError(f"type: expected one of {', '.join(section.types)}, got {shown(type)}")
        problems, secrets, values = [], {}, {}
        for key, value in options.items():
            if key not in plugin.options:
                takers = sorted(t for t, p in section.types.items() if key in p.options) or ["no type"]
                problems.append(
                    f"{key}: not an option of a {type} {section.kind} (pve-network {plugin.source} options; "
                    f"PVE: `unexpected property '{key}'`); {', '.join(takers)} take it"
                )
            elif key in plugin.secrets:
                if not isinstance(value, str) or not value:
                    problems.append(f"{key}: expected non-empty text (a secret, never shown)")
                else:
                    secrets[key] = value
            else:
                try:
                    values[key] = FIELDS[key].canonical(value)
                except ValueError as exc:
                    problems.append(f"{key}: {exc}")
        # A required secret is judged at plan (``extras_rules.missing_secret``): a declaration read back
        # from an ownership row holds none.
        for key in plugin.required:
            if key not in plugin.secrets and values.get(key) in (None, ""):
                problems.append(
                    f"{key}: a {type} {section.kind} requires it (pve-network {plugin.source} options)"
                )
        if secret_serial is not None:
            number, problem = serial("secret_serial", secret_serial)
            if problem:
                problems.append(problem)
            else:
                values["secret_serial"] = number
        if problems:
            raise DeclarationError(problems)
        found = probe.declaring({"type": type, **values}, adopt)
        return Declared(**{**found.__dict__, "secrets": secrets})

    return declare


def _parse(section: Section):
    def parse(data: object, decl: Declared) -> dict | None:
        """The listing → this object's ``type``, each option of its type canonical (never a secret:
        the listings answer them) and ``digest``; None when not listed. Raises ValueError."""
        rows = [row for row in rows_of(data, section.plural) if row.get(section.kind) == decl.names["name"]]
        if not rows:
            return None
        row = rows[0]
        plugin = section.types.get(str(row.get("type")))
        if plugin is None:
            return {"type": row.get("type"), "digest": row.get("digest")}
        found: dict[str, object] = {"type": row["type"]}
        for key in sorted(plugin.options - set(plugin.secrets)):
            try:
                found[key] = FIELDS[key].canonical(row.get(key))
            except ValueError:
                found[key] = str(row.get(key))
        found["digest"] = row.get("digest")
        return found

    return parse


def _plain(decl: Declared) -> dict:
    return {key: value for key, value in decl.values.items() if key not in ("type", "secret_serial")}


def _create(section: Section):
    def create(decl: Declared) -> Call:
        form = {section.kind: decl.names["name"], "type": str(decl.values["type"])}
        form.update(form_values(FIELDS, _plain(decl), skip=()))
        form.update(decl.secrets)
        return Call("POST", section.path, form=form)

    return create


def _update(section: Section):
    def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
        """``PUT``: each declared key that differs (``delete`` for one cleared), the secret when
        ``secret_serial`` differs from the recorded one; None when nothing differs."""
        plain = _plain(decl)
        changed = {key: value for key, value in plain.items() if live.get(key) != value}
        due = "secret_serial" in decl.values and live.get("secret_serial") != decl.values["secret_serial"]
        if not changed and not due:
            return None
        form: dict = form_values(FIELDS, changed, skip=())
        gone = deleted_keys(changed, live, skip=())
        if gone:
            form["delete"] = ",".join(sorted(gone))
        if due:
            form.update(decl.secrets)
        return Call("PUT", api_path("cluster", "sdn", section.plural, decl.names["name"]), form=form)

    return update


def _rules(section: Section):
    def rule(key: str) -> Rule | None:
        if key == section.kind:
            return Rule(check=section.id_problem)
        if key == "type":
            return Rule("enum", choices=tuple(section.types))
        if key in ("lock-token", "digest", "delete", "token", "key"):
            return Rule()
        field = FIELDS.get(key)
        return field.rule() if field else None

    return rule


def _digest_guard(ctx, credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The digest of the answer judged (``assert_if_modified``)."""
    digest = live.get("digest")
    return {"digest": str(digest)} if isinstance(digest, str) and digest else {}


def _export_values(section: Section):
    def export_values(live: Mapping[str, object], probe: Declared) -> dict:
        """``proxmox.export``: the type and each option it holds; never a secret."""
        plugin = section.types[str(live["type"])]
        return {
            key: value
            for key, value in live.items()
            if key == "type" or (key in plugin.options and key not in plugin.secrets and value not in ("", 0))
        }

    return export_values


def _spec(section: Section, refusals, side_effects) -> ObjectSpec:
    family = f"sdn_{section.kind}"
    return ObjectSpec(
        family=family,
        noun=section.noun,
        declare=_declare(section),
        identify=_identify(section),
        read=lambda decl: Call("GET", section.path),
        absence=f"not in GET /{section.path} while the read credential may audit it",
        is_absent=lambda error, decl: False,
        parse=_parse(section),
        create=_create(section),
        create_endpoint=Endpoint(f"POST /{section.path}", (section.kind, "type"), _rules(section)),
        update=_update(section),
        update_endpoint=Endpoint(f"PUT /{section.path}/{{{section.kind}}}", (), _rules(section)),
        delete=lambda decl, live: Call(
            "DELETE", api_path("cluster", "sdn", section.plural, decl.names["name"])
        ),
        confirm_absent=audited_listing(
            f"GET /{section.path}",
            section.plural,
            listing_privileges(family),
            lambda decl: f"/sdn/{section.plural}/{decl.names['name']}",
            "SDN.Audit on /sdn",
        ),
        write_guard=_digest_guard,
        refusals=refusals,
        side_effects=side_effects,
        recorded=("secret_serial",),
        export_names=export_by(section.kind),
        export_listings=lambda ctx: [(Call("GET", section.path), {})],
        export_values=_export_values(section),
        export_secrets=lambda live: (
            set(section.types[str(live["type"])].secrets) if str(live.get("type")) in section.types else set()
        ),
        live_only=("digest",),
    )


CONTROLLER = _spec(CONTROLLERS, extras_rules.controller_refusals, None)
IPAM = _spec(IPAMS, extras_rules.ipam_refusals, extras_rules.direct_side_effects)
DNS_SERVER = _spec(DNS, extras_rules.dns_refusals, extras_rules.direct_side_effects)
