"""ACME accounts (``proxmox_acme.account``): one account file ``priv/acme/<name>`` registered with a CA.

Source: pve-manager ``PVE/API2/ACMEAccount.pm`` (``account_index``, ``register_account``,
``update_account``, ``get_account``, ``deactivate_account``, ``get_meta``), ``PVE/CertHelpers.pm``
(``pve-acme-account-name``, ``pve-acme-account-contact``, ``pve-acme-directory-url``,
``list_acme_accounts``), ``PVE/NodeConfig.pm`` (``get_acme_conf``), ``PVE/CLI/pvenode.pm``
(``acme_register``), over proxmox-acme ``PVE/ACME.pm`` (``new_account``, ``save``).

- Only root@pam may read or write one: every method but the index has no ``permissions``, and
  pve-access-control ``PVE/RPCEnvironment.pm`` ``check_api2_permissions`` then answers
  ``raise_perm_exc('user != root@pam')`` (HTTP 403 ``Permission check failed (user != root@pam)``) to
  anyone else, an API token always. So the family reads and writes through the target's root lane
  (``ObjectSpec.reads_with``/``writes_with``: ``root_lane``), whose preconditions are checked once per
  run (``guest.lane.lane_check``). Without a lane, ``GET /cluster/acme/account`` (``account_index``,
  ``permissions => { user => 'all' }``: every account file whose name is a configid) still proves an
  account absent with the read token, and every write is refused at plan naming the lane and the
  ``pvesh`` command to run by hand; an account it lists cannot be read, and is refused naming the lane.
- Read ``GET /cluster/acme/account/{name}``: ``account`` (the CA's account object: ``contact`` as
  ``mailto:`` URIs, ``status``), ``directory``, ``location``, ``tos`` (the file's saved values,
  ``ACME.pm`` ``save``). Absence is exactly HTTP 400 with ``name: ACME account config file '<name>' does
  not exist.`` (``raise_param_exc``). It holds no digest: a write is guarded by reading it again
  (``reread_guard``).
- ``name`` is a ``pve-configid`` (PVE's default ``default``); ``contact`` (required at register: the
  option is not optional there) is a list of email addresses (``email-list``: pve-common ``split_list``
  and ``pve_verify_email``), sent comma-separated and stored as ``mailto:<address>``
  (``$account_contact_from_param``), compared as a set.
- ``update_account`` (``PUT``) takes ``contact`` only (none: a refresh), so ``directory`` (default Let's
  Encrypt V2) and ``tos_url`` are fixed once registered: another value is refused naming a new account.
- ``tos_url``: "setting this indicates agreement" (``register_account``; ``new_account`` sends
  ``termsOfServiceAgreed``), saved as ``tos``. When the directory has Terms of Service (``GET
  /cluster/acme/meta?directory=``: ``termsOfService``, read through the lane) a register without it is
  refused at plan with the URL to agree to, as is one without EAB when ``externalAccountRequired``.
- ``eab-kid`` and ``eab-hmac-key`` (External Account Binding): both or neither (``requires``), sent at
  register only (no read shows them), never compared, shown, stored or exported; the HMAC key is a
  secret from pillar. ``pvesh`` would carry it in its argv, readable by every user of the node, so
  through a pvesh lane an EAB account is never registered: refused at plan, the remedies the ticket
  lane (the key goes in the HTTPS form, as with any token write) or ``pvenode acme account register``
  (it asks for the key at its prompt, ``pvenode.pm`` ``acme_register``), then ``adopt: true``.
- Register, update and deactivate each ``fork_worker`` a task (``acmeregister``, ``acmeupdate``/
  ``acmerefresh``, ``acmedeactivate``), awaited through the lane by its owner, root@pam.
- ``DELETE`` deactivates the account at the CA (irreversible: RFC 8555 §7.3.6) and renames its file to
  ``_deactivated_<name>_<n>`` (``$update_account``): the plan says so. An account a node's certificate
  configuration uses (``GET /nodes/{node}/config`` ``acme: account=<name>,...``; ``get_acme_conf``:
  ``account`` defaults to ``default`` once any domain is configured) is never deactivated: the node's
  next order would die ``ACME account config file '<name>' does not exist.`` (``API2/ACME.pm``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.datacenter.acme import MAXDOMAINS
from salt_proxmox.datacenter.dcformats import EMAIL
from salt_proxmox.datacenter.metrics import CONFIGID
from salt_proxmox.errors import DeclarationError, Refused, shown
from salt_proxmox.guest.lane import lane_check
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.pve.listing import node_names, rows_of
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    export_by,
    fingerprint,
    identify_by_name,
    reread_guard,
)
from salt_proxmox.wire.propstring import pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "acme_account"
#: The account pillar entries' secrets, as declared (``run.config.pillar_secrets``).
SECRETS = ("eab-hmac-key",)
#: ``ACMEAccount.pm`` ``$acme_default_directory_url`` (Let's Encrypt V2).
DEFAULT_DIRECTORY = "https://acme-v02.api.letsencrypt.org/directory"
#: ``pve-acme-directory-url``: ``pattern => '^https?://.*'`` (JSONSchema anchors it at both ends).
DIRECTORY = re.compile(r"https?://.*")
INDEX = "cluster/acme/account"
#: The keys a declaration takes besides ``name`` and ``adopt``.
KEYS = ("contact", "directory", "tos_url", "eab-kid", "eab-hmac-key")
#: The EAB pair: ``requires`` each other, sent at register only.
EAB = ("eab-kid", "eab-hmac-key")


def _rule(key: str) -> Rule | None:
    if key == "directory":
        return Rule(
            check=lambda url: (
                None if DIRECTORY.fullmatch(url) else f"value does not match the regex pattern ({url})"
            )
        )
    return Rule() if key in ("name", "contact", "tos_url", *EAB) else None


CREATE = Endpoint("POST /cluster/acme/account", ("name", "contact"), _rule)
UPDATE = Endpoint("PUT /cluster/acme/account/{name}", (), _rule)


def _name_problem(name: str) -> str | None:
    return None if CONFIGID.match(name) else f"invalid configuration ID '{name}' (pve-configid)"


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """An ACME account by its name. Raises DeclarationError for an unknown key or a bad name."""
    found = identify_by_name(
        state_id, target, name, extra, noun="ACME account", has="name, contact, directory, tos_url, eab-kid",
        check=_name_problem,
    )  # fmt: skip
    return Declared(
        state_id, target, identity=found.identity, label=f"ACME account {name}", names=found.names
    )


def contacts(value: object) -> list[str]:
    """A declared ``contact`` (a list of addresses, or PVE's comma/semicolon/space separated text) as a
    sorted list without repeats. Raises ValueError naming the first address ``pve_verify_email``
    refuses, or for none at all (``register_account`` requires ``contact``)."""
    if isinstance(value, str):
        items = [part for part in re.split(r"[,;\s]+", value) if part]
    elif isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        items = [item.strip() for item in value]
    else:
        raise ValueError("expected a list of email addresses")
    bad = [item for item in items if item.startswith("mailto:") or not EMAIL.match(item)]
    if bad:
        raise ValueError(f"{shown(bad[0])}: value does not look like a valid email address (email-list)")
    if not items:
        raise ValueError("at least one email address (register_account requires contact)")
    return sorted(set(items))


def declare(
    state_id: str, target: str, name: object = None, adopt: object = False, **options: object
) -> Declared:
    """A checked ACME account declaration: ``name``, ``contact`` (email addresses, a set), ``directory``
    (the CA's directory URL, default Let's Encrypt V2), ``tos_url`` (agreement to the CA's Terms of
    Service), ``eab-kid`` and ``eab-hmac-key`` (both or neither; the key from pillar, both kept in
    ``Declared.secrets``: sent at register only), ``adopt``. Raises DeclarationError naming each bad key
    and its rule."""
    probe = identify(state_id, target, name=name)
    problems, values, secrets = [], {}, {}
    for key in sorted(set(options) - set(KEYS)):
        problems.append(f"{key}: not an ACME account option (unknown key)")
    try:
        values["contact"] = contacts(options.get("contact"))
    except ValueError as exc:
        problems.append(f"contact: {exc}")
    directory = options.get("directory")
    directory = DEFAULT_DIRECTORY if directory in (None, "") else directory
    if not isinstance(directory, str) or not DIRECTORY.fullmatch(directory):
        problems.append(f"directory: {shown(directory)} is not an http(s) URL (pve-acme-directory-url)")
    values["directory"] = directory
    tos = options.get("tos_url")
    if tos is not None:
        if not isinstance(tos, str) or not tos:
            problems.append("tos_url: expected the URL of the CA's Terms of Service (text)")
        values["tos_url"] = tos
    given = [key for key in EAB if options.get(key) not in (None, "")]
    if len(given) == 1:
        other = next(key for key in EAB if key not in given)
        problems.append(f"{given[0]}: requires {other} (ACMEAccount.pm register_account: requires)")
    for key in given:
        if not isinstance(options[key], str):
            problems.append(f"{key}: expected text, never shown")
        else:
            secrets[key] = options[key]
    if problems:
        raise DeclarationError(problems)
    found = probe.declaring(values, adopt)
    return replace(found, secrets=secrets)


def parse(data: object, decl: Declared) -> dict:
    """``GET /cluster/acme/account/{name}`` → ``contact`` (the addresses of ``account.contact``'s
    ``mailto:`` URIs, sorted), ``directory``, ``tos_url`` (the saved ``tos``, None without one),
    ``status`` (the CA's), ``location`` and the answer's ``fingerprint`` (the write guard's). Raises
    ValueError for another shape."""
    if not isinstance(data, Mapping) or not isinstance(data.get("account"), Mapping):
        raise ValueError("expected the ACME account's account object, directory and location")
    raw = data["account"].get("contact") or []
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError("expected account.contact to be a list of mailto: URIs")
    return {
        "contact": sorted({item.removeprefix("mailto:") for item in raw}),
        "directory": data.get("directory"),
        "tos_url": data.get("tos") or None,
        "status": data["account"].get("status"),
        "location": data.get("location"),
        "fingerprint": fingerprint(data),
    }


def _path(decl: Declared) -> str:
    return api_path("cluster", "acme", "account", decl.names["name"])


def create(decl: Declared) -> Call:
    """``POST /cluster/acme/account``: name, contact (comma-separated), directory, tos_url when declared,
    and the EAB pair (``Declared.secrets``)."""
    form = {"name": decl.names["name"], "contact": ",".join(decl.values["contact"])}
    form["directory"] = str(decl.values["directory"])
    if decl.values.get("tos_url"):
        form["tos_url"] = str(decl.values["tos_url"])
    form.update(decl.secrets)
    return Call("POST", INDEX, form=form)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /cluster/acme/account/{name}`` with the declared contact when its set differs; None else
    (``update_account`` changes nothing else)."""
    if live.get("contact") == decl.values["contact"]:
        return None
    return Call("PUT", _path(decl), form={"contact": ",".join(decl.values["contact"])})


def _index(ctx: PveContext) -> list[str]:
    """The account names ``GET /cluster/acme/account`` lists (any user; the run's shared listing).
    Raises what the read raises, PveMalformed for another shape."""
    rows = ctx.reads.shared(ctx.client, INDEX, ctx.broker.read())
    try:
        return _names(rows)
    except ValueError as why:
        raise PveMalformed("GET", INDEX, str(why)) from None


def _names(rows: object) -> list[str]:
    return [str(row.get("name")) for row in rows_of(rows, "ACME accounts")]


def _unlisted(data: object, decl: Declared) -> None:
    """The index read of ``INDEXED``: None (absent) when it does not list the account. Raises ValueError
    when it does (it appeared since ``for_cluster`` read the index) or has another shape."""
    if decl.names["name"] in _names(data):
        raise ValueError(f"it lists {decl.label} now, which only root@pam may read")


def _lane_line(ctx: PveContext) -> str:
    return (
        f"Configure proxmox:targets:{ctx.target.name}:root_lane: pvesh and run the states on a node of the "
        "cluster (a minion there, or salt-ssh to it)"
    )


def _root_only(what: str) -> str:
    return (
        f"only root@pam may {what} an ACME account (pve-manager API2/ACMEAccount.pm: the method has no "
        "permissions, and pve-access-control RPCEnvironment.pm check_api2_permissions answers anyone else "
        "`Permission check failed (user != root@pam)`), never an API token"
    )


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """The family as this target can read it: through its root lane once ``lane_check`` holds; without
    one, the index read by the read token, which proves an account absent (names only). Raises Refused
    for a lane whose preconditions fail, or an account the index lists on a target without a lane
    (``get_account`` is root-only), and what the index read raises."""
    if ctx.lane is not None:
        _, refusals = lane_check(ctx)
        if refusals:
            raise Refused([*refusals, f"{decl.label}: {_root_only('read')}; nothing was read or written."])
        return SPEC
    if decl.names["name"] in _index(ctx):
        raise Refused(
            f"{decl.label} exists (GET /cluster/acme/account lists it), and {_root_only('read')}. "
            f"{_lane_line(ctx)}; or declare it absent with removal: retain."
        )
    return INDEXED


def _meta(ctx: PveContext, directory: str) -> Mapping[str, object]:
    """``GET /cluster/acme/meta?directory=`` through the lane (``get_meta``: the CA's directory
    ``meta``, read from the CA by the node). Raises what the lane raises."""
    assert ctx.lane is not None
    meta = ctx.lane.request("GET", "cluster/acme/meta", params={"directory": directory})
    return meta if isinstance(meta, Mapping) else {}


def _by_hand(decl: Declared, action: str) -> str:
    name = decl.names["name"]
    if action == "delete":
        return f"`pvesh delete /cluster/acme/account/{name}`"
    contact = ",".join(decl.values["contact"])
    if action == "update":
        return f"`pvesh set /cluster/acme/account/{name} --contact {contact}`"
    if decl.secrets:
        return f"`pvenode acme account register {name} {contact} --directory {decl.values['directory']}`"
    tos = f" --tos_url {decl.values['tos_url']}" if decl.values.get("tos_url") else ""
    where = f"--directory {decl.values['directory']}{tos}"
    return f"`pvesh create /cluster/acme/account --name {name} --contact {contact} {where}`"


def users(ctx: PveContext, name: str) -> list[str]:
    """``<node>: acme (account=<name>)`` for each node whose certificate configuration uses account
    ``name`` (``GET /nodes`` then ``GET /nodes/{node}/config`` with the read token; ``NodeConfig.pm``
    ``get_acme_conf``: ``account`` defaults to ``default`` once any domain, ``acme``'s ``domains`` or an
    ``acmedomainN``, is configured). Raises what the reads raise."""
    credential = ctx.broker.read()
    found = []
    for node in node_names(ctx.client, credential):
        config = ctx.client.request("GET", api_path("nodes", node, "config"), credential)
        config = config if isinstance(config, Mapping) else {}
        raw = config.get("acme")
        try:
            acme = dict(pairs(raw)) if isinstance(raw, str) else {}
        except ValueError:
            acme = {}
        domains = bool(acme.get("domains")) or any(f"acmedomain{i}" in config for i in range(MAXDOMAINS + 1))
        account = acme.get("account") or ("default" if domains or "account" in acme else None)
        if account == name:
            found.append(f"{node}: acme (account={name})")
    return found


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """Every write without a lane (with the command to run as root); at register, EAB through a pvesh
    lane, and a directory whose Terms of Service or EAB the declaration lacks; at update, another
    ``directory`` or ``tos_url``; at deactivate, an account a node's certificate configuration uses."""
    verb = {"create": "register", "update": "update", "delete": "deactivate"}[action]
    if ctx.lane is None:
        return [
            f"{decl.label}: {_root_only(verb)}. {_lane_line(ctx)}; or run {_by_hand(decl, action)} as "
            "root on a node, and declare it with adopt: true."
        ]
    if action == "delete":
        named = users(ctx, decl.names["name"])
        if named:
            return [
                f"{decl.label} is the account of the certificate configuration of {'; '.join(named)} "
                "(pve-manager NodeConfig.pm get_acme_conf; the next order dies `ACME account config file "
                "'<name>' does not exist.`, API2/ACME.pm). Point those nodes at another account (pvenode "
                "config set --acme account=<name>) first."
            ]
        return []
    if action == "update":
        problems = []
        for key in ("directory", "tos_url"):
            if key in decl.values and live is not None and live.get(key) != decl.values[key]:
                problems.append(
                    f"{decl.label}: {key} is {shown(live.get(key))}, and PVE cannot change it (PUT "
                    "/cluster/acme/account/{name} takes contact only: ACMEAccount.pm update_account). "
                    "Declare the account as registered, or register another under a new name (and this one "
                    "absent)."
                )
        return problems
    problems = []
    if decl.secrets and ctx.lane is not None and not ctx.lane.carries_secrets:
        problems.append(
            f"{decl.label}: eab-hmac-key is a secret, and the pvesh lane would put it in pvesh's argv, "
            "readable by every user of the node (/proc/<pid>/cmdline), so it is never registered through "
            f"it. Configure root_lane: {{via: ticket, ...}} (the key then goes in the HTTPS form), or run "
            f"{_by_hand(decl, 'create')} as root on a node (it asks for the EAB key id and key at its "
            "prompt: pvenode.pm acme_register), then declare it with adopt: true."
        )
    meta = _meta(ctx, str(decl.values["directory"]))
    tos = meta.get("termsOfService")
    if isinstance(tos, str) and tos and not decl.values.get("tos_url"):
        problems.append(
            f"{decl.label}: the directory has Terms of Service ({tos}: GET /cluster/acme/meta "
            "termsOfService), and registering agrees to them (ACMEAccount.pm register_account tos_url). "
            f"Read them and declare tos_url: {tos} to agree."
        )
    if meta.get("externalAccountRequired") and not decl.secrets:
        problems.append(
            f"{decl.label}: the directory requires External Account Binding (GET /cluster/acme/meta "
            "externalAccountRequired), so the CA refuses a register without eab-kid and eab-hmac-key."
        )
    return problems


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What the CA and PVE do besides the write: a register creates an account at the CA; a deactivate
    ends it there for good and renames its file."""
    if action == "create":
        return [
            f"{decl.label}: registered at {decl.values['directory']} (a new account key; task acmeregister)"
        ]
    if action == "delete":
        return [
            f"{decl.label}: the delete deactivates it at the CA, which is irreversible (RFC 8555 7.3.6: a "
            "deactivated account is never usable again), and PVE renames its file to "
            f"_deactivated_{decl.names['name']}_<n> (ACMEAccount.pm $update_account)"
        ]
    return []


def export_values(live: Mapping[str, object], probe: Declared) -> dict:
    """``proxmox.export``: contact, directory and tos_url (when saved); never the EAB pair."""
    return {key: live[key] for key in ("contact", "directory", "tos_url") if live.get(key)}


def _is_absent(error: PveError, decl: Declared) -> bool:
    wording = f"ACME account config file '{decl.names['name']}' does not exist."
    return error.status == 400 and error.errors.get("name") == wording


SPEC = ObjectSpec(
    family=FAMILY,
    noun="ACME account",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence=(
        "HTTP 400 with name: \"ACME account config file '<name>' does not exist.\" (pve-manager "
        "API2/ACMEAccount.pm get_account)"
    ),
    is_absent=_is_absent,
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    # get_account shows no digest: the account is read again through the lane right before a write.
    write_guard=reread_guard(_path, "PVE keeps no digest of an ACME account", lane=True),
    delete_guard=True,
    refusals=refusals,
    side_effects=side_effects,
    for_cluster=for_cluster,
    # Each write forks a worker on the node that served it (the lane's); its UPID names that node.
    task_node=lambda decl: "localhost",
    export_names=export_by("name"),
    export_listings=lambda ctx: [(Call("GET", INDEX), {})],
    export_values=export_values,
    export_secrets=lambda live: set(),
    live_only=("status", "location", "fingerprint"),
    reads_with="root_lane",
    writes_with="root_lane",
)

#: The family on a target without a lane: read by the index with the read token, which proves an
#: account absent (``account_index`` lists every account file; ``for_cluster`` refuses a listed one).
INDEXED = replace(
    SPEC,
    read=lambda decl: Call("GET", INDEX),
    parse=_unlisted,
    confirm_absent=lambda ctx, credential, decl: None,
    reads_with="read",
)
