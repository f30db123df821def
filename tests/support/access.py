"""A FakePve that stores roles and ACL entries, as pve-access-control does.

fakepve 0.5.0 validates ``/access/roles``, ``/access/acl``, ``/access/users``, ``/access/groups``
and ``/cluster/options`` requests against PVE's schema and
checks their permissions, but answers them with synthesised values and stores nothing: every
``GET /access/roles/<id>`` answers the PVEAuditor privileges, ``GET /access/acl`` one ``fake`` row.
A declared role or ACL entry could never be read back. ``AccessPve`` adds stateful routes for
them, in front of fakepve's catch-all (its ``_routes_*`` mechanism), following
pve-access-control 9.1.1:

- ``src/PVE/API2/Role.pm``: ``POST /access/roles`` refuses an id starting with ``PVE`` (400 on
  ``roleid``) and an existing id (500 ``create role failed: role 'X' already exists``);
  ``GET /access/roles/<id>`` answers ``{priv: 1}`` or 500 ``role 'X' does not exist``; ``PUT``
  replaces the set unless ``append``; built-in roles cannot be changed or deleted; an invalid
  privilege is 500 ``... invalid privilege 'X'``.
- ``src/PVE/API2/ACL.pm``: ``GET /access/acl`` lists ``{path, type, ugid, roleid, propagate}``,
  every entry for a caller with Sys.Audit on /access, else only paths it may modify
  (Permissions.Modify); ``PUT /access/acl`` needs one of users/groups/tokens, normalises the
  path, checks it (for an add) and that each role, user, group and token exists, then sets the
  entries' propagate bit or, with ``delete``, removes them.

Stored entries do not grant privileges: fakepve's own ``grant()`` stays the permission model.

It also answers ``GET /nodes/<node>/lxc/<vmid>/pending`` with the config's ``digest`` row that PVE
gives and fakepve 0.5.0 leaves out: pve-container ``src/PVE/API2/LXC.pm`` ``vm_pending`` passes
``load_config``'s hash, digest included, to pve-guest-common ``config_with_pending_array``.

``task_warnings`` (task type → N) ends a task of that type that would have ended ``OK`` with
``WARNINGS: N`` instead, as pve-common ``RESTEnvironment::fork_worker`` does when the worker logged
N warnings (``TASK WARNINGS: N``); fakepve 0.5.0 never ends a task so.
"""

from __future__ import annotations

import re

from fakepve import FakePve
from fakepve.model import PveError
from fakepve.routing import die, param_error, split_list
from fakepve.shapes import PRIVILEGES, ROLES


def _normalize(path: str) -> str | None:
    """pve-access-control ``normalize_path``."""
    if not path:
        return None
    path = re.sub(r"/+", "/", path)
    path = path[:-1] if path.endswith("/") else path
    path = path or "/"
    if not path.startswith("/"):
        path = "/" + path
    return path if re.fullmatch(r"[A-Za-z0-9.\-_/]+", path) else None


#: A short form of ``check_path``: the families a test or the demo uses.
_CHECKED = re.compile(
    r"^(?:/|/access(?:/groups(?:/[\w.\-]+)?|/realm(?:/[\w.\-]+)?)?|/nodes(?:/[\w.\-]+)?"
    r"|/pool(?:/[\w.\-]+(?:/[\w.\-]+){0,2})?|/sdn(?:/.*)?|/storage(?:/[\w.\-]+)?|/vms(?:/[1-9][0-9]{2,})?"
    r"|/mapping(?:/[\w.\-]+){0,2})$"
)


class AccessPve(FakePve):
    """FakePve with stored roles (``roles``: roleid → set of privileges) and ACL entries
    (``acl_entries``: (path, type, ugid, roleid) → propagate 0/1). ``groups`` is the set of group
    ids ACL entries may name; users are fakepve's login users and the owners of its API tokens."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.roles: dict[str, set[str]] = {name: set(privs) for name, privs in ROLES.items()}
        self.special_roles = set(ROLES)
        self.acl_entries: dict[tuple[str, str, str, str], int] = {}
        self.groups: set[str] = set()
        self.task_warnings: dict[str, int] = {}
        #: ``datacenter.cfg`` as ``GET /cluster/options`` answers it (e.g. ``{"tag-style":
        #: {"case-sensitive": 1, "ordering": "config"}}``); fakepve synthesises that answer.
        self.datacenter: dict = {}

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        upid = await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)
        record = self.tasks[upid]
        count = self.task_warnings.get(ttype)
        if count and record.get("exitstatus") == "OK":
            record["exitstatus"] = f"WARNINGS: {count}"
            record["log"][-1] = f"TASK WARNINGS: {count}"
        return upid

    def _routes_access_store(self):
        roles, role = "/access/roles", "/access/roles/{roleid}"
        return [
            ("GET", roles, self._roles_index),
            ("POST", roles, self._role_create),
            ("GET", role, self._role_read),
            ("PUT", role, self._role_update),
            ("DELETE", role, self._role_delete),
            ("GET", "/access/acl", self._acl_read),
            ("PUT", "/access/acl", self._acl_update),
            ("GET", "/access/users", self._users_index),
            ("GET", "/access/groups", self._groups_index),
            ("GET", "/cluster/options", self._cluster_options),
        ]

    async def _lxc_pending(self, user, v):
        rows = await super()._lxc_pending(user, v)
        ct = self._find_ct(v["node"], v["vmid"])
        return [{"key": "digest", "value": ct.digest()}, *rows]

    # -------------------------------------------------------------------------------------- roles

    def _add_privs(self, roleid: str, privs: object, fail: str) -> None:
        for priv in split_list(privs):
            if priv not in PRIVILEGES:
                raise die(f"{fail}invalid privilege '{priv}'")
            self.roles[roleid].add(priv)

    async def _roles_index(self, v, user):
        return [
            {"roleid": name, "privs": ",".join(sorted(privs)), "special": int(name in self.special_roles)}
            for name, privs in sorted(self.roles.items())
        ]

    async def _role_create(self, v, user):
        roleid = v["roleid"]
        if roleid.upper().startswith("PVE"):
            reserved = "cannot use role ID starting with the (case-insensitive) 'PVE' namespace"
            raise param_error(roleid=reserved)
        fail = "create role failed: "
        if roleid in self.roles:
            raise die(f"{fail}role '{roleid}' already exists")
        self.roles[roleid] = set()
        try:
            self._add_privs(roleid, v.get("privs"), fail)
        except PveError:
            del self.roles[roleid]
            raise

    async def _role_read(self, v, user):
        privs = self.roles.get(v["roleid"])
        if privs is None:
            raise die(f"role '{v['roleid']}' does not exist")
        return dict.fromkeys(sorted(privs), 1)

    async def _role_update(self, v, user):
        roleid = v["roleid"]
        if roleid in self.special_roles:
            raise die(f"auto-generated role '{roleid}' cannot be modified")
        fail = "update role failed: "
        if roleid not in self.roles:
            raise die(f"{fail}role '{roleid}' does not exist")
        before = set(self.roles[roleid])
        if not v.get("append"):
            self.roles[roleid] = set()
        try:
            self._add_privs(roleid, v.get("privs"), fail)
        except PveError:
            self.roles[roleid] = before
            raise

    async def _role_delete(self, v, user):
        roleid = v["roleid"]
        if roleid in self.special_roles:
            raise die(f"auto-generated role '{roleid}' cannot be deleted")
        if roleid not in self.roles:
            raise die(f"delete role failed: role '{roleid}' does not exist")
        del self.roles[roleid]

    # ---------------------------------------------------------------------------------------- ACL

    def _known_users(self) -> set[str]:
        return {self.user, *self.users, *(token.split("!")[0] for token in self.apitokens)}

    async def _users_index(self, v, user):
        """``GET /access/users``: every known user (``full``: with its tokens) for a caller with
        Sys.Audit on /access/groups, else only the caller (pve-access-control ``API2/User.pm``)."""
        audit = self.allowed(user, "/access/groups", "Sys.Audit")
        rows = []
        for userid in sorted(self._known_users()):
            if not audit and userid != user.split("!")[0]:
                continue
            row = {"userid": userid, "enable": 1}
            if v.get("full") in (1, "1", True):
                row["tokens"] = [
                    {"tokenid": token.split("!", 1)[1], "privsep": 1}
                    for token in sorted(self.apitokens)
                    if token.split("!", 1)[0] == userid
                ]
            rows.append(row)
        return rows

    async def _groups_index(self, v, user):
        """``GET /access/groups``: the groups a caller with Sys.Audit on /access/groups sees."""
        audit = self.allowed(user, "/access/groups", "Sys.Audit")
        return [{"groupid": group} for group in sorted(self.groups) if audit]

    async def _cluster_options(self, v, user):
        """``GET /cluster/options`` (pve-manager ``API2/Cluster.pm`` get_options): ``datacenter``
        as ``datacenter.cfg`` holds it, ``tag-style`` as the parsed object PVE returns."""
        return dict(self.datacenter)

    async def _acl_read(self, v, user):
        audit = self.allowed(user, "/access", "Sys.Audit")
        return [
            {"path": path, "type": kind, "ugid": ugid, "roleid": roleid, "propagate": propagate}
            for (path, kind, ugid, roleid), propagate in sorted(self.acl_entries.items())
            if audit or self.allowed(user, path, "Permissions.Modify")
        ]

    async def _acl_update(self, v, user):
        if not (v.get("users") or v.get("groups") or v.get("tokens")):
            message = "either 'users', 'groups' or 'tokens' is required."
            raise param_error(users=message, groups=message, tokens=message)
        path = _normalize(v["path"])
        if path is None or (not v.get("delete") and not _CHECKED.match(path)):
            raise param_error(path=f"invalid ACL path '{v['path']}'")
        fail = "ACL update failed: "
        propagate = 0 if v.get("propagate") in (0, "0", False) else 1
        changes = {}
        for roleid in split_list(v["roles"]):
            if roleid not in self.roles:
                raise die(f"{fail}role '{roleid}' does not exist")
            for group in split_list(v.get("groups")):
                if group not in self.groups:
                    raise die(f"{fail}group '{group}' does not exist")
                changes[(path, "group", group, roleid)] = propagate
            for userid in split_list(v.get("users")):
                if userid not in self._known_users():
                    raise die(f"{fail}user '{userid}' does not exist")
                changes[(path, "user", userid, roleid)] = propagate
            for tokenid in split_list(v.get("tokens")):
                if tokenid not in self.apitokens:
                    owner, _, name = tokenid.partition("!")
                    raise die(f"{fail}no such token '{name}' for user '{owner}'")
                changes[(path, "token", tokenid, roleid)] = propagate
        for key, bit in changes.items():
            if v.get("delete"):
                self.acl_entries.pop(key, None)
            else:
                self.acl_entries[key] = bit
