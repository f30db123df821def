"""The names pve-access-control gives users, groups, API tokens and realms, checked before any call.

Source: pve-access-control 9.1.1 ``src/PVE/Auth/Plugin.pm`` (``$realm_regex``, ``$user_regex``,
``$groupname_regex``, ``verify_username``: 3 to 64 characters, ``pve_verify_realm``; the ``realm``
standard option's ``maxLength => 32``) and ``src/PVE/AccessControl.pm`` (``$token_subid_regex``, the
realm's pattern; ``split_tokenid``).
"""

from __future__ import annotations

import re

from salt_proxmox.errors import shown
from salt_proxmox.simple.acl import GROUPID as GROUP
from salt_proxmox.simple.acl import USERID as USER

REALM = re.compile(r"^[A-Za-z][A-Za-z0-9.\-_]+\Z")
TOKEN_SUBID = REALM
#: The realms PVE keeps by itself (``Plugin.pm`` ``parse_config`` adds them; ``Domains.pm`` ``create``
#: refuses their names and types). PVE deletes either on request: this product never does.
BUILTIN_REALMS = ("pam", "pve")
#: The cluster's superuser: PVE lets it be deleted and re-creates it bare (``Plugin.pm``
#: ``parse_config``), so this product never manages it, nor a token of it.
SUPERUSER = "root@pam"


def userid_problem(userid: str) -> str | None:
    """None for a userid PVE takes (``verify_username``), else its reason."""
    if len(userid) < 3:
        return f"user name {shown(userid)} is too short"
    if len(userid) > 64:
        return f"user name {shown(userid)} is too long ({len(userid)} > 64)"
    if not USER.match(userid):
        return f"value {shown(userid)} does not look like a valid user name (name@realm)"
    return None


def realm_problem(realm: str) -> str | None:
    """None for a realm name PVE takes (``pve_verify_realm``, at most 32 characters), else its reason."""
    if not REALM.match(realm) or len(realm) > 32:
        return (
            f"{shown(realm)} does not look like a valid realm (a letter, then letters, digits, ., -, _; "
            "2 to 32)"
        )
    return None


def groupid_problem(groupid: str) -> str | None:
    """None for a groupid PVE takes (``verify_groupname``), else its reason."""
    if not GROUP.match(groupid):
        return f"group name {shown(groupid)} contains invalid characters"
    return None


def split_tokenid(full: str) -> tuple[str, str] | None:
    """``(userid, tokenid)`` of ``user@realm!tokenid``, or None when it is not one
    (``split_tokenid``)."""
    userid, bang, subid = full.rpartition("!")
    if not bang or userid_problem(userid) or not TOKEN_SUBID.match(subid):
        return None
    return userid, subid
