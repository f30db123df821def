"""A ``pbs`` storage wired to a PBS target's datastore: both sides in one plan.

A ``pbs`` storage definition (``proxmox_storage``, pve-storage ``PBSPlugin.pm``) declaring
``pbs_target`` (a ``proxmox:pbs_targets`` name) beside its ``datastore`` gets from the product what an
operator would otherwise copy by hand between the two GUIs:

- ``fingerprint``: the PBS certificate's SHA-256 (proxmox-backup ``src/api2/node/certificates.rs``
  ``get_info``: Sys.Modify on ``/system/certificates`` for the PBS read credential), compared and
  written like any option;
- an API token for this PVE cluster, ``<pbs_user>!<pbs_token>`` (``pbs_token`` defaults to
  ``pve-<PVE target>``), made on PBS (``src/api2/access/user.rs`` ``generate_token``, which answers the
  secret once) or reused when it exists and OpenBao holds its secret; the storage's ``username``;
- the least role PVE needs on ``/datastore/<datastore>`` for the token and its user (PBS caps a token
  by its user's privileges, ``CachedUserInfo::lookup_privs``): ``DatastoreBackup`` ("backup and
  restore owned backups", pbs-api-types ``acl.rs``: Datastore.Backup), which is what PVE's
  ``PBSPlugin.pm`` does (backups are owned by the token that made them), or ``DatastorePowerUser``
  (Datastore.Prune besides) when the storage declares ``prune-backups``, which PVE runs on PBS
  (``PBSPlugin.pm`` ``prune_backups``); set with ``PUT /access/acl`` (``update_acl``);
- the token's secret, kept at the declared OpenBao KV version 2 path ``pbs_secret_path``
  (``<mount>/data/<path>``, as ``openbao.creds.kv_payload`` reads one: ``{token_id, secret}``) and
  written as the storage's ``password``. It is never a state argument, a return, a log line, grains or
  an ownership row: it goes from PBS's answer to OpenBao and to PVE's form, and back from OpenBao to
  PVE's form, nowhere else.

``server`` (and ``port``) default to the PBS target's first member.

Rotation: ``pbs_token_serial`` (an integer, 1 by default) is the storage's ``secret_serial``; a serial
other than the one the storage's row recorded deletes the token (``delete_token``), makes it anew,
stores the new secret and writes it to the storage. A token whose secret OpenBao does not hold (or a
recorded storage whose token is gone) is refused at plan, naming the serial to raise: PBS never shows a
secret again. ``username``, ``password``, ``fingerprint`` and ``secret_serial`` are the product's here,
so declaring them is refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import hvac.exceptions
import requests

from salt_proxmox.errors import DeclarationError, SaltProxmoxError, shown
from salt_proxmox.openbao.client import describe_failure
from salt_proxmox.openbao.creds import kv_payload
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.pbs import datastore
from salt_proxmox.pbs.client import PBS_PORT
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError
from salt_proxmox.simple import lifecycle
from salt_proxmox.simple.spec import Call, ObjectSpec, will_exist

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

#: The declaration keys of the wiring.
KEYS = ("pbs_target", "pbs_user", "pbs_token", "pbs_secret_path", "pbs_token_serial")
#: What the product writes itself on a wired storage.
OWN = ("username", "password", "fingerprint", "secret_serial")
#: pbs-api-types ``PROXMOX_USER_ID_REGEX`` in short: ``name@realm``.
USERID = re.compile(r"^[^\s:/@!]+@[A-Za-z0-9_][A-Za-z0-9._\-]*\Z")
#: pbs-api-types ``PROXMOX_TOKEN_NAME_REGEX``.
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*\Z")
#: What the plan shows in place of a secret that does not exist yet (never sent: a plan writes nothing).
PENDING = "(the new token's secret)"


def role_for(declared: Mapping[str, object]) -> str:
    """The least PBS role PVE needs on the datastore (module docstring)."""
    return "DatastorePowerUser" if declared.get("prune-backups") not in (None, "") else "DatastoreBackup"


def _kv(path: str) -> tuple[str, str]:
    """``(mount, path)`` of a KV version 2 ``<mount>/data/<path>``."""
    mount, _, rest = path.strip("/").partition("/data/")
    return mount, rest


def check(pve_target: str, declared: Mapping[str, object], wiring: Mapping[str, object]) -> dict:
    """The checked wiring: ``{target, user, token, token_id, path, serial, role, datastore}``. Raises
    DeclarationError naming each bad key."""
    problems = []
    if declared.get("type") != "pbs":
        problems.append(
            f"pbs_target: only a pbs storage backs up to a PBS datastore, not {shown(declared.get('type'))}"
        )
    ds = declared.get("datastore")
    if not isinstance(ds, str) or not ds:
        problems.append("datastore: a pbs storage wired to a PBS target names its datastore")
    for key in OWN:
        if key in declared:
            problems.append(
                f"{key}: with pbs_target the product writes the storage's {key} itself (the PBS token, its "
                "secret from OpenBao, the certificate fingerprint, pbs_token_serial): leave it out"
            )
    user = wiring.get("pbs_user")
    if not isinstance(user, str) or not USERID.match(user):
        problems.append(f"pbs_user: expected the PBS user owning the token (user@realm), got {shown(user)}")
    default = re.sub(r"[^A-Za-z0-9._\-]", "-", f"pve-{pve_target}")
    token = wiring.get("pbs_token") or default
    if not isinstance(token, str) or not TOKEN_NAME.match(token):
        problems.append(f"pbs_token: {shown(token)} is not a PBS token name (letters, digits, '.', '_', '-')")
    path = wiring.get("pbs_secret_path")
    if not isinstance(path, str) or not all(_kv(path)):
        problems.append(
            f"pbs_secret_path: expected a KV version 2 path <mount>/data/<path> in OpenBao, got {shown(path)}"
        )
    serial = wiring.get("pbs_token_serial", 1)
    if isinstance(serial, bool) or not isinstance(serial, int) or serial < 1:
        problems.append(f"pbs_token_serial: expected a positive integer, got {shown(serial)}")
    if problems:
        raise DeclarationError(problems)
    return {
        "target": wiring["pbs_target"],
        "user": user,
        "token": token,
        "token_id": f"{user}!{token}",
        "path": path.strip("/"),
        "serial": serial,
        "role": role_for(declared),
        "datastore": ds,
    }


def _fingerprint(pbs: PveContext) -> str:
    rows = pbs.client.request(
        "GET", api_path("nodes", "localhost", "certificates", "info"), pbs.broker.read()
    )
    for row in rows or []:
        if isinstance(row, Mapping) and row.get("filename") == "proxy.pem" and row.get("fingerprint"):
            return str(row["fingerprint"])
    raise SaltProxmoxError(
        f"PBS target {pbs.target.name}: GET /nodes/localhost/certificates/info shows no proxy.pem fingerprint"
    )


def _absent_answer(error: PveError, *wordings: str) -> bool:
    return error.status == 400 and any(error.message.startswith(wording) for wording in wordings)


def _token_exists(pbs: PveContext, wired: Mapping) -> bool:
    path = api_path("access", "users", wired["user"], "token", wired["token"])
    try:
        pbs.client.request("GET", path, pbs.broker.read())
    except PveError as error:
        if _absent_answer(error, "no such token"):  # proxmox-section-config lookup_json
            return False
        raise
    return True


def _user_problem(pbs: PveContext, wired: Mapping) -> str | None:
    try:
        pbs.client.request("GET", api_path("access", "users", wired["user"]), pbs.broker.read())
    except PveError as error:
        if _absent_answer(error, "no such user"):
            return (
                f"pbs_user: PBS target {pbs.target.name} has no user {wired['user']}; the token is made for "
                "an existing user (generate_token): create it on PBS (Configuration > Access Control)"
            )
        raise
    return None


def _acl_missing(pbs: PveContext, wired: Mapping) -> list[str]:
    path = f"/datastore/{wired['datastore']}"
    rows = pbs.client.request("GET", "access/acl", pbs.broker.read(), params={"path": path, "exact": "1"})
    held = {(row.get("ugid"), row.get("roleid")) for row in rows or [] if isinstance(row, Mapping)}
    return [who for who in (wired["token_id"], wired["user"]) if (who, wired["role"]) not in held]


def _bao_secret(pbs: PveContext, wired: Mapping) -> dict | None:
    try:
        answer = pbs.broker.openbao_client().read(wired["path"])
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise SaltProxmoxError(f"reading OpenBao {wired['path']}: {describe_failure(exc)}") from None
    data = kv_payload(answer.get("data")) if isinstance(answer, Mapping) else None
    return dict(data) if isinstance(data, Mapping) else None


def _datastore_problem(pbs: PveContext, wired: Mapping) -> str | None:
    probe = datastore.SPEC.identify("wiring", pbs.target.name, name=wired["datastore"])
    if (
        will_exist(pbs, datastore.FAMILY, probe.identity)
        or lifecycle.read(pbs, datastore.SPEC, probe) is not None
    ):
        return None
    return (
        f"datastore: PBS target {pbs.target.name} has no datastore {wired['datastore']} and this run does "
        "not create it: declare it under proxmox:pbs:datastores, or name one PBS has"
    )


def present(
    ctx: PveContext, pbs: PveContext, spec: ObjectSpec, test: bool, state_id: str, wiring: Mapping, **declared
) -> Outcome:
    """Plan (``test``) or apply a ``pbs`` storage ``declared`` (the storage state's arguments) wired by
    ``wiring`` (``KEYS``) to PBS context ``pbs``: the PBS token, its ACL entries and its OpenBao secret
    first, then the storage through ``spec`` (the storage family) with ``username``, ``fingerprint``,
    ``password`` and ``secret_serial`` filled in. Never raises for a known failure."""
    outcome = Outcome()
    name = str(declared.get("name"))
    try:
        wired = check(ctx.target.name, declared, wiring)
        problems = [p for p in (_user_problem(pbs, wired), _datastore_problem(pbs, wired)) if p]
        if problems:
            raise DeclarationError(problems)
        fingerprint = _fingerprint(pbs)
        exists = _token_exists(pbs, wired)
        kept = _bao_secret(pbs, wired)
        row = ctx.ownership.row(row_key(ctx.target.name, spec.family, name)) or {}
        recorded = (row.get("declared") or {}).get("secret_serial")
        rotate = exists and recorded is not None and recorded != wired["serial"]
        usable = kept is not None and kept.get("token_id") == wired["token_id"] and bool(kept.get("secret"))
        if exists and not rotate and not usable:
            raise DeclarationError(
                f"pbs_token: PBS token {wired['token_id']} exists, but OpenBao {wired['path']} does not "
                "hold its secret, and PBS shows a secret only when it makes the token. Raise "
                "pbs_token_serial to make it anew (the storage gets the new secret)."
            )
        if not exists and recorded == wired["serial"]:
            raise DeclarationError(
                f"pbs_token: PBS token {wired['token_id']} is gone, and the storage still holds its secret. "
                "Raise pbs_token_serial to make a new token and write its secret to the storage."
            )
        missing = _acl_missing(pbs, wired)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    make = not exists or rotate
    changes: dict = {}
    if make:
        changes["pbs_token"] = {
            "old": wired["token_id"] if rotate else None,
            "new": f"{wired['token_id']} (new)",
        }
        changes["pbs_secret"] = {"old": None, "new": f"OpenBao {wired['path']} (never shown)"}
    if missing:
        changes["pbs_acl"] = {
            "old": None,
            "new": f"{wired['role']} on /datastore/{wired['datastore']} for {', '.join(missing)}",
        }
    storage = {
        **where(pbs, declared),
        "username": wired["token_id"],
        "fingerprint": fingerprint,
        "secret_serial": wired["serial"],
        "password": PENDING if make else str((kept or {}).get("secret")),
    }
    if changes:
        # The storage's own judgement first: a storage the plan refuses gets no PBS write either, so
        # the apply sends only what its plan listed.
        judged = lifecycle.present(ctx, spec, True, state_id, **storage)
        if judged.result is False or test:
            if judged.result is not False:
                judged.changes = {**changes, **judged.changes}
                judged.result = None
                if make:
                    judged.comment.insert(
                        0,
                        f"{wired['token_id']}: would be made on PBS target {pbs.target.name} and its secret "
                        f"kept in OpenBao {wired['path']}, then written as the storage's password",
                    )
            return judged
        try:
            if make:
                storage["password"] = _write_pbs(pbs, wired, rotate, missing, name, ctx.target.name)
            else:
                _grant(pbs, wired, missing)
        except SaltProxmoxError as exc:
            return outcome.fail(f"{state_id}: {exc}", "The storage was not written.")
    result = lifecycle.present(ctx, spec, test, state_id, **storage)
    result.changes = {**changes, **result.changes}
    return result


def storage_present(
    ctx: PveContext, spec: ObjectSpec, test: bool, state_id: str, linked: Mapping | None = None, **declared
) -> Outcome:
    """The storage family's present (``registry`` ``Kind.present_run``): a storage whose declaration
    names a ``pbs_target`` is wired to it (``present``, with ``linked["pbs_target"]`` the context of that
    PBS target, which the execution module builds from ``proxmox:pbs_targets``), any other one is the
    simple lifecycle's. Never raises for a known failure."""
    if declared.get("pbs_target") is None:
        return lifecycle.present(ctx, spec, test, state_id, **declared)
    wiring = {key: declared.pop(key) for key in KEYS if key in declared}
    return present(ctx, (linked or {})["pbs_target"], spec, test, state_id, wiring, **declared)


def where(pbs: PveContext, declared: Mapping[str, object]) -> dict:
    """``declared`` with ``server`` and ``port`` taken from the PBS target's first member when the storage
    declares none (``port`` only when not PBS's 8007, PBSPlugin.pm's default)."""
    member = urlsplit(pbs.target.members[0])
    found = dict(declared)
    if "server" not in found and member.hostname:
        found["server"] = member.hostname
        if "port" not in found and member.port not in (None, PBS_PORT):
            found["port"] = member.port
    return found


def _grant(pbs: PveContext, wired: Mapping, who: list[str]) -> None:
    """``PUT /access/acl`` of the role on the datastore for each of ``who`` (``update_acl``)."""
    for auth_id in who:
        form = {"path": f"/datastore/{wired['datastore']}", "role": wired["role"], "auth-id": auth_id}
        lifecycle.send(pbs, pbs.broker.provision(), _call("PUT", "access/acl", form))


def _call(method: str, path: str, form: Mapping[str, str] | None = None) -> Call:
    return Call(method, path, form=dict(form) if form else None)


def _write_pbs(
    pbs: PveContext, wired: Mapping, rotate: bool, missing: list[str], storage: str, cluster: str
) -> str:
    """Make (or remake) the token, keep its secret in OpenBao, grant the role; returns the secret."""
    path = api_path("access", "users", wired["user"], "token", wired["token"])
    credential = pbs.broker.provision()
    if rotate:
        lifecycle.send(pbs, credential, _call("DELETE", path))
    answer = lifecycle.send(
        pbs, credential, _call("POST", path, {"comment": f"PVE cluster {cluster}, storage {storage}"})
    )
    secret = answer.get("value") if isinstance(answer, Mapping) else None
    if not isinstance(secret, str) or not secret:
        raise SaltProxmoxError(
            f"PBS made token {wired['token_id']} but answered no secret; delete it on PBS and run again"
        )
    mount, sub = _kv(wired["path"])
    try:
        pbs.broker.openbao_client().secrets.kv.v2.create_or_update_secret(
            path=sub, secret={"token_id": wired["token_id"], "secret": secret}, mount_point=mount
        )
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise SaltProxmoxError(
            f"PBS token {wired['token_id']} was made, but OpenBao {wired['path']} could not keep its secret "
            f"({describe_failure(exc)}); raise pbs_token_serial and run again"
        ) from None
    _grant(pbs, wired, [wired["token_id"], wired["user"]] if rotate else missing)
    return secret
