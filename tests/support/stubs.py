"""In-memory stand-ins for the unit tests of the simple-object, alias and policy lifecycles: a PVE
client answering from a dict the way PVE answers (see each family's module for the source), a
credential broker, and an hvac-like OpenBao client. No network, no server."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import hvac.exceptions

from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.client import Credential, Target
from salt_proxmox.pve.errors import PVE_WORDS, PveError
from salt_proxmox.run.context import PveContext

TARGET = "lab"
ALIASES = "cluster/firewall/aliases"


class StubBroker:
    """Hands out fixed credentials and counts them per role."""

    def __init__(self) -> None:
        self.mints = {"read": 0, "provision": 0}

    def read(self) -> Credential:
        self.mints["read"] += 1
        return Credential("r@pve!plan", "read-secret", role="read")

    def provision(self, need_seconds: float = 0.0) -> Credential:
        self.mints["provision"] += 1
        return Credential("p@pve!apply", "provision-secret", role="provision")


class StubClient:
    """Answers with ``handler(method, path, params, form)``; logs (method, path, params, form)."""

    words = PVE_WORDS

    def __init__(self, handler: Callable[..., Any]) -> None:
        self.handler = handler
        self.sent: list[tuple[str, str, dict, dict]] = []

    def request(self, method, path, credential, params=None, form=None, as_json=False):
        self.sent.append((method, path, dict(params or {}), dict(form or {})))
        return self.handler(method, path, dict(params or {}), dict(form or {}))

    def writes(self) -> list[tuple[str, str, dict, dict]]:
        return [entry for entry in self.sent if entry[0] != "GET"]


def no_such_alias() -> PveError:
    """pve-firewall ``read_alias`` for a missing name."""
    return PveError("GET", "x", 400, "Parameter verification failed.", {"name": "no such alias"})


class AliasPve:
    """Cluster aliases as pve-firewall 6.0.4 keeps them: keyed by ``lc(name)``, the spelling of the last
    write kept, ``/32`` and ``/128`` stripped on read (``parse_ip_or_cidr``), comments trimmed, a list
    digest checked by PUT and DELETE, deleting a missing alias a success. The places a delete scans
    for references (salt_proxmox.firewall.usage) answer as an empty firewall does: no rules, IP sets
    or security groups, no node, no guest."""

    #: The scan's listings, each empty.
    EMPTY = ("cluster/firewall/rules", "cluster/firewall/ipset", "cluster/firewall/groups", "nodes")

    def __init__(self, aliases: dict[str, dict] | None = None) -> None:
        self.aliases = {name.lower(): dict(entry, name=name) for name, entry in (aliases or {}).items()}

    def digest(self) -> str:
        sha = hashlib.sha1()  # noqa: S324 - PVE's own digest algorithm
        for key in sorted(self.aliases):
            for field, value in sorted(self.aliases[key].items()):
                sha.update(f"{field}:{value}\n".encode())
        return sha.hexdigest()

    @staticmethod
    def stored(form: dict, name: str) -> dict:
        cidr = form["cidr"]
        if cidr.endswith("/32") and ":" not in cidr:
            cidr = cidr[:-3]
        if cidr.endswith("/128"):
            cidr = cidr[:-4]
        entry = {"name": name, "cidr": cidr, "ipversion": 6 if ":" in cidr else 4}
        if form.get("comment", "").strip():
            entry["comment"] = form["comment"].strip()
        return entry

    def __call__(self, method: str, path: str, params: dict, form: dict) -> Any:
        if method == "GET" and (path in self.EMPTY or path == "cluster/resources"):
            return []
        if path == ALIASES:
            if method == "GET":
                digest = self.digest()
                return [dict(self.aliases[key], digest=digest) for key in sorted(self.aliases)]
            if self.aliases.get(form["name"].lower()):
                raise PveError(
                    method, path, 400, "Parameter verification failed.", {"name": "already exists"}
                )
            self.aliases[form["name"].lower()] = self.stored(form, form["name"])
            return None
        name = unquote(path.rsplit("/", 1)[1])
        key = name.lower()
        if method == "GET":
            if key not in self.aliases:
                raise no_such_alias()
            return dict(self.aliases[key])
        given = form.get("digest") or params.get("digest")
        if given and given != self.digest():
            raise PveError(method, path, 500, "detected modified configuration - file changed by other user?")
        if method == "PUT":
            if key not in self.aliases:
                raise no_such_alias()
            self.aliases[key] = self.stored(form, name)
        elif method == "DELETE":
            self.aliases.pop(key, None)
        return None


def pve_context(handler: Callable[..., Any], store: MemoryStore | None = None) -> PveContext:
    """A PveContext whose client is a StubClient over ``handler``."""
    return PveContext(
        target=Target(TARGET, ("https://pve1:8006",)),
        client=StubClient(handler),  # type: ignore[arg-type]
        broker=StubBroker(),  # type: ignore[arg-type]
        ownership=Ownership(store or MemoryStore()),
    )


class StubAdapter:
    """Records (method, path) of what the policy client sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []


class StubSys:
    """``client.sys`` of hvac for ACL policies, over a dict, as OpenBao 2.6 answers: names lower-cased
    (``sanitizeName``), a missing policy a 404 (``InvalidPath``), delete of a missing policy a success.
    ``deny`` names policies whose reads answer 403."""

    def __init__(self, policies: dict[str, str], sent: list[tuple[str, str]], deny: set[str]) -> None:
        self.policies = policies
        self.sent = sent
        self.deny = deny

    def read_policy(self, name: str) -> dict:
        self.sent.append(("GET", f"sys/policy/{name}"))
        if name in self.deny:
            raise hvac.exceptions.Forbidden("permission denied")
        key = name.strip().lower()
        if key not in self.policies:
            raise hvac.exceptions.InvalidPath()
        return {"name": key, "rules": self.policies[key], "data": {"name": key, "rules": self.policies[key]}}

    def create_or_update_policy(self, name: str, policy: str) -> None:
        self.sent.append(("PUT", f"sys/policy/{name}"))
        self.policies[name.lower()] = policy

    def delete_policy(self, name: str) -> None:
        self.sent.append(("DELETE", f"sys/policy/{name}"))
        self.policies.pop(name.lower(), None)


class StubBao:
    """An hvac-like client: ``sys`` (policies), ``sent`` (method, path) log, ``writes()``."""

    def __init__(self, policies: dict[str, str] | None = None, deny: set[str] | None = None) -> None:
        self.policies = dict(policies or {})
        self.sent: list[tuple[str, str]] = []
        self.sys = StubSys(self.policies, self.sent, deny or set())

    def writes(self) -> list[tuple[str, str]]:
        return [entry for entry in self.sent if entry[0] != "GET"]
