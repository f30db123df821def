"""Firewall rules as PVE stores them, where fakepve 0.5.0 falls short (``FirewallRulesPve``).

fakepve models the rule API's positions as pve-firewall does (``src/PVE/API2/Firewall/Rules.pm``:
``create_rule`` ``unshift``s and checks no digest, ``update_rule`` with ``moveto`` moves in front of the
rule at ``moveto`` counted before the move and ignores every other field, ``update_rule`` and
``delete_rule`` check the list digest, ``copy_list_with_digest``). It keeps a written rule as sent,
though, where PVE writes it into the ``.fw`` file and reads it back: every later read sees the rule
after ``$format_rules`` and ``parse_fw_rule`` (``src/PVE/Firewall.pm``). ``FirewallRulesPve`` stores
each written rule after that round trip:

- ``enable``: ``|`` written for a defined false value, so any other value reads back as 1;
- ``comment``: written only when true in Perl and not blank, read back trimmed (``#\\s*(.*?)\\s*$``);
- a ``group`` rule keeps ``action``, ``iface`` (where the scope allows it), ``enable`` and ``comment``:
  ``$format_rules`` writes nothing else for it;
- ``log`` written when true, ``icmp-type`` when not empty; ``type`` upper case, read back lower case.

Unit tests in ``tests/unit/test_firewall_rules.py`` pin these rules against PVE's spellings.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import requests

from tests.support.ceph import CephPve

#: Another administrator's API token, as the firewall tests' edits made meanwhile come from.
ADMIN = "fw-admin@pve!edit"

#: ``$format_rules``' order of the options after the action (a group rule writes none of them).
OPTIONS = (
    ("source", "-source"),
    ("dest", "-dest"),
    ("proto", "-p"),
    ("dport", "-dport"),
    ("sport", "-sport"),
    ("log", "-log"),
    ("icmp-type", "-icmp-type"),
)
#: ``$rule_env_iface_lookup``: ``save_clusterfw_conf`` writes a group's rules without ``-i``.
ALLOW_IFACE = {"cluster": True, "host": True, "group": False, "vm": True, "ct": True}


def format_rule(rule: dict, allow_iface: bool) -> str:
    """One rule as ``$format_rules`` writes it (without the utf8 encoding)."""
    text = "|" if rule.get("enable") is not None and not _true(rule["enable"]) else ""
    text += rule["type"].upper()
    text += f" {rule['macro']}({rule['action']})" if rule.get("macro") else f" {rule['action']}"
    if allow_iface and rule.get("iface"):
        text += f" -i {rule['iface']}"
    if rule["type"] != "group":
        for key, flag in OPTIONS:
            if key == "icmp-type":
                if rule.get(key) not in (None, ""):
                    text += f" {flag} {rule[key]}"
            elif _true(rule.get(key)):
                text += f" {flag} {rule[key]}"
    comment = rule.get("comment")
    if _true(comment) and str(comment).strip():
        text += f" # {comment}"
    return text


def parse_rule(line: str) -> dict:
    """``parse_fw_rule`` without ``verify_rule``: the fields a ``.fw`` line holds."""
    import re

    rule: dict = {}
    found = re.search(r"#\s*(.*?)\s*$", line)
    if found:
        rule["comment"] = found.group(1)
        line = line[: found.start()]
    rule["enable"] = 0 if line.startswith("|") else 1
    line = line.removeprefix("|")
    kind, action, *rest = line.split()
    rule["type"] = kind.lower()
    macro = re.fullmatch(r"(\S+)\((ACCEPT|DROP|REJECT)\)", action)
    if rule["type"] in ("in", "out", "forward") and macro:
        rule["macro"], action = macro.group(1), macro.group(2)
    rule["action"] = action
    flags = {"-i": "iface", **{flag: key for key, flag in OPTIONS}}
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        rule[flags[flag]] = value
    if not rule.get("comment"):
        rule.pop("comment", None)
    return rule


def _true(value: object) -> bool:
    """Perl truth: undef, '' and '0' are false."""
    return value is not None and str(value) not in ("", "0")


def round_trip(rule: dict, scope: str) -> dict:
    """``rule`` as PVE reads it back after writing it into the scope's ``.fw`` file (``ipversion`` and
    ``errors``, which ``verify_rule`` sets again on every read, kept)."""
    stored = parse_rule(format_rule(rule, ALLOW_IFACE[scope]))
    for key in ("ipversion", "errors"):
        if key in rule:
            stored[key] = rule[key]
    return stored


class FirewallRulesPve(CephPve):
    """CephPve whose firewall rules read back as PVE writes and parses them (module docstring)."""

    def _round_trip(self, scope: str, v) -> None:
        _conf, rules = self._rules_of(scope, v)
        rules[:] = [round_trip(rule, scope) for rule in rules]

    async def _fw_rule_create(self, scope, v, user):
        result = await super()._fw_rule_create(scope, v, user)
        self._round_trip(scope, v)
        return result

    async def _fw_rule_update(self, scope, v, user):
        result = await super()._fw_rule_update(scope, v, user)
        self._round_trip(scope, v)
        return result


def firewall_admin(served) -> Callable[..., None]:
    """``call(method, path, **form)``: a request as another administrator allowed to edit every firewall
    scope (``ADMIN``, granted Sys.Modify, Sys.Audit, VM.Config.Network and VM.Audit on ``/`` of the
    served cluster ``served``), asserting PVE answered 200."""
    secret = secrets.token_hex(16)
    served.pve.apitokens[ADMIN] = secret
    served.pve.grant(ADMIN, "/", "Sys.Modify", "Sys.Audit", "VM.Config.Network", "VM.Audit")

    def call(method: str, path: str, **data: str) -> None:
        answer = requests.request(
            method,
            f"{served.url}/api2/json/{path}",
            data=data,
            headers={"Authorization": f"PVEAPIToken={ADMIN}={secret}"},
            verify=served.cafile,
            timeout=10,
        )
        assert answer.status_code == 200, answer.text

    return call
