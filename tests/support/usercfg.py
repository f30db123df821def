"""A FakePve that stores users, groups, API tokens and authentication realms, as pve-access-control does.

fakepve 0.5.0 validates ``/access/users``, ``/access/groups``, ``/access/users/{userid}/token/{tokenid}``
and ``/access/domains`` requests against PVE 9's schema and checks their permissions, then answers them
with synthesised values and stores nothing; its tokens live only in ``apitokens`` (set from Python).
``UserCfgPve`` adds stateful routes in front of its catch-all (the ``_routes_*`` mechanism, after
fakepve's schema and permission checks), written from pve-access-control 9.1.1:

- ``src/PVE/API2/User.pm``: ``create_user`` (500 ``create user failed: user 'X' already exists``, 500
  ``create user failed: no such group 'G'``; the password kept apart, as ``domain_set_password`` keeps
  it in ``priv/shadow.cfg``), ``read_user`` (``$extract_user_data`` with ``full``: ``groups`` sorted,
  ``tokens`` as ``{tokenid: {privsep, expire, comment}}``; 500 ``no such user ('X')``,
  ``check_user_exist``), ``update_user`` (``groups`` replaces the membership unless ``append``),
  ``delete_user`` (its group memberships, ACL entries and tokens go with it).
- ``token_index``, ``read_token`` (500 ``no such token 'T' for user 'U'``), ``generate_token`` (the
  secret returned once as ``value`` and registered in ``apitokens``, so it authenticates; 400 on
  ``tokenid`` ``Token already exists.``), ``update_token_info`` (``regenerate`` draws a new secret and
  keeps the token's ACL entries, pve-access-control 9.1.0 on; ``access_control_version`` below 9.1.0
  refuses the parameter as PVE's older schema does: 400 ``property is not defined in schema``),
  ``remove_token`` (its ACL entries stop counting: ``parse_user_config`` ignores an ACL entry naming a
  token that does not exist, "ignore invalid acl token").
- ``src/PVE/API2/Group.pm``: ``create_group`` (``comment`` kept only when true in Perl), ``read_group``
  (``{comment, members}``; 500 ``group 'G' does not exist``), ``update_group``, ``delete_group``
  (memberships and ACL entries go with it).
- ``src/PVE/API2/Domains.pm``: ``index``, ``create`` (``pam``/``pve`` names and types refused; the
  ``password`` kept apart, as ``on_add_hook`` writes it to ``priv/realm/<realm>.pw``),
  ``read`` (500 ``domain 'X' does not exist``; ``digest``; no ``password``), ``update`` (``delete``
  list, ``digest`` checked), ``delete`` (500 ``authentication domain 'X' does not exist``; PVE deletes
  ``pam`` and ``pve`` without refusing), ``sync`` (a task; ``dry-run`` writes nothing; only ``ldap`` and
  ``ad``). ``client-key`` of an OpenID realm is stored in domains.cfg and read back, as PVE does.
- ``GET /nodes/{node}/apt/versions`` (pve-manager ``PVE/API2/APT.pm`` ``versions``) lists
  ``libpve-access-control`` at ``access_control_version``.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from fakepve.model import PveError
from fakepve.routing import die, param_error, split_list

from tests.support.ceph import CephPve

_USER_KEYS = ("enable", "expire", "firstname", "lastname", "email", "comment", "keys")
_TOKEN_KEYS = ("privsep", "expire", "comment")


def _flag(value: object) -> int:
    return 0 if value in (0, "0", False, None, "") else 1


class UserCfgPve(CephPve):
    """FakePve with stored users (``user_cfg``: userid → record with ``groups`` and ``tokens``),
    group comments (``group_comments``), realms (``domains``: realm → options) and their passwords kept
    apart (``passwords``: userid → password; ``realm_passwords``: realm → bind password, never read
    back). ``access_control_version`` is the libpve-access-control version every node reports."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.user_cfg: dict[str, dict] = {}
        self.group_comments: dict[str, str] = {}
        self.passwords: dict[str, str] = {}
        self.domains: dict[str, dict] = {
            "pam": {"type": "pam", "comment": "Linux PAM standard authentication"},
            "pve": {"type": "pve", "comment": "Proxmox VE authentication server"},
        }
        self.realm_passwords: dict[str, str] = {}
        self.access_control_version = "9.1.1"
        self.syncs: list[dict] = []

    # ------------------------------------------------------------------------------ user.cfg

    def _user_record(self, userid: str) -> dict | None:
        """The user's record, made on first use for the users fakepve knows (its login users and the
        owners of its API tokens)."""
        if userid not in self.user_cfg and userid in super()._known_users():
            tokens = {
                token.split("!", 1)[1]: {"privsep": 1, "expire": 0}
                for token in self.apitokens
                if token.split("!", 1)[0] == userid
            }
            self.user_cfg[userid] = {"enable": 1, "expire": 0, "groups": set(), "tokens": tokens}
        return self.user_cfg.get(userid)

    def _known_users(self) -> set[str]:
        known = super()._known_users()
        for userid in known:
            self._user_record(userid)
        return set(self.user_cfg)

    def _digest(self) -> str:
        text = json.dumps(self.domains, sort_keys=True, default=sorted)
        return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - as PVE's digest

    def _routes_usercfg(self):
        user, token = "/access/users/{userid}", "/access/users/{userid}/token/{tokenid}"
        group, domain = "/access/groups/{groupid}", "/access/domains/{realm}"
        return [
            ("POST", "/access/users", self._user_create),
            ("GET", user, self._user_read),
            ("PUT", user, self._user_update),
            ("DELETE", user, self._user_delete),
            ("GET", f"{user}/token", self._token_index),
            ("GET", token, self._token_read),
            ("POST", token, self._token_create),
            ("PUT", token, self._token_update),
            ("DELETE", token, self._token_delete),
            ("POST", "/access/groups", self._group_create),
            ("GET", group, self._group_read),
            ("PUT", group, self._group_update),
            ("DELETE", group, self._group_delete),
            ("GET", "/access/domains", self._domain_index),
            ("POST", "/access/domains", self._domain_create),
            ("GET", domain, self._domain_read),
            ("PUT", domain, self._domain_update),
            ("DELETE", domain, self._domain_delete),
            ("POST", f"{domain}/sync", self._domain_sync),
            ("GET", "/nodes/{node}/apt/versions", self._apt_versions),
        ]

    def _user(self, userid: str) -> dict:
        self._known_users()
        record = self.user_cfg.get(userid)
        if record is None:
            raise die(f"no such user ('{userid}')")
        return record

    def _groups_of(self, value: object, fail: str) -> set[str]:
        groups = set()
        for group in split_list(value):
            if group not in self.groups:
                raise die(f"{fail}no such group '{group}'")
            groups.add(group)
        return groups

    async def _users_index(self, v, user):
        """``GET /access/users``: as AccessPve lists them, with each user's stored fields."""
        rows = await super()._users_index(v, user)
        for row in rows:
            record = self._user_record(row["userid"]) or {}
            row.update({key: record[key] for key in _USER_KEYS if record.get(key) not in (None, "")})
            if v.get("full") in (1, "1", True):
                row["groups"] = ",".join(sorted(record.get("groups", ())))
                row["tokens"] = [{"tokenid": name, **info} for name, info in sorted(record["tokens"].items())]
        return rows

    async def _user_create(self, v, user):
        """``create_user``: the record, its groups, the password kept apart."""
        fail = "create user failed: "
        userid = v["userid"]
        self._known_users()
        if userid in self.user_cfg:
            raise die(f"{fail}user '{userid}' already exists")
        groups = self._groups_of(v.get("groups"), fail) if v.get("groups") else set()
        record = {"enable": _flag(v.get("enable", 1)), "expire": 0, "groups": groups, "tokens": {}}
        if v.get("expire"):
            record["expire"] = int(v["expire"])
        for key in ("firstname", "lastname", "email", "comment", "keys"):
            if v.get(key):  # create_user keeps each only when true in Perl
                record[key] = v[key]
        if v.get("password") is not None:
            self.passwords[userid] = v["password"]
        self.user_cfg[userid] = record

    async def _user_read(self, v, user):
        """``read_user``: ``$extract_user_data($data, 1)``."""
        record = self._user(v["userid"])
        data = {key: record[key] for key in _USER_KEYS if record.get(key) is not None}
        data["groups"] = sorted(record["groups"])
        data["tokens"] = {name: dict(info) for name, info in record["tokens"].items()}
        return data

    async def _user_update(self, v, user):
        """``update_user``: each given key set; ``groups`` replaces the membership unless ``append``."""
        fail = "update user failed: "
        record = self._user(v["userid"])
        groups = self._groups_of(v.get("groups"), fail) if v.get("groups") else set()
        for key in ("enable", "expire"):
            if v.get(key) is not None:
                record[key] = int(_flag(v[key]) if key == "enable" else v[key])
        if v.get("groups") is not None:
            record["groups"] = (record["groups"] if v.get("append") else set()) | groups
        for key in ("firstname", "lastname", "email", "comment", "keys"):
            if v.get(key) is not None:
                record[key] = v[key]

    async def _user_delete(self, v, user):
        """``delete_user``: the user, its memberships, its ACL entries and its tokens."""
        userid = v["userid"]
        self._user(userid)
        del self.user_cfg[userid]
        self.passwords.pop(userid, None)
        for token in [t for t in self.apitokens if t.split("!", 1)[0] == userid]:
            del self.apitokens[token]
        self.acl_entries = {
            key: bit
            for key, bit in self.acl_entries.items()
            if not (key[1] == "user" and key[2] == userid)
            and not (key[1] == "token" and key[2].split("!", 1)[0] == userid)
        }

    # ----------------------------------------------------------------------------- tokens

    def _token(self, v) -> dict:
        record = self._user(v["userid"])
        info = record["tokens"].get(v["tokenid"])
        if info is None:
            raise die(f"no such token '{v['tokenid']}' for user '{v['userid']}'")
        return info

    async def _token_index(self, v, user):
        record = self._user(v["userid"])
        return [{"tokenid": name, **info} for name, info in sorted(record["tokens"].items())]

    async def _token_read(self, v, user):
        return dict(self._token(v))

    async def _token_create(self, v, user):
        """``generate_token``: the secret in the answer once, never again."""
        record = self._user(v["userid"])
        if v["tokenid"] in record["tokens"]:
            raise param_error(tokenid="Token already exists.")
        full = f"{v['userid']}!{v['tokenid']}"
        info = {"privsep": _flag(v.get("privsep", 1))}
        if v.get("expire") is not None:
            info["expire"] = int(v["expire"])
        if v.get("comment"):
            info["comment"] = v["comment"]
        record["tokens"][v["tokenid"]] = info
        value = str(uuid.uuid4())
        self.apitokens[full] = value
        return {"info": dict(info), "value": value, "full-tokenid": full}

    async def _token_update(self, v, user):
        """``update_token_info``: ``regenerate`` from libpve-access-control 9.1.0 on."""
        if v.get("regenerate") is not None and self._access_version() < (9, 1, 0):
            raise param_error(regenerate="property is not defined in schema and the schema does not allow "
                              "additional properties")  # fmt: skip
        info = self._token(v)
        for key in _TOKEN_KEYS:
            if v.get(key) is not None:
                info[key] = int(v[key]) if key != "comment" else v[key]
        if not info.get("comment"):
            info.pop("comment", None)
        for key in split_list(v.get("delete")):
            if key != "comment":
                raise param_error(delete=f"unknown option '{key}'")
            info.pop(key, None)
        answer = dict(info)
        if _flag(v.get("regenerate")):
            full = f"{v['userid']}!{v['tokenid']}"
            self.apitokens[full] = answer["value"] = str(uuid.uuid4())
            answer["full-tokenid"] = full
        return answer

    async def _token_delete(self, v, user):
        """``remove_token``: its ACL entries no longer count (``parse_user_config``)."""
        self._token(v)
        full = f"{v['userid']}!{v['tokenid']}"
        del self.user_cfg[v["userid"]]["tokens"][v["tokenid"]]
        self.apitokens.pop(full, None)
        self.acl_entries = {key: bit for key, bit in self.acl_entries.items() if key[2] != full}

    def _access_version(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.access_control_version.split("."))

    async def _apt_versions(self, v, user):
        """``versions``: the packages this fake pins (``OldVersion`` is the installed one)."""
        return [
            {"Package": "libpve-access-control", "OldVersion": self.access_control_version},
            {"Package": "pve-manager", "OldVersion": self.version},
        ]

    # ----------------------------------------------------------------------------- groups

    async def _groups_index(self, v, user):
        rows = await super()._groups_index(v, user)
        for row in rows:
            if self.group_comments.get(row["groupid"]):
                row["comment"] = self.group_comments[row["groupid"]]
            self._known_users()
            members = [u for u, r in sorted(self.user_cfg.items()) if row["groupid"] in r["groups"]]
            row["users"] = ",".join(members)
        return rows

    def _group(self, groupid: str) -> None:
        if groupid not in self.groups:
            raise die(f"group '{groupid}' does not exist")

    async def _group_create(self, v, user):
        groupid = v["groupid"]
        if groupid in self.groups:
            raise die(f"create group failed: group '{groupid}' already exists")
        self.groups.add(groupid)
        if v.get("comment"):
            self.group_comments[groupid] = v["comment"]

    async def _group_read(self, v, user):
        self._group(v["groupid"])
        self._known_users()
        members = [u for u, r in self.user_cfg.items() if v["groupid"] in r["groups"]]
        data = {"members": members}
        if v["groupid"] in self.group_comments:
            data["comment"] = self.group_comments[v["groupid"]]
        return data

    async def _group_update(self, v, user):
        try:
            self._group(v["groupid"])
        except PveError:
            raise die(f"update group failed: group '{v['groupid']}' does not exist") from None
        if v.get("comment") is not None:
            self.group_comments[v["groupid"]] = v["comment"]

    async def _group_delete(self, v, user):
        groupid = v["groupid"]
        if groupid not in self.groups:
            raise die(f"delete group failed: group '{groupid}' does not exist")
        self.groups.discard(groupid)
        self.group_comments.pop(groupid, None)
        for record in self.user_cfg.values():
            record["groups"].discard(groupid)
        self.acl_entries = {
            k: b for k, b in self.acl_entries.items() if not (k[1] == "group" and k[2] == groupid)
        }

    # ----------------------------------------------------------------------------- realms

    async def _domain_index(self, v, user):
        return [
            {
                "realm": realm,
                "type": data["type"],
                **({"comment": data["comment"]} if data.get("comment") else {}),
            }
            for realm, data in sorted(self.domains.items())
        ]

    async def _domain_create(self, v, user):
        fail = "add auth server failed: "
        realm, kind = v["realm"], v["type"]
        if realm in self.domains:
            raise die(f"{fail}domain '{realm}' already exists")
        if realm in ("pam", "pve"):
            raise die(f"{fail}unable to use reserved name '{realm}'")
        if kind in ("pam", "pve"):
            raise die(f"{fail}unable to create builtin type '{kind}'")
        password = v.get("password")
        config = {k: val for k, val in v.items() if k not in ("realm", "password", "check-connection")}
        self.domains[realm] = config
        if password is not None:
            self.realm_passwords[realm] = password

    async def _domain_read(self, v, user):
        data = self.domains.get(v["realm"])
        if data is None:
            raise die(f"domain '{v['realm']}' does not exist")
        return {**data, "digest": self._digest()}

    async def _domain_update(self, v, user):
        fail = "update auth server failed: "
        realm = v["realm"]
        if v.get("digest") and v["digest"] != self._digest():
            raise die(f"{fail}detected modified configuration - file changed by other user? Try again.")
        if realm not in self.domains:
            raise die(f"{fail}domain '{realm}' does not exist")
        data = self.domains[realm]
        for key in split_list(v.get("delete")):
            data.pop(key, None)
            if key == "password":
                self.realm_passwords.pop(realm, None)
        for key, value in v.items():
            if key in ("realm", "delete", "digest", "password", "check-connection"):
                continue
            data[key] = value
        if v.get("password") is not None:
            self.realm_passwords[realm] = v["password"]

    async def _domain_delete(self, v, user):
        realm = v["realm"]
        if realm not in self.domains:
            raise die(f"delete auth server failed: authentication domain '{realm}' does not exist")
        del self.domains[realm]
        self.realm_passwords.pop(realm, None)

    async def _domain_sync(self, v, user):
        """``sync``: a task (``auth-realm-sync``, or ``auth-realm-sync-test`` for a dry run) that
        records what it was asked; no directory is reached, so it syncs nobody."""
        realm = v["realm"]
        data = self.domains.get(realm)
        if data is None:
            raise param_error(realm="Realm does not exist.")
        if data["type"] not in ("ldap", "ad"):
            raise die(f"Cannot sync realm type '{data['type']}'! Only LDAP/AD realms can be synced.")
        dry = _flag(v.get("dry-run"))
        self.syncs.append({"realm": realm, "dry-run": dry})

        async def body():
            return None

        node = sorted(self.nodes)[0]
        return await self.task(node, "auth-realm-sync-test" if dry else "auth-realm-sync", realm, user, body)
