"""A node's API/GUI certificate (``proxmox_certificate``): what pveproxy serves on port 8006.

Sources: pve-manager ``PVE/API2/Certificates.pm`` (``info``, ``upload_custom_cert``,
``remove_custom_cert``), ``PVE/API2/ACME.pm`` (``new_certificate``, ``renew_certificate``,
``revoke_certificate``, ``$order_certificate``), ``PVE/NodeConfig.pm`` (``acme``, ``acmedomainN``,
``get_acme_conf``, ``$MAXDOMAINS``), ``PVE/API2/NodeConfig.pm`` (``get_config``, ``set_options``),
``PVE/CertHelpers.pm`` (``cert_path_prefix``, ``set_cert_files``). One object per node, keyed by the node
(``name``), of one ``type``:

- ``custom``: ``certificates`` (the PEM chain, leaf first) and ``key`` (a secret from pillar through
  ``secrets_pillar``, never a state argument, never compared or shown). Compared by the SHA-256
  ``fingerprint`` of the live ``pveproxy-ssl.pem`` (``GET /nodes/{node}/certificates/info``) with the
  declared leaf's, computed here (``certificate.pem``). Written by ``POST .../certificates/custom``
  (synchronous: it answers the new certificate's info) with ``restart=1``; ``force=1`` only on an update
  (an owned or adopted file): ``set_cert_files`` dies ``Custom certificate file exists but force flag is
  not set.`` otherwise, so a file this run could not read is never overwritten. Absent: ``info`` lists no
  ``pveproxy-ssl.pem`` (it lists each of the node's certificate files that exists and parses).
  ``removal: destroy`` is ``DELETE .../certificates/custom?restart=1``: PVE falls back to the node's
  self-signed ``pve-ssl.pem`` (signed by the cluster's ``pve-root-ca.pem``), and the plan says so.
- ``acme``: ``domains`` (each ``domain`` with its ``plugin``, default ``standalone``, and ``alias``),
  ``account`` (default ``default``) and ``renew_days`` (default 30). Written to the node config as
  ``acme: account=<name>`` and ``acmedomain0..`` (``PUT /nodes/{node}/config``, digest-guarded; at most
  ``$MAXDOMAINS`` + 1 = 6), then an order (``POST .../certificates/acme/certificate``, task
  ``acmenewcert``) when the live certificate does not cover every declared domain, or a renewal (``PUT``,
  task ``acmerenew``, which revokes the old certificate at the CA: the plan says so) when it expires
  within ``renew_days``; ``renew_certificate`` refuses earlier than 30 days without ``force``, so a
  longer window sends ``force=1``. Both tasks set ``pveproxy-ssl.pem`` and reload pveproxy. Absent: the
  node config holds no ``acme`` and no ``acmedomainN``. ``removal: destroy`` deletes those keys only: the
  certificate stays and is served until it expires, and nothing is ever revoked (``DELETE
  .../acme/certificate`` revokes at the CA and is never planned; revoke by hand with ``pvenode acme cert
  revoke``). A referenced plugin (``GET /cluster/acme/plugins``) and account (``GET
  /cluster/acme/account``) must exist or be declared earlier in the run.
- The minion's own connection: pveproxy restarts with the new certificate. When the target verifies TLS
  (``proxmox:targets:<t>:verify`` true: requests' CA bundle; a path: that bundle) the plan is refused
  unless the declared chain verifies against that bundle for a member host it names (``custom``), or the
  declaration says ``trusted: true`` (the operator vouches that the bundle trusts the new certificate: an
  ACME certificate cannot be checked before the CA issues it). ``verify: false`` checks nothing.
- Privileges: ``Sys.Modify`` on ``/nodes/{node}`` for every certificate write (``Certificates.pm``,
  ``ACME.pm``), ``Sys.Modify`` on ``/`` for the node config (``API2/NodeConfig.pm`` ``set_options``),
  ``Sys.Audit`` on ``/`` to read it (``get_config``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.certificate import pem
from salt_proxmox.datacenter.metrics import CONFIGID
from salt_proxmox.errors import DeclarationError, Refused, boolean_problem, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.simple import lifecycle
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, will_exist
from salt_proxmox.wire.propstring import pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "certificate"
#: The pillar secret (``run.config.pillar_secrets``): the custom certificate's private key.
SECRETS = ("key",)
#: ``NodeConfig.pm`` ``$MAXDOMAINS``: ``acmedomain0`` .. ``acmedomain5``.
MAXDOMAINS = 5
SLOTS = tuple(f"acmedomain{i}" for i in range(MAXDOMAINS + 1))
#: ``NodeConfig.pm`` ``pve-acme-domain`` and ``pve-acme-alias``.
DOMAIN = re.compile(r"[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)+", re.I)
ALIAS = re.compile(r"[a-z0-9_][a-z0-9_-]*(?:\.[a-z0-9_][a-z0-9_-]*)+", re.I)
#: ``renew_certificate``: without ``force`` it renews only within 30 days of expiry.
PVE_RENEW_DAYS = 30
SELF_SIGNED = "none: pveproxy serves the self-signed pve-ssl.pem"
KEYS = {"custom": ("certificates", "key", "trusted"), "acme": ("domains", "account", "renew_days", "trusted")}

#: The family's writes: the upload (``upload_custom_cert``), the node config (``set_options``: only the
#: ACME keys) and an order (``new_certificate``/``renew_certificate``: ``force``), checked as one form.
WRITES = Endpoint(
    "POST /nodes/{node}/certificates/custom, PUT /nodes/{node}/config, .../certificates/acme/certificate",
    (),
    lambda key: Rule() if key in ("certificates", "key", "force", "restart", "acme", *SLOTS) else None,
)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A node's certificate by the node's name. Raises DeclarationError for a bad name or a key an
    absent state does not take."""
    extra.pop("type", None)
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: a certificate is named by its node"
        )
    if not isinstance(name, str) or not NODE.match(name):
        raise DeclarationError(f"name: {shown(name)} is not a PVE node name (pve-node)")
    return Declared(
        state_id, target, identity=name, label=f"certificate of node {name}", names={"name": name}
    )


def domain_entries(value: object) -> list[dict]:
    """Declared ``domains`` (a list of names, or of ``{domain, plugin, alias}``) as sorted entries
    ``{domain (lower-cased: get_acme_conf), plugin, alias?}``. Raises ValueError naming the rule."""
    if not isinstance(value, list) or not value:
        raise ValueError("expected a list of domains (each a name, or {domain, plugin, alias})")
    found: dict[str, dict] = {}
    for item in value:
        entry = {"domain": item} if isinstance(item, str) else item
        if not isinstance(entry, Mapping) or set(entry) - {"domain", "plugin", "alias"}:
            raise ValueError(f"{shown(item)}: expected a name or {{domain, plugin, alias}}")
        domain, plugin = entry.get("domain"), entry.get("plugin") or "standalone"
        if not isinstance(domain, str) or not DOMAIN.fullmatch(domain):
            raise ValueError(
                f"value {shown(domain)} does not look like a valid domain name (pve-acme-domain)"
            )
        if not isinstance(plugin, str) or not CONFIGID.match(plugin):
            raise ValueError(f"plugin {shown(plugin)} is not a plugin id (pve-configid)")
        alias = entry.get("alias")
        if alias is not None and (not isinstance(alias, str) or not ALIAS.fullmatch(alias)):
            raise ValueError(f"value {shown(alias)} does not look like a valid alias name (pve-acme-alias)")
        if domain.lower() in found:
            raise ValueError(f"duplicate domain '{domain.lower()}' (NodeConfig.pm get_acme_conf)")
        found[domain.lower()] = {
            "domain": domain.lower(),
            "plugin": plugin,
            **({"alias": alias} if alias else {}),
        }
    if len(found) > len(SLOTS):
        raise ValueError(f"at most {len(SLOTS)} domains (NodeConfig.pm $MAXDOMAINS: acmedomain0..5)")
    return [found[key] for key in sorted(found)]


def declare(
    state_id: str, target: str, name: object = None, type: object = None, adopt: object = False, **options
) -> Declared:
    """A checked declaration: ``type`` ``custom`` (``certificates``, ``key`` from pillar) or ``acme``
    (``domains``, ``account``, ``renew_days``), ``trusted``, ``adopt``. ``Declared.values``: the compared
    ``fingerprint`` (custom) or ``account``, ``domains`` and ``certificate: current`` (acme); the other
    keys ride in ``names``. Raises DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name)
    if type not in KEYS:
        raise DeclarationError(f"type: {shown(type)} is not custom or acme")
    problems, names, values, secrets = [], {"name": probe.identity, "type": type}, {}, {}
    for key in sorted(set(options) - set(KEYS[type])):
        problems.append(f"{key}: not an option of a {type} certificate (unknown key)")
    trusted = options.get("trusted", False)
    problem = boolean_problem("trusted", trusted)
    problems += [problem] if problem else []
    names["trusted"] = trusted is True
    if type == "custom":
        try:
            certs = pem.chain(options.get("certificates"))
            names["certificates"] = options["certificates"]
            values["fingerprint"] = pem.facts(certs[0]).fingerprint
            key = options.get("key")
            if key is not None:
                why = pem.key_problem(key, certs[0])
                problems += [f"key: {why}"] if why else []
                secrets["key"] = key
        except ValueError as exc:
            problems.append(f"certificates: {exc}")
    else:
        try:
            values["domains"] = domain_entries(options.get("domains"))
        except ValueError as exc:
            problems.append(f"domains: {exc}")
        account = options.get("account") or "default"
        if not isinstance(account, str) or not CONFIGID.match(account):
            problems.append(f"account: {shown(account)} is not an ACME account name (pve-configid)")
        values["account"] = account
        days = options.get("renew_days", PVE_RENEW_DAYS)
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 365:
            problems.append(f"renew_days: {shown(days)} is not a number of days from 1 to 365")
        names["renew_days"], values["certificate"] = days, "current"
    if problems:
        raise DeclarationError(problems)
    found = replace(probe, names=names).declaring(values, adopt)
    return replace(found, secrets=secrets, unstored=frozenset({"fingerprint", "certificate"}))


def _info_path(decl: Declared) -> str:
    return api_path("nodes", decl.identity, "certificates", "info")


def _config_path(decl: Declared) -> str:
    return api_path("nodes", decl.identity, "config")


def _order_path(decl: Declared) -> str:
    return api_path("nodes", decl.identity, "certificates", "acme", "certificate")


def served(data: object) -> Mapping | None:
    """The ``pveproxy-ssl.pem`` row of an ``info`` answer, None without one. Raises ValueError for
    another shape (``Certificates.pm`` ``info``: a list of ``pve-certificate-info``)."""
    row = next(
        (r for r in rows_of(data, "certificate infos") if r.get("filename") == "pveproxy-ssl.pem"), None
    )
    if row is not None and not isinstance(row.get("fingerprint"), str):
        raise ValueError("expected pveproxy-ssl.pem's fingerprint")
    return row


def acme_conf(config: Mapping) -> dict | None:
    """``get_acme_conf`` of a node config: ``{account, domains (sorted entries), keys (the config keys
    holding them)}``, None when neither ``acme`` nor an ``acmedomainN`` is set. Raises ValueError for a
    property string PVE would not parse."""
    keys = [key for key in ("acme", *SLOTS) if config.get(key)]
    if not keys:
        return None
    acme = dict(pairs(config["acme"])) if config.get("acme") else {}
    entries = [{"domain": d, "plugin": "standalone"} for d in (acme.get("domains") or "").split(";") if d]
    for slot in SLOTS:
        if config.get(slot):
            raw = dict(pairs(config[slot], default_key="domain"))
            entries.append({"domain": raw["domain"], "plugin": raw.get("plugin") or "standalone",
                            **({"alias": raw["alias"]} if raw.get("alias") else {})})  # fmt: skip
    domains = domain_entries(entries) if entries else []
    return {"account": acme.get("account") or "default", "domains": domains, "keys": keys}


def status(row: Mapping | None, decl: Declared, now: float | None = None) -> str:
    """``current`` when the served certificate covers every declared domain and expires after
    ``renew_days``; else what is wrong with it."""
    if row is None:
        return SELF_SIGNED
    missing = pem.covers(row.get("san") or [], [entry["domain"] for entry in decl.values["domains"]])
    if missing:
        return f"does not cover {', '.join(missing)}"
    notafter, days = int(row.get("notafter") or 0), int(decl.names["renew_days"])
    if notafter - (now or time.time()) < days * 86400:
        return f"expires {pem.when(notafter)}, within renew_days {days}"
    return "current"


def parse(data: object, decl: Declared, config: Mapping | None = None) -> dict | None:
    """``info`` (and, for acme, the node config ``for_cluster`` read) → the live attributes, or None
    when absent. Raises ValueError for another shape."""
    row = served(data)
    kind = decl.names.get("type")
    # An identity alone (an absent state without a row) is present when either kind is.
    if kind == "custom" or (kind is None and row is not None):
        if row is None:
            return None
        return {"fingerprint": row["fingerprint"], "san": row.get("san"), "notafter": row.get("notafter")}
    conf = acme_conf(config or {})
    if conf is None:
        return None
    return {**conf, "certificate": status(row, decl), "digest": (config or {}).get("digest")}


def _read_config(ctx: PveContext, decl: Declared) -> Mapping:
    data = ctx.client.request("GET", _config_path(decl), ctx.broker.read())
    if not isinstance(data, Mapping):
        raise Refused(f"{decl.label}: GET /nodes/{decl.identity}/config answered no object")
    return data


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """The family for ``decl``: an acme declaration's parse is handed the node config, read now with the
    read token (``get_config``). Raises what the read raises."""
    if decl.names.get("type") != "acme":
        return SPEC
    config = _read_config(ctx, decl)
    return replace(SPEC, parse=lambda data, d: parse(data, d, config))


def _config_form(decl: Declared, live: Mapping | None) -> dict:
    form = {"acme": f"account={decl.values['account']}"}
    for slot, entry in zip(SLOTS, decl.values["domains"], strict=False):
        form[slot] = ",".join([entry["domain"], f"plugin={entry['plugin']}",
                               *([f"alias={entry['alias']}"] if entry.get("alias") else [])])  # fmt: skip
    stale = [key for key in (live or {}).get("keys", []) if key not in form]
    return {**form, **({"delete": ",".join(stale)} if stale else {})}


def create(decl: Declared) -> Call:
    """custom: the upload (without ``force``: a file this run could not read is never overwritten); acme: the
    node config write (the order follows it in ``send``)."""
    if decl.names["type"] == "custom":
        # No force (PVE's default 0): set_cert_files dies over a file this run could not read.
        form = {"certificates": str(decl.names["certificates"]), "restart": "1"}
        return Call("POST", api_path("nodes", decl.identity, "certificates", "custom"), form=form)
    return Call("PUT", _config_path(decl), form=_config_form(decl, None))


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """custom: the upload with ``force=1``; acme: the node config write when it differs (with its
    ``digest``), else the order or renewal."""
    if decl.names["type"] == "custom":
        return replace(create(decl), form={**(create(decl).form or {}), "force": "1"})
    if live.get("account") != decl.values["account"] or live.get("domains") != decl.values["domains"]:
        form = {**_config_form(decl, live), "digest": str(live.get("digest") or "")}
        return Call("PUT", _config_path(decl), form=form)
    return order_call(decl, live)


def order_call(decl: Declared, live: Mapping | None) -> Call | None:
    """The ACME order that makes the served certificate current: ``POST`` (new order, ``force=1`` over an
    existing file) unless it covers the domains and only expires, then ``PUT`` (renewal, ``force=1`` when
    ``renew_days`` exceeds PVE's 30); None when it is current."""
    state = (live or {}).get("certificate", SELF_SIGNED)
    if state == "current":
        return None
    if str(state).startswith("expires"):
        force = int(decl.names["renew_days"]) > PVE_RENEW_DAYS
        return Call("PUT", _order_path(decl), form={"force": "1" if force else "0"})
    return Call("POST", _order_path(decl), form={"force": "0" if state == SELF_SIGNED else "1"})


def _current(ctx: PveContext, decl: Declared) -> dict | None:
    return lifecycle.read(ctx, SPEC, decl)


def send(ctx: PveContext, decl: Declared, call: Call, what: str) -> None:
    """Send one write: an upload with the key from pillar (never in the call, a log or a return); a node
    config write against a digest read again right now, then the order it leads to; an order as the task
    it is (``fork_worker``), awaited by the credential that started it. Raises Refused when the node
    config changed after the decision, and what the calls raise."""
    if call.path.endswith("/custom") and call.method == "POST":
        lifecycle.send(ctx, ctx.broker.provision(), replace(call, form={**(call.form or {}), **decl.secrets}))
        return
    if call.path == _order_path(decl):
        ctx.reads.drop_listings()
        ctx.task(call.method, call.path, decl.identity, what, form=call.form)
        return
    if call.path != _config_path(decl) or decl.names["type"] != "acme" or call.method != "PUT":
        lifecycle.send(ctx, ctx.broker.provision(), call)
        return
    config = _read_config(ctx, decl)
    now = acme_conf(config)
    if "digest" not in (call.form or {}) and now is not None and what.startswith("create"):
        raise Refused(f"{decl.label}: the node config has ACME settings now; nothing was written, run again")
    if "digest" in (call.form or {}) and call.form["digest"] != config.get("digest"):
        raise Refused(
            f"{decl.label}: the node config changed after it was read; nothing was written, run again"
        )
    lifecycle.send(ctx, ctx.broker.provision(), call.with_extra({"digest": str(config.get("digest") or "")}))
    if call.form and "acme" in call.form:
        after = _current(ctx, decl)
        step = order_call(decl, after)
        if step is not None:
            send(ctx, decl, step, f"{what}: ACME order")


def _trust(ctx: PveContext, decl: Declared, certs: list | None, what: str) -> list[str]:
    """The refusal when pveproxy's new certificate may fail this minion's TLS check (module docstring)."""
    bundle = pem.trust_bundle(ctx.target.verify)
    if bundle is None or decl.names.get("trusted"):
        return []
    reason = pem.trust_problem(certs, bundle, ctx.target.members) if certs else (
        "a certificate the CA has not issued yet cannot be checked")  # fmt: skip
    if reason is None:
        return []
    return [
        f"{decl.label}: {what}, and pveproxy restarts with it, so this minion's next connection to node "
        f"{decl.identity} meets it; proxmox:targets:{ctx.target.name}:verify checks TLS against {bundle}, "
        f"and {reason}. Add the certificate's CA to that bundle, or declare trusted: true once it trusts "
        "the new certificate; nothing was written."
    ]


def _missing_refs(ctx: PveContext, decl: Declared) -> list[str]:
    credential = ctx.broker.read()
    problems = []
    plugins = {
        str(r.get("plugin"))
        for r in rows_of(ctx.reads.shared(ctx.client, "cluster/acme/plugins", ctx.broker.provision()))
    }
    for entry in decl.values["domains"]:
        plugin = entry["plugin"]
        if plugin != "standalone" and plugin not in plugins and not will_exist(ctx, "acme_plugin", plugin):
            problems.append(
                f"{decl.label}: domains: {entry['domain']} names ACME plugin {plugin}, which neither "
                "exists nor is declared earlier in this run (NodeConfig.pm get_acme_conf: plugin '<id>' for "
                "domain '<domain>' not found!)"
            )
    account = decl.values["account"]
    accounts = {
        str(r.get("name")) for r in rows_of(ctx.reads.shared(ctx.client, "cluster/acme/account", credential))
    }
    if account not in accounts and not will_exist(ctx, "acme_account", account):
        problems.append(
            f"{decl.label}: account: ACME account {account} neither exists nor is declared earlier in this "
            "run "
            f"(API2/ACME.pm new_certificate: ACME account config file '{account}' does not exist.)"
        )
    return problems


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """At plan: a custom upload without its key; an acme declaration naming a plugin or account that is
    not there; an ACME order over a certificate file not adopted; and the trust rule of the new
    certificate (``_trust``)."""
    custom = decl.names["type"] == "custom"
    if action == "delete":
        if not custom:
            return []
        data = ctx.client.request("GET", _info_path(decl), ctx.broker.read())
        own = next((r for r in rows_of(data) if r.get("filename") == "pve-ssl.pem"), None)
        root = next((r for r in rows_of(data) if r.get("filename") == "pve-root-ca.pem"), None)
        certs = pem.chain(f"{own['pem']}\n{root['pem']}") if own and root and own.get("pem") else None
        return _trust(ctx, decl, certs, "the delete makes pveproxy serve the self-signed pve-ssl.pem")
    if custom:
        if "key" not in decl.secrets:
            return [
                f"{decl.label}: key: the private key is required (from secrets_pillar), nothing was written"
            ]
        return _trust(
            ctx, decl, pem.chain(str(decl.names["certificates"])), "the upload replaces the certificate"
        )
    problems = _missing_refs(ctx, decl)
    if action == "create":
        row = served(ctx.client.request("GET", _info_path(decl), ctx.broker.read()))
        if row is not None and not decl.adopt:
            problems.append(
                f"{decl.label}: pveproxy-ssl.pem holds a certificate ({row['fingerprint']}, issuer "
                f"{row.get('issuer')}), which the ACME order replaces (force). Declare adopt: true to "
                "replace it."
            )
        live = {"certificate": status(row, decl)}
    if order_call(decl, live) is not None:
        problems += _trust(ctx, decl, None, "the ACME order replaces the certificate")
    return problems


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What PVE does besides the write: pveproxy restarts (this minion's connections then see the new
    certificate); an order, a renewal (which revokes the old certificate), or the fallback to
    ``pve-ssl.pem``."""
    restart = (
        f"{decl.label}: pveproxy on {decl.identity} restarts with the new certificate, and this minion's API "
        "connections to it then see it"
    )
    if decl.names["type"] == "custom":
        if action == "delete":
            return [
                f"{decl.label}: PVE falls back to its self-signed pve-ssl.pem (signed by the cluster's "
                "pve-root-ca.pem); pveproxy restarts (remove_custom_cert restart=1)"
            ]
        return [f"{restart} (upload_custom_cert restart=1)"]
    if action == "delete":
        return [
            f"{decl.label}: only the node config's acme and acmedomainN entries are removed; the certificate "
            "stays and is served until it expires, and nothing is revoked"
        ]
    live = _current(ctx, decl) if action == "update" else None
    step = order_call(decl, live)
    if step is None:
        return []
    if step.method == "PUT":
        return [
            f"{decl.label}: renewed from the account's CA (task acmerenew), which then revokes the old "
            "certificate there",
            f"{restart} (the task reloads it)",
        ]
    return [
        f"{decl.label}: ordered from account {decl.values['account']}'s CA (task acmenewcert), validated "
        f"through {', '.join(sorted({e['plugin'] for e in decl.values['domains']}))}",
        f"{restart} (the task reloads it)",
    ]


def _delete(decl: Declared, live: Mapping[str, object]) -> Call:
    if decl.names["type"] == "custom":
        return Call(
            "DELETE", api_path("nodes", decl.identity, "certificates", "custom"), params={"restart": "1"}
        )
    return Call("PUT", _config_path(decl), form={"delete": ",".join(live.get("keys") or ["acme"]),
                                                 "digest": str(live.get("digest") or "")})  # fmt: skip


SPEC = ObjectSpec(
    family=FAMILY,
    noun="certificate",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _info_path(decl)),
    absence=(
        "custom: GET /nodes/{node}/certificates/info lists no pveproxy-ssl.pem (pve-manager "
        "API2/Certificates.pm info); acme: the node config holds no acme and no acmedomainN (NodeConfig.pm)"
    ),
    is_absent=lambda error, decl: False,
    parse=parse,
    # info lists each of the node's certificate files that exists and parses: its answer is complete.
    confirm_absent=lambda ctx, credential, decl: None,
    create=create,
    create_endpoint=WRITES,
    update=update,
    update_endpoint=WRITES,
    delete=_delete,
    refusals=refusals,
    side_effects=side_effects,
    for_cluster=for_cluster,
    send=send,
    export_names=None,
    not_exported="a custom certificate's key cannot be read back, and an ACME one is the CA's to issue",
    live_only=("san", "notafter", "digest", "keys"),
)
