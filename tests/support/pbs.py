"""A stateful staging fake of a Proxmox Backup Server's API, served over TLS on loopback.

Written from proxmox-backup's source (3.2.4, ``4940514b``; the S3 backend, the path-not-empty and
nesting checks from 4.x), it keeps what the product reads and writes:

- datastores (``src/api2/config/datastore.rs``): ``GET /config/datastore`` (listed when the caller holds
  Datastore.Audit on ``/datastore/<name>``, ``digest`` beside ``data``), ``POST`` (Datastore.Allocate on
  ``/datastore``; ``create_datastore``: ``datastore '<name>' already exists.``, ``expected an absolute
  path``, a path nested in another datastore's (``DataStoreConfig::ensure_not_nested``); a PBS task
  ``create-datastore`` whose worker fails ``datastore path not empty`` (``do_create_datastore``) on a
  directory holding data; ``prune-schedule``/``keep-*`` become a prune job and are cleared from the
  datastore's config), ``GET /config/datastore/{name}`` (``read_datastore``: Datastore.Audit, ``no such
  datastore '<name>'`` from proxmox-section-config ``lookup_json``), ``PUT`` (``update_datastore``:
  Datastore.Modify, ``delete``, ``digest``, ``datastore prune settings have been replaced by prune jobs``
  for a ``keep-*``/``prune-schedule``), ``DELETE`` (``delete_datastore``: Datastore.Allocate, a
  ``delete-datastore`` task; only ``destroy-data`` removes the data, and without ``keep-job-configs``
  the datastore's prune jobs and ACL entries go);
- ``GET /admin/datastore`` (``src/api2/admin/datastore.rs`` ``get_datastore_list``: the stores the caller
  may see);
- tasks: ``GET /nodes/{node}/tasks/{upid}/status`` (``src/api2/node/tasks.rs`` ``get_task_status``: the
  task's owner or Sys.Audit on ``/system/tasks``); UPIDs as ``pbs-api-types`` ``UPID`` prints them
  (``UPID:node:pid:pstart:task_id:starttime:type:id:auth_id:``);
- API tokens (``src/api2/access/user.rs``): ``GET /access/users/{userid}/token``, ``GET``/``POST``/
  ``DELETE /access/users/{userid}/token/{token-name}`` (``generate_token`` answers ``{tokenid, value}``,
  the secret only then; ``token '<name>' for user '<userid>' already exists.``; Permissions.Modify on
  ``/access/users`` or the caller's own user);
- ACL entries (``src/api2/access/acl.rs``): ``GET /access/acl`` (``read_acl``: everything with
  Sys.Audit on ``/access/acl``, else the caller's own tokens' entries) and ``PUT`` (``update_acl``:
  Permissions.Modify on ``/access/acl``; ``no such API token.``, ``no such user.``), roles as
  ``pbs-api-types`` ``acl.rs`` defines them;
- the certificate (``src/api2/node/certificates.rs`` ``get_info``: Sys.Modify on
  ``/system/certificates``), whose ``fingerprint`` is the SHA-256 of the served certificate.

Errors are PBS's: the HTTP status (400 for a ``bail!``/``param_bail!``, 403 ``permission check
failed``, 401 for a token that does not authenticate, 404 where ``http_bail!(NOT_FOUND)``) and the
message as the plain body (proxmox-rest-server ``formatter.rs`` ``format_error``). Where the fake
differs from PBS: ``param_bail!``'s text is PBS's ``parameter verification failed`` list shortened to
``parameter '<name>': <message>``; a datastore's data is a set of paths, not a chunk store; tasks end
before the call that started them answers, unless ``hold_tasks`` is set (then a task stays
``running``, as ``get_task_status`` answers while the worker is active, with no ``exitstatus``); a
token's privileges are the token's ACL entries only (PBS also caps them by its user's,
``CachedUserInfo::lookup_privs``).

The seeded server has a ``read`` and a ``provision`` token (``ServedPbs``) and the user ``pve-backup@pbs``
the example pillar's ``pbs`` storage makes its token for.

``ServedPbs`` serves it in-process (tests, the demo); ``python -m tests.support.pbs --state-dir DIR``
is the process the sandbox starts and stops by its PID: it writes ``DIR/pbs.json`` and prints
``ready <url>``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import ssl
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from fakepve.certs import make_cert

HOST = "127.0.0.1"
NODE = "pbs"

#: pbs-api-types ``acl.rs``: each role's privileges.
ROLES: dict[str, frozenset[str]] = {
    "Admin": frozenset(
        [
            "Sys.Audit",
            "Sys.Modify",
            "Sys.PowerManagement",
            "Datastore.Audit",
            "Datastore.Allocate",
            "Datastore.Modify",
            "Datastore.Read",
            "Datastore.Verify",
            "Datastore.Backup",
            "Datastore.Prune",
            "Permissions.Modify",
            "Remote.Audit",
            "Remote.Modify",
            "Remote.Read",
            "Sys.Console",
            "Tape.Audit",
            "Tape.Modify",
            "Tape.Write",
            "Tape.Read",
            "Realm.Allocate",
        ]
    ),
    "NoAccess": frozenset(),
    "Audit": frozenset({"Sys.Audit", "Datastore.Audit"}),
    "DatastoreAdmin": frozenset(
        [
            "Datastore.Audit",
            "Datastore.Modify",
            "Datastore.Read",
            "Datastore.Verify",
            "Datastore.Backup",
            "Datastore.Prune",
        ]
    ),
    "DatastoreReader": frozenset({"Datastore.Audit", "Datastore.Verify", "Datastore.Read"}),
    "DatastoreBackup": frozenset({"Datastore.Backup"}),
    "DatastorePowerUser": frozenset({"Datastore.Prune", "Datastore.Backup"}),
    "DatastoreAudit": frozenset({"Datastore.Audit"}),
}

#: pbs-api-types ``PROXMOX_SAFE_ID_REGEX`` with ``DATASTORE_SCHEMA``'s 3 to 32 characters.
DATASTORE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._\-]{2,31}\Z")
#: pbs-api-types ``PROXMOX_TOKEN_NAME_REGEX``.
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*\Z")
KEEP = ("keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly")
#: ``DataStoreConfig``'s properties (pbs-api-types ``datastore.rs``), ``backend`` from 4.x.
DATASTORE_KEYS = frozenset(
    {
        "name",
        "path",
        "comment",
        "gc-schedule",
        "prune-schedule",
        *KEEP,
        "verify-new",
        "notify-user",
        "notify",
        "notification-mode",
        "tuning",
        "maintenance-mode",
        "backend",
    }
)
#: ``update_datastore``'s ``DeletableProperty``.
DELETABLE = frozenset(DATASTORE_KEYS - {"name", "path", "backend"})

READ_TOKEN_ID = "salt-read@pbs!plan"
PROVISION_TOKEN_ID = "salt-provision@pbs!apply"
#: The user the example pillar's pbs storage makes its token for (pillar_examples/pbs.sls).
BACKUP_USER = "pve-backup@pbs"
#: Where the demo and the sandbox publish the PBS tokens in OpenBao (``<path>/read``, ``<path>/provision``,
#: inside the PVE tokens' mount, which the salt-proxmox-creds policy reads).
PBS_CREDS_PATH = "proxmox/creds/pbs"


class PbsError(Exception):
    """An API error: ``status`` and PBS's message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _param(name: str, message: str) -> PbsError:
    return PbsError(400, f"parameter '{name}': {message}")


def _bool(value: object) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


class FakePbs:
    """The server's state and its API, independent of HTTP (``handle``)."""

    def __init__(self, fingerprint: str = ""):
        self.lock = threading.RLock()
        self.fingerprint = fingerprint
        self.users: set[str] = {"root@pam"}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.token_secrets: dict[str, str] = {}
        #: ``(path, auth_id, role, propagate)``.
        self.acl: list[tuple[str, str, str, bool]] = []
        self.datastores: dict[str, dict[str, Any]] = {}
        self.prune_jobs: dict[str, dict[str, Any]] = {}
        #: Paths holding data (a chunk store, or files put there by hand: ``seed_data``).
        self.data: set[str] = set()
        self.tasks: dict[str, dict[str, Any]] = {}
        #: Tasks started while set stay running (``_task``).
        self.hold_tasks = False
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self._task_id = 0

    # ---------------------------------------------------------------- state helpers

    def add_token(self, token_id: str, *grants: tuple[str, str]) -> tuple[str, str]:
        """Register user and token ``token_id`` with a fresh secret and ``(path, role)`` grants."""
        user = token_id.split("!", 1)[0]
        self.users.add(user)
        secret = str(uuid.uuid4())
        self.tokens[token_id] = {"tokenid": token_id, "enable": True}
        self.token_secrets[token_id] = secret
        for path, role in grants:
            self.acl.append((path, token_id, role, True))
        return token_id, secret

    def seed_data(self, path: str) -> None:
        """Put data at ``path`` by hand (a datastore created there fails: path not empty)."""
        self.data.add(path.rstrip("/"))

    def digest(self, what: object) -> str:
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()

    def privileges(self, auth_id: str, path: str) -> set[str]:
        """The privileges ``auth_id`` holds on ``path`` (``CachedUserInfo::lookup_privs``: the most
        specific path with entries wins; propagate carries an entry below its path)."""
        if auth_id == "root@pam":
            return set(ROLES["Admin"])
        parts = [part for part in path.strip("/").split("/") if part]
        found: set[str] = set()
        for depth in range(len(parts) + 1):
            here = "/" + "/".join(parts[:depth])
            entries = [e for e in self.acl if e[0] == here and e[1] == auth_id]
            if not entries:
                continue
            exact = depth == len(parts)
            found = set()
            for _, _, role, propagate in entries:
                if exact or propagate:
                    found |= ROLES.get(role, frozenset())
        return found

    def _need(self, auth_id: str, path: str, *privs: str) -> None:
        if not set(privs) & self.privileges(auth_id, path):
            raise PbsError(403, "permission check failed")

    def _task(self, auth_id: str, kind: str, worker_id: str, error: str | None) -> str:
        self._task_id += 1
        start = int(time.time())
        upid = (
            f"UPID:{NODE}:{os.getpid():08X}:{0:08X}:{self._task_id:08X}:{start:08X}:{kind}:{worker_id}:"
            f"{auth_id}:"
        )
        self.tasks[upid] = {
            "upid": upid,
            "node": NODE,
            "type": kind,
            "id": worker_id,
            "user": auth_id,
            "starttime": start,
            "status": "stopped",
            "exitstatus": error or "OK",
        }
        if self.hold_tasks:
            # src/api2/node/tasks.rs get_task_status: ``running``, and no exitstatus, while
            # proxmox_rest_server::worker_is_active.
            self.tasks[upid].update(status="running", exitstatus=None)
        return upid

    # ---------------------------------------------------------------- the API

    def handle(self, method: str, path: str, params: dict[str, Any], auth: str | None) -> tuple[Any, dict]:
        """Answer one call: ``(data, extra envelope members)``. Raises PbsError."""
        with self.lock:
            self.requests.append((method, path, dict(params)))
            auth_id = self._authenticate(auth)
            parts = [unquote(part) for part in path.strip("/").split("/")]
            route = (method, *parts)
            if route == ("GET", "version"):
                return {"version": "4.0.11", "release": "4.0", "repoid": "fake"}, {}
            if parts[:2] == ["config", "datastore"]:
                return self._datastore(method, parts[2:], params, auth_id)
            if parts[:2] == ["admin", "datastore"] and len(parts) == 2 and method == "GET":
                return [
                    {"store": name, "comment": cfg.get("comment")}
                    for name, cfg in sorted(self.datastores.items())
                    if self.privileges(auth_id, f"/datastore/{name}")
                ], {}
            if len(parts) == 5 and parts[0] == "nodes" and parts[2] == "tasks" and parts[4] == "status":
                return self._task_status(parts[3], auth_id), {}
            if len(parts) == 4 and parts[0] == "nodes" and parts[2:] == ["certificates", "info"]:
                self._need(auth_id, "/system/certificates", "Sys.Modify")
                return [
                    {
                        "filename": "proxy.pem",
                        "fingerprint": self.fingerprint,
                        "subject": f"CN={NODE}",
                        "issuer": f"CN={NODE}",
                        "san": [HOST],
                        "public-key-type": "rsaEncryption",
                    }
                ], {}
            if parts[:2] == ["access", "users"] and len(parts) >= 4 and parts[3] == "token":
                return self._token(method, parts[2], parts[4:], params, auth_id)
            if parts[:2] == ["access", "users"] and len(parts) == 3 and method == "GET":
                # src/api2/access/user.rs read_user: Sys.Audit on /access/users, or the caller's own user.
                if auth_id.split("!", 1)[0] != parts[2]:
                    self._need(auth_id, "/access/users", "Sys.Audit")
                if parts[2] not in self.users:
                    raise PbsError(400, f"no such user '{parts[2]}'")
                return {"userid": parts[2], "enable": True}, {"digest": self.digest(sorted(self.users))}
            if parts == ["access", "acl"]:
                return self._acl(method, params, auth_id)
            raise PbsError(404, f"Path '/api2/json/{path.strip('/')}' not found.")

    def _authenticate(self, auth: str | None) -> str:
        # src/server/auth.rs extract_auth_data: ``PBSAPIToken=<tokenid>:<secret>``.
        if not auth or not auth.startswith("PBSAPIToken="):
            raise PbsError(401, "authentication failed - no authentication credentials provided.")
        token_id, _, secret = auth.removeprefix("PBSAPIToken=").rpartition(":")
        if self.token_secrets.get(token_id) != secret or not secret:
            raise PbsError(401, "authentication failed - invalid token value")
        return token_id

    def _task_status(self, upid: str, auth_id: str) -> dict:
        task = self.tasks.get(upid)
        if task is None:
            raise PbsError(400, f"unable to read task status of {upid}")
        if task["user"] != auth_id:
            self._need(auth_id, "/system/tasks", "Sys.Audit")
        return {
            key: task[key]
            for key in ("upid", "node", "type", "id", "user", "starttime", "status", "exitstatus")
            if task[key] is not None
        }

    def _datastore_digest(self) -> str:
        return self.digest(self.datastores)

    def _check_digest(self, params: dict, current: str) -> None:
        # src/tools/mod.rs detect_modified_configuration_file.
        if params.get("digest") and params["digest"] != current:
            raise PbsError(400, "detected modified configuration - file changed by other user? Try again.")

    def _datastore(self, method: str, rest: list[str], params: dict, auth_id: str) -> tuple[Any, dict]:
        if not rest and method == "GET":
            rows = [
                dict(cfg)
                for name, cfg in sorted(self.datastores.items())
                if "Datastore.Audit" in self.privileges(auth_id, f"/datastore/{name}")
            ]
            return rows, {"digest": self._datastore_digest()}
        if not rest and method == "POST":
            return self._create_datastore(params, auth_id), {}
        if len(rest) != 1:
            raise PbsError(404, "Path not found.")
        name = rest[0]
        if method == "GET":
            self._need(auth_id, f"/datastore/{name}", "Datastore.Audit")
            if name not in self.datastores:
                raise PbsError(400, f"no such datastore '{name}'")
            return dict(self.datastores[name]), {"digest": self._datastore_digest()}
        if method == "PUT":
            self._need(auth_id, f"/datastore/{name}", "Datastore.Modify")
            self._update_datastore(name, params)
            return None, {}
        if method == "DELETE":
            self._need(auth_id, f"/datastore/{name}", "Datastore.Allocate")
            return self._delete_datastore(name, params, auth_id), {}
        raise PbsError(405, f"Method {method} not implemented.")

    def _create_datastore(self, params: dict, auth_id: str) -> str:
        self._need(auth_id, "/datastore", "Datastore.Allocate")
        unknown = sorted(set(params) - DATASTORE_KEYS - {"reuse-datastore", "overwrite-in-use"})
        if unknown:
            raise _param(unknown[0], "schema does not allow additional properties.")
        name = str(params.get("name") or "")
        if not DATASTORE_NAME.match(name):
            raise _param("name", "value does not match the regex pattern")
        path = str(params.get("path") or "")
        if not path:
            raise _param("path", "parameter is missing and it is not optional.")
        if name in self.datastores:
            raise _param("name", f"datastore '{name}' already exists.")
        if not path.startswith("/"):
            raise _param("path", f"expected an absolute path, '{path}' is not")
        path = path.rstrip("/") or "/"
        for other, cfg in self.datastores.items():
            theirs = cfg["path"]
            if path == theirs or path.startswith(theirs + "/") or theirs.startswith(path + "/"):
                raise _param("path", f"paths on the same device must not be nested, '{path}' in '{other}'")
        config = {key: value for key, value in params.items() if key in DATASTORE_KEYS}
        config["path"] = path
        error = None
        if path in self.data and not _bool(params.get("reuse-datastore")):
            error = "datastore path not empty"
        elif path.count("/") < 1 or path == "/":
            error = "cannot create datastore in root path"
        if error is None:
            schedule = config.pop("prune-schedule", None)
            keep = {key: config.pop(key) for key in KEEP if key in config}
            if schedule:
                job = f"default-{name}-{uuid.uuid4()}"[:32]
                self.prune_jobs[job] = {"id": job, "store": name, "schedule": schedule, **keep}
            for key in KEEP:
                config.pop(key, None)
            self.datastores[name] = config
            self.data.add(path)
        return self._task(auth_id, "create-datastore", name, error)

    def _update_datastore(self, name: str, params: dict) -> None:
        self._check_digest(params, self._datastore_digest())
        if name not in self.datastores:
            raise PbsError(400, f"no such datastore '{name}'")
        data = dict(self.datastores[name])
        for key in ("name", "path", "backend"):
            if key in params:
                raise _param(key, "schema does not allow additional properties.")
        deletes = params.get("delete") or []
        for key in [deletes] if isinstance(deletes, str) else deletes:
            for item in str(key).split(","):
                if item not in DELETABLE:
                    raise _param("delete", f"value '{item}' is not defined in the enumeration.")
                data.pop(item, None)
        for key in (*KEEP, "prune-schedule"):
            if key in params:
                raise _param(key, "datastore prune settings have been replaced by prune jobs")
        for key, value in params.items():
            if key in ("delete", "digest"):
                continue
            if key not in DATASTORE_KEYS:
                raise _param(key, "schema does not allow additional properties.")
            if key == "comment" and not str(value).strip():
                data.pop("comment", None)
            else:
                data[key] = str(value).strip() if key == "comment" else value
        self.datastores[name] = data

    def _delete_datastore(self, name: str, params: dict, auth_id: str) -> str:
        self._check_digest(params, self._datastore_digest())
        if name not in self.datastores:
            raise PbsError(404, f"datastore '{name}' does not exist.")
        config = self.datastores.pop(name)
        if not _bool(params.get("keep-job-configs")):
            self.prune_jobs = {k: v for k, v in self.prune_jobs.items() if v["store"] != name}
            self.acl = [e for e in self.acl if not e[0].startswith(f"/datastore/{name}")]
        if _bool(params.get("destroy-data")):
            self.data.discard(config["path"])
        return self._task(auth_id, "delete-datastore", name, None)

    def _token(
        self, method: str, userid: str, rest: list[str], params: dict, auth_id: str
    ) -> tuple[Any, dict]:
        own = auth_id.split("!", 1)[0] == userid
        if not own:
            need = "Sys.Audit" if method == "GET" else "Permissions.Modify"
            self._need(auth_id, "/access/users", need)
        digest = self.digest(sorted(self.tokens))
        if not rest:
            if method != "GET":
                raise PbsError(405, f"Method {method} not implemented.")
            return [
                {
                    "token-name": tid.split("!", 1)[1],
                    "tokenid": tid,
                    **{k: v for k, v in t.items() if k != "tokenid"},
                }
                for tid, t in sorted(self.tokens.items())
                if tid.split("!", 1)[0] == userid
            ], {"digest": digest}
        name = rest[0]
        if not TOKEN_NAME.match(name):
            raise _param("token-name", "value does not match the regex pattern")
        token_id = f"{userid}!{name}"
        if method == "GET":
            if token_id not in self.tokens:
                raise PbsError(400, f"no such token '{token_id}'")
            return dict(self.tokens[token_id]), {"digest": digest}
        if method == "POST":
            self._check_digest(params, digest)
            if userid not in self.users:
                raise PbsError(400, f"no such user '{userid}'")
            if token_id in self.tokens:
                raise PbsError(400, f"token '{name}' for user '{userid}' already exists.")
            secret = str(uuid.uuid4())
            self.tokens[token_id] = {
                "tokenid": token_id,
                **{k: params[k] for k in ("comment", "enable", "expire") if k in params},
            }
            self.token_secrets[token_id] = secret
            return {"tokenid": token_id, "value": secret}, {}
        if method == "DELETE":
            self._check_digest(params, digest)
            if token_id not in self.tokens:
                raise PbsError(400, f"token '{name}' of user '{userid}' does not exist.")
            del self.tokens[token_id]
            del self.token_secrets[token_id]
            return None, {}
        raise PbsError(405, f"Method {method} not implemented.")

    def _acl(self, method: str, params: dict, auth_id: str) -> tuple[Any, dict]:
        digest = self.digest(self.acl)
        if method == "GET":
            audit = "Sys.Audit" in self.privileges(auth_id, "/access/acl")
            user = auth_id.split("!", 1)[0]
            path = params.get("path")
            exact = _bool(params.get("exact"))
            rows = []
            for entry_path, ugid, role, propagate in self.acl:
                if not audit and not ("!" in ugid and ugid.split("!", 1)[0] == user):
                    continue
                if path is not None and not (
                    entry_path == path or (not exact and entry_path.startswith(path.rstrip("/") + "/"))
                ):
                    continue
                rows.append(
                    {
                        "path": entry_path,
                        "ugid": ugid,
                        "ugid_type": "user",
                        "roleid": role,
                        "propagate": propagate,
                    }
                )
            return rows, {"digest": digest}
        if method != "PUT":
            raise PbsError(405, f"Method {method} not implemented.")
        if "Permissions.Modify" not in self.privileges(auth_id, "/access/acl"):
            raise PbsError(400, "Unprivileged API tokens can't set ACL items.")
        self._check_digest(params, digest)
        path, role = str(params.get("path") or ""), str(params.get("role") or "")
        target = params.get("auth-id")
        if role not in ROLES:
            raise _param("role", "value does not match the regex pattern")
        if not target:
            raise PbsError(400, "missing 'userid' or 'group' parameter.")
        delete = _bool(params.get("delete"))
        if not delete and target not in self.tokens and target not in self.users:
            raise PbsError(400, "no such API token." if "!" in target else "no such user.")
        self.acl = [e for e in self.acl if not (e[0] == path and e[1] == target and e[2] == role)]
        if not delete:
            self.acl.append((path, target, role, _bool(params.get("propagate", "1"))))
        return None, {}


def _handler(pbs: FakePbs) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            return

        def _params(self) -> dict[str, Any]:
            url = urlsplit(self.path)
            found: dict[str, Any] = {}
            pairs = parse_qs(url.query, keep_blank_values=True)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if body and self.headers.get("Content-Type", "").startswith("application/json"):
                found.update(json.loads(body))
            elif body:
                for key, values in parse_qs(body.decode(), keep_blank_values=True).items():
                    pairs.setdefault(key, []).extend(values)
            for key, values in pairs.items():
                found[key] = values if key == "delete" and len(values) > 1 else values[0]
            return found

        def _answer(self) -> None:
            url = urlsplit(self.path)
            params = self._params()
            prefix = "/api2/json/"
            try:
                if not url.path.startswith(prefix):
                    raise PbsError(404, "Path not found.")
                data, extra = pbs.handle(
                    self.command, url.path[len(prefix) :], params, self.headers.get("Authorization")
                )
                body = json.dumps({"data": data, **extra}).encode()
                status = 200
            except PbsError as exc:
                status, body = exc.status, exc.message.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json;charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

    return Handler


class ServedPbs:
    """A seeded FakePbs serving ``https://127.0.0.1:<free port>`` from a thread.

    After ``start()``: ``pbs`` (the state, ``pbs.requests``), ``url``, ``cafile`` (the served
    certificate, for ``verify``), ``fingerprint`` (its SHA-256, as ``certificates/info`` gives it),
    ``read_token`` and ``provision_token`` (``(token_id, secret)``). The read token holds Audit on ``/``
    and Sys.Modify on ``/system/certificates`` (``get_info``); the provision token DatastoreAdmin on
    ``/datastore`` (Datastore.Allocate through Admin on ``/datastore``) and Permissions.Modify on
    ``/access`` (tokens of other users, ACL entries).
    """

    def __init__(self) -> None:
        self.pbs: FakePbs | None = None
        self.url = ""
        self.cafile = ""
        self.fingerprint = ""
        self.read_token: tuple[str, str] = ("", "")
        self.provision_token: tuple[str, str] = ("", "")
        self._dir: str | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ServedPbs:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ServedPbs(url={self.url!r})"

    def start(self) -> ServedPbs:
        self._dir = tempfile.mkdtemp(prefix="salt-proxmox-pbs-")
        try:
            certfile, keyfile, der = make_cert(self._dir, hosts=(HOST,))
            digest = hashlib.sha256(der).hexdigest()
            self.fingerprint = ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))
            pbs = FakePbs(self.fingerprint)
            pbs.users.add(BACKUP_USER)
            self.read_token = pbs.add_token(READ_TOKEN_ID, ("/", "Audit"))
            pbs.acl.append(("/system/certificates", READ_TOKEN_ID, "Admin", True))
            self.provision_token = pbs.add_token(
                PROVISION_TOKEN_ID, ("/datastore", "Admin"), ("/access", "Admin"), ("/system/tasks", "Audit")
            )
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile, keyfile)
            os.unlink(keyfile)
            server = ThreadingHTTPServer((HOST, 0), _handler(pbs))
            server.daemon_threads = True
            server.socket = context.wrap_socket(server.socket, server_side=True)
            self._server, self.pbs = server, pbs
            self._thread = threading.Thread(target=server.serve_forever, name="fakepbs", daemon=True)
            self._thread.start()
            self.url = f"https://{HOST}:{server.server_address[1]}"
            self.cafile = certfile
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop serving and remove the certificate directory. Safe to call twice."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)
        self._server = self._thread = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def pbs_targets(served: ServedPbs, name: str = "backup1") -> dict[str, Any]:
    """``proxmox:pbs_targets`` naming ``served`` with its tokens as static credentials."""
    return {
        name: {
            "members": [served.url],
            "verify": served.cafile,
            "credentials": {
                "source": "static",
                "read": dict(zip(("token_id", "secret"), served.read_token, strict=True)),
                "provision": dict(zip(("token_id", "secret"), served.provision_token, strict=True)),
            },
        }
    }


def requests_of(served: ServedPbs, start: int = 0) -> list[tuple[str, str, bytes]]:
    """The fake's requests from ``start`` as fakepve logs PVE's: ``(method, /path, body)`` with the
    parameters form-encoded (a list repeated, as PBS reads an array)."""
    assert served.pbs is not None
    return [
        (method, f"/{path}", urlencode(params, doseq=True).encode())
        for method, path, params in served.pbs.requests[start:]
    ]


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.pbs --state-dir DIR``: serve, write ``DIR/pbs.json`` (0600: url,
    cafile, fingerprint, the read and provision tokens), print ``ready <url>``, serve until SIGTERM
    or SIGINT."""
    from tests.support.cluster import catch_stop_signals, private_dir, private_json

    parser = argparse.ArgumentParser(prog="python -m tests.support.pbs", description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", required=True, help="private directory for pbs.json (made 0700)")
    args = parser.parse_args(argv)
    stopping = catch_stop_signals()
    state = private_dir(args.state_dir)
    with ServedPbs() as served:
        info = {
            "url": served.url,
            "cafile": served.cafile,
            "fingerprint": served.fingerprint,
            "read": dict(zip(("token_id", "secret"), served.read_token, strict=True)),
            "provision": dict(zip(("token_id", "secret"), served.provision_token, strict=True)),
        }
        with private_json(state / "pbs.json", info):
            print(f"ready {served.url}", flush=True)
            stopping.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
