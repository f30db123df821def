"""A FakePve that keeps notification endpoints and matchers, as pve-manager and proxmox-notify do.

fakepve 0.5.0 checks the ``/cluster/notifications`` requests against PVE 9's schema and permissions, then
answers them with a generic handler that stores nothing. ``NotificationPve`` adds stateful routes in front
of it, written from pve-manager ``PVE/API2/Cluster/Notifications.pm`` over proxmox-notify (proxmox-rs
``proxmox-notify/src/api/{mod,sendmail,smtp,gotify,webhook,matcher}.rs``, ``lib.rs`` ``Config::new``,
``context/pve.rs`` ``DEFAULT_CONFIG``):

- ``notifications``: ``notifications.cfg``'s sections written by the API, ``{name: (type, data)}``;
  ``notification_secrets``: ``priv/notifications.cfg`` (the smtp ``password``, the gotify ``token``, the
  webhook ``secret`` entries), never in an answer (a webhook's read shows each secret's name only);
- the built-ins ``mail-to-root`` (sendmail, ``mailto-user root@pam``) and ``default-matcher`` (``mode
  all``, ``target mail-to-root``) are there from the start: a section equal to its built-in reads
  ``origin: builtin``, another one ``modified-builtin``, a user's ``user-created``; deleting a built-in
  only drops the written section (``ensure_safe_to_delete``);
- ``GET …/endpoints/{type}/{name}`` and ``…/matchers/{name}``: the section with ``origin`` and ``digest``,
  or 404 ``endpoint '<name>' not found`` / ``matcher '<name>' not found``; ``GET …/targets`` lists every
  endpoint (``name``, ``type``, ``origin``, ``comment``, ``disable``);
- ``POST``: ``Cannot create '<name>', an entity with the same name already exists`` (one namespace), a
  sendmail or smtp endpoint without a recipient, a matcher target that does not exist (404 ``endpoint
  '<name>' does not exist``); ``PUT``: the digest (400 ``detected modified configuration …``), ``delete``
  of the type's deletable keys only, the same checks, webhook ``secret`` entries without a value keeping
  the stored one (``secret '<name>' not known`` otherwise); ``DELETE``: 400 ``cannot delete '<name>',
  referenced by: <matchers>`` for an endpoint a matcher targets;
- webhook endpoints only from PVE 8.3 (``release_version``; pve-manager 8.2.9 added the routes): before,
  501 ``Method '<method> <path>' not implemented``.

Differences from PVE: the digest is one hash of the sections, not the file's bytes; values are not checked
against proxmox-notify's formats beyond what fakepve's schema check does; flags read back as JSON booleans.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json

from fakepve.model import PveError
from fakepve.routing import param_error

from tests.support.ceph import CephPve

BUILTINS = {
    "mail-to-root": (
        "sendmail",
        {"comment": "Send mails to root@pam's email address", "mailto-user": ["root@pam"]},
    ),
    "default-matcher": (
        "matcher",
        {"mode": "all", "target": ["mail-to-root"], "comment": "Route all notifications to mail-to-root"},
    ),
}
#: Each type's keys (secrets apart) and ``Deleteable<Type>Property``.
KEYS = {
    "sendmail": {"mailto", "mailto-user", "from-address", "author", "comment", "disable"},
    "smtp": {
        "server", "port", "mode", "username", "mailto", "mailto-user", "from-address", "author", "comment",
        "disable",
    },
    "gotify": {"server", "comment", "disable"},
    "webhook": {"url", "method", "header", "body", "comment", "disable"},
    "matcher": {
        "match-field", "match-severity", "match-calendar", "target", "mode", "invert-match", "comment",
        "disable",
    },
}  # fmt: skip
DELETABLE = {
    "sendmail": KEYS["sendmail"],
    "smtp": {"author", "comment", "disable", "mailto", "mailto-user", "password", "port", "username"},
    "gotify": {"comment", "disable"},
    "webhook": {"comment", "disable", "header", "body", "secret"},
    "matcher": KEYS["matcher"],
}
SECRET_KEYS = {"smtp": "password", "gotify": "token", "webhook": "secret"}
LISTS = {"mailto", "mailto-user", "header", "match-field", "match-severity", "match-calendar", "target"}
FLAGS = {"disable", "invert-match"}
UNDEFINED = "property is not defined in schema and the schema does not allow additional properties"


def _http(status: int, message: str) -> PveError:
    """``raise_api_error``: the HttpError's code and message."""
    return PveError(status, message)


def _pairs(entry: str) -> dict:
    found = {}
    for part in str(entry).split(","):
        key, _, value = part.partition("=")
        found[key.strip()] = value.strip()
    return found


class NotificationPve(CephPve):
    """CephPve with stateful notification endpoints and matchers (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.notifications: dict[str, tuple[str, dict]] = {}
        self.notification_secrets: dict[str, dict] = {}

    # ---------------------------------------------------------------------------------- scenarios

    def add_notification(self, name: str, type: str, secrets: dict | None = None, **data) -> dict:
        """An endpoint or matcher (``type`` ``matcher``) made outside this product (by hand in the GUI),
        ``data`` as stored; ``secrets`` as kept in ``priv/notifications.cfg``."""
        self.notifications[name] = (type, dict(data))
        if secrets:
            self.notification_secrets[name] = dict(secrets)
        return self.notifications[name][1]

    def sections(self) -> dict[str, tuple[str, dict, str]]:
        """``Config::new``: the written sections over the built-ins, each with its origin."""
        found = {}
        for name, (kind, data) in BUILTINS.items():
            found[name] = (kind, copy.deepcopy(data), "builtin")
        for name, (kind, data) in self.notifications.items():
            builtin = BUILTINS.get(name)
            origin = "user-created"
            if builtin is not None and builtin[0] == kind:
                origin = "builtin" if builtin[1] == data else "modified-builtin"
            found[name] = (kind, copy.deepcopy(data), origin)
        return found

    def notifications_digest(self) -> str:
        text = json.dumps(self.notifications, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    # ------------------------------------------------------------------------------------- routes

    def _routes_notifications(self):
        base = "/cluster/notifications"
        routes = [
            ("GET", f"{base}/targets", self._notify_targets),
            ("GET", f"{base}/matchers", lambda v, user: self._notify_list("matcher")),
            ("GET", f"{base}/matchers/{{name}}", lambda v, user: self._notify_read("matcher", v)),
            ("POST", f"{base}/matchers", lambda v, user: self._notify_create("matcher", v)),
            ("PUT", f"{base}/matchers/{{name}}", lambda v, user: self._notify_update("matcher", v)),
            ("DELETE", f"{base}/matchers/{{name}}", lambda v, user: self._notify_delete("matcher", v)),
        ]
        for kind in ("sendmail", "smtp", "gotify", "webhook"):
            path = f"{base}/endpoints/{kind}"
            routes += [
                ("GET", path, self._notify_bound(self._notify_list, kind, "GET", path, False)),
                ("POST", path, self._notify_bound(self._notify_create, kind, "POST", path)),
                (
                    "GET",
                    f"{path}/{{name}}",
                    self._notify_bound(self._notify_read, kind, "GET", f"{path}/{{name}}"),
                ),
                (
                    "PUT",
                    f"{path}/{{name}}",
                    self._notify_bound(self._notify_update, kind, "PUT", f"{path}/{{name}}"),
                ),
                (
                    "DELETE",
                    f"{path}/{{name}}",
                    self._notify_bound(self._notify_delete, kind, "DELETE", f"{path}/{{name}}"),
                ),
            ]
        return routes

    def _notify_bound(self, handler, kind, method, path, with_values=True):
        async def route(v, user):
            if kind == "webhook" and tuple(int(p) for p in str(self.release_version).split(".")[:2]) < (8, 3):
                raise PveError(501, f"Method '{method} {path}' not implemented")
            return await (handler(kind, v) if with_values else handler(kind))

        return route

    async def _notify_targets(self, v, user):
        return [
            {"name": name, "type": kind, "origin": origin, "comment": data.get("comment"),
             "disable": bool(data.get("disable"))}
            for name, (kind, data, origin) in sorted(self.sections().items())
            if kind != "matcher"
        ]  # fmt: skip

    def _notify_shown(self, name: str, kind: str, data: dict, origin: str) -> dict:
        shown = {"name": name, **data, "origin": origin}
        if kind == "webhook":  # ``api/webhook.rs`` ``get_endpoint``: the secrets' names only
            secrets = self.notification_secrets.get(name, {}).get("secret") or []
            if secrets:
                shown["secret"] = [f"name={_pairs(entry)['name']}" for entry in secrets]
        return shown

    async def _notify_list(self, kind):
        return [
            self._notify_shown(name, kind, data, origin)
            for name, (found, data, origin) in sorted(self.sections().items())
            if found == kind
        ]

    def _notify_get(self, kind: str, name: str) -> tuple[dict, str]:
        found = self.sections().get(name)
        if found is None or found[0] != kind:
            noun = "matcher" if kind == "matcher" else "endpoint"
            raise _http(404, f"{noun} '{name}' not found")
        return found[1], found[2]

    async def _notify_read(self, kind, v):
        data, origin = self._notify_get(kind, v["name"])
        return {**self._notify_shown(v["name"], kind, data, origin), "digest": self.notifications_digest()}

    def _notify_settings(self, kind: str, v: dict) -> tuple[dict, object]:
        """The keys sent, numbers and flags as proxmox-notify keeps them; the secret apart."""
        settings, secret = {}, None
        for key, value in v.items():
            if value is None or key in ("name", "digest", "delete"):
                continue
            if key == SECRET_KEYS.get(kind):
                secret = value
                continue
            if key not in KEYS[kind]:
                raise param_error(**{key: UNDEFINED})
            if key in FLAGS:
                value = str(value).lower() in ("1", "true", "yes", "on")
            elif key == "port":
                value = int(value)
            elif key in LISTS and not isinstance(value, list):
                value = [value]
            settings[key] = value
        return settings, secret

    def _notify_check(self, kind: str, data: dict) -> None:
        if kind in ("sendmail", "smtp") and not data.get("mailto") and not data.get("mailto-user"):
            raise _http(400, "must at least provide one recipient, either in mailto or in mailto-user")
        if kind == "matcher":
            endpoints = {name for name, (found, _, _) in self.sections().items() if found != "matcher"}
            for target in data.get("target") or []:
                if target not in endpoints:
                    raise _http(404, f"endpoint '{target}' does not exist")
        for header in data.get("header") or []:
            pairs = _pairs(header)
            if not pairs.get("value"):
                raise _http(400, f"header '{pairs.get('name')}' has empty value")
            try:
                base64.b64decode(pairs["value"], validate=True)
            except binascii.Error:
                raise _http(
                    400, f"header '{pairs.get('name')}' does not have valid base64 encoded data"
                ) from None

    async def _notify_create(self, kind, v):
        name = v["name"]
        if name in self.sections():
            raise _http(400, f"Cannot create '{name}', an entity with the same name already exists")
        settings, secret = self._notify_settings(kind, v)
        self._notify_check(kind, settings)
        self.notifications[name] = (kind, settings)
        if secret is not None:
            self.notification_secrets[name] = {SECRET_KEYS[kind]: secret}
        return None

    async def _notify_update(self, kind, v):
        name = v["name"]
        given = v.get("digest")
        if given and given != self.notifications_digest():
            raise _http(400, "detected modified configuration - file changed by other user? Try again.")
        data, _ = self._notify_get(kind, name)
        delete = v.get("delete") or []
        delete = delete if isinstance(delete, list) else [delete]
        for key in delete:
            if key not in DELETABLE[kind]:
                raise param_error(delete=f"value '{key}' is not a deletable property of a {kind}")
            if key == SECRET_KEYS.get(kind):
                self.notification_secrets.pop(name, None)
            data.pop(key, None)
        settings, secret = self._notify_settings(kind, v)
        data.update(settings)
        self._notify_check(kind, data)
        if secret is not None and kind == "webhook":
            secret = self._notify_webhook_secrets(name, secret)
        self.notifications[name] = (kind, data)
        if secret is not None:
            self.notification_secrets[name] = {SECRET_KEYS[kind]: secret}
        return None

    def _notify_webhook_secrets(self, name: str, entries) -> list:
        """``update_endpoint``: an entry with a value sets it, one with its name only keeps the stored one."""
        old = {
            _pairs(entry)["name"]: entry
            for entry in self.notification_secrets.get(name, {}).get("secret") or []
        }
        kept = []
        for entry in entries if isinstance(entries, list) else [entries]:
            pairs = _pairs(entry)
            if pairs.get("value"):
                kept.append(entry)
            elif pairs.get("name") in old:
                kept.append(old[pairs["name"]])
            else:
                raise _http(400, f"secret '{pairs.get('name')}' not known")
        return kept

    async def _notify_delete(self, kind, v):
        name = v["name"]
        self._notify_get(kind, name)
        origin = self.sections()[name][2]
        if kind != "matcher" and origin == "user-created":
            users = sorted(
                matcher
                for matcher, (found, data, _) in self.sections().items()
                if found == "matcher" and name in (data.get("target") or [])
            )
            if users:
                raise _http(400, f"cannot delete '{name}', referenced by: {', '.join(users)}")
        self.notifications.pop(name, None)  # a built-in goes back to its default
        self.notification_secrets.pop(name, None)
        return None
