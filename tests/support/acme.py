"""A FakePve that keeps ACME challenge plugins and the nodes' certificate configuration, as pve-manager does.

fakepve 0.5.0 checks the ``/cluster/acme`` and ``/nodes/{node}/config`` requests against PVE 9's schema and
permissions, then answers them with a generic handler that stores nothing (a synthesised challenge schema
of one made-up API). ``AcmePve`` adds stateful routes in front of it (the ``_routes_*`` mechanism), written
from pve-manager ``PVE/API2/ACMEPlugin.pm``, ``PVE/API2/ACMEAccount.pm`` ``challengeschema``,
``PVE/API2/NodeConfig.pm`` and ``PVE/NodeConfig.pm``, over proxmox-acme ``PVE/ACME/Challenge.pm`` and
``DNSChallenge.pm`` and pve-common ``SectionConfig.pm``:

- ``acme_plugins``: ``plugins.cfg``'s sections by id, ``{type, <options>}`` with integers and booleans as
  numbers; ``data`` kept as the file holds it (base64url, ``encode_value``), which ``GET`` returns as it is
  (``parse_config`` does not decode); the ``standalone`` plugin is added to every read when the file lacks
  it (``Challenge.pm`` ``parse_config``);
- ``GET /cluster/acme/plugins[/{id}]`` is ``index``/``get_plugin_config`` (the section, ``plugin``,
  ``digest``), or 500 ``ACME plugin '<id>' not defined``; ``POST`` is ``add_plugin`` (``ACME plugin ID
  '<id>' already exists``, ``unexpected property``, ``missing value for required option``); ``PUT`` is
  ``update_plugin`` (the digest, ``ACME plugin ID '<id>' does not exist``, ``delete``: ``no such option``,
  ``unable to delete required option``); ``DELETE`` is ``delete_plugin`` (checks nothing);
- ``GET /cluster/acme/challenge-schema``: one ``dns`` row per DNS API of the schema's ``api`` enumeration
  (``DNSChallenge.pm`` ``get_supported_plugins``), and the ``standalone`` row;
- ``node_configs``: each node's ``acme`` and ``acmedomainN`` keys; ``GET``/``PUT /nodes/{node}/config``.

- ``acme_accounts``: the account files ``priv/acme/<name>`` by name, ``{account: {contact: [mailto:...],
  status}, directory, location, tos}`` as proxmox-acme ``PVE/ACME.pm`` ``save`` keeps them, written from
  ``PVE/API2/ACMEAccount.pm``: ``GET /cluster/acme/account`` (``account_index``, any user: the names);
  ``POST`` (``register_account``: ``ACME account config file '<name>' already exists.`` as a ``name``
  parameter error, then task ``acmeregister``; ``tos_url`` saved as ``tos``; the EAB pair required when
  ``acme_meta`` says ``externalAccountRequired``, else the CA's refusal fails the task); ``GET``/``PUT``/
  ``DELETE /cluster/acme/account/{name}`` (``get_account``; ``update_account``: contact, or a refresh,
  task ``acmeupdate``/``acmerefresh``; ``deactivate_account``: task ``acmedeactivate``, the account's
  ``status`` ``deactivated`` and its file renamed ``_deactivated_<name>_<n>``, kept in
  ``deactivated_accounts``), each missing name the 400 ``ACME account config file '<name>' does not
  exist.``; only root@pam passes them (fakepve answers a token ``Permission check failed (user !=
  root@pam)`` for a method without ``permissions``, as ``RPCEnvironment.pm`` ``check_api2_permissions``
  does); ``eab_sent`` records the EAB key ids registered with (never the key);
- ``GET /cluster/acme/directories`` (``$acme_directories``) and ``GET /cluster/acme/meta`` (``acme_meta``:
  the CA's directory ``meta`` by directory URL, Let's Encrypt's ``termsOfService`` by default).

Differences from PVE: the CA is not contacted (a register always succeeds unless EAB is missing where
required; ``location`` is made up); ``data`` is stored as it was sent (PVE decodes it and encodes it
base64url again); the error texts are the die messages, without the cfs lock's wrapping; the digest is
a hash of the sections, not the file's bytes; ``PUT /nodes/{node}/config`` does not check that a named
plugin exists.
"""

from __future__ import annotations

import hashlib
import json

from fakepve import schema as pve_schema
from fakepve.model import TaskError
from fakepve.routing import check_digest, die, param_error, split_list

from tests.support.ceph import CephPve

#: Each type's options (``DNSChallenge.pm``/``StandAlone.pm`` ``options``) and the required ones.
OPTIONS = {
    "dns": ({"api", "data", "validation-delay", "disable", "nodes"}, {"api"}),
    "standalone": ({"disable", "nodes"}, set()),
}
NUMBERS = {"validation-delay", "disable"}
#: ``ACMEAccount.pm`` ``$acme_directories``.
DIRECTORIES = [
    {"name": "Let's Encrypt V2", "url": "https://acme-v02.api.letsencrypt.org/directory"},
    {"name": "Let's Encrypt V2 Staging", "url": "https://acme-staging-v02.api.letsencrypt.org/directory"},
]
#: Let's Encrypt's Terms of Service as its directory's ``meta`` names them.
LE_TOS = "https://letsencrypt.org/documents/LE-SA-v1.5-February-24-2025.pdf"


def _apis() -> list[str]:
    """The DNS APIs PVE 9's schema enumerates for ``api`` (``DNSChallenge.pm`` ``properties``)."""
    create = pve_schema.load().paths["/cluster/acme/plugins"]["POST"]
    return sorted(create["parameters"]["properties"]["api"]["enum"])


class AcmePve(CephPve):
    """CephPve with stateful ACME plugins and node certificate configuration (module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.acme_plugins: dict[str, dict] = {}
        self.node_configs: dict[str, dict] = {}
        self.acme_accounts: dict[str, dict] = {}
        self.deactivated_accounts: dict[str, dict] = {}
        self.acme_meta: dict[str, dict] = {
            entry["url"]: {"termsOfService": LE_TOS, "website": "https://letsencrypt.org"}
            for entry in DIRECTORIES
        }
        self.eab_sent: list[str] = []

    def acme_digest(self) -> str:
        text = json.dumps(self.acme_plugins, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - as PVE's SectionConfig digest

    def _acme_ids(self) -> dict[str, dict]:
        ids = dict(self.acme_plugins)
        if ids.get("standalone", {}).get("type") != "standalone":
            ids["standalone"] = {"type": "standalone"}
        return ids

    def _routes_acme(self):
        plugins, plugin = "/cluster/acme/plugins", "/cluster/acme/plugins/{id}"
        return [
            ("GET", plugins, self._acme_index),
            ("POST", plugins, self._acme_create),
            ("GET", plugin, self._acme_read),
            ("PUT", plugin, self._acme_update),
            ("DELETE", plugin, self._acme_delete),
            ("GET", "/cluster/acme/challenge-schema", self._acme_schema),
            ("GET", "/cluster/acme/account", self._account_index),
            ("POST", "/cluster/acme/account", self._account_register),
            ("GET", "/cluster/acme/account/{name}", self._account_read),
            ("PUT", "/cluster/acme/account/{name}", self._account_update),
            ("DELETE", "/cluster/acme/account/{name}", self._account_deactivate),
            ("GET", "/cluster/acme/directories", self._acme_directories),
            ("GET", "/cluster/acme/meta", self._acme_meta),
            ("GET", "/nodes/{node}/config", self._node_config),
            ("PUT", "/nodes/{node}/config", self._node_config_set),
        ]

    def _api_view(self, pid: str, section: dict) -> dict:
        return {**section, "plugin": pid, "digest": self.acme_digest()}

    async def _acme_index(self, v, user):
        rows = [self._api_view(pid, section) for pid, section in sorted(self._acme_ids().items())]
        return [row for row in rows if not v.get("type") or row["type"] == v["type"]]

    async def _acme_read(self, v, user):
        section = self._acme_ids().get(v["id"])
        if section is None:
            raise die(f"ACME plugin '{v['id']}' not defined")
        return self._api_view(v["id"], section)

    @staticmethod
    def _acme_checked(kind: str, param: dict) -> dict:
        options, _ = OPTIONS[kind]
        settings = {}
        for key, value in param.items():
            if key not in options:
                raise die(f"unexpected property '{key}'")
            settings[key] = int(value) if key in NUMBERS else value
        return settings

    async def _acme_create(self, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        pid, kind = param.pop("id"), param.pop("type")
        if pid in self._acme_ids():
            raise die(f"ACME plugin ID '{pid}' already exists")
        settings = self._acme_checked(kind, param)
        for key in sorted(OPTIONS[kind][1] - set(settings)):
            raise die(f"missing value for required option '{key}'")
        self.acme_plugins[pid] = {**settings, "type": kind}
        return None

    async def _acme_update(self, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        pid = param.pop("id")
        digest, delete = param.pop("digest", None), split_list(param.pop("delete", ""))
        check_digest(self.acme_digest(), digest)
        section = self._acme_ids().get(pid)
        if section is None:
            raise die(f"ACME plugin ID '{pid}' does not exist")
        kind = section["type"]
        options, required = OPTIONS[kind]
        section = dict(section)
        for key in delete:
            if key not in options | {"disable", "nodes"}:
                raise die(f"no such option '{key}'")
            if key in required:
                raise die(f"unable to delete required option '{key}'")
            section.pop(key, None)
        section.update(self._acme_checked(kind, param))
        self.acme_plugins[pid] = section
        return None

    async def _acme_delete(self, v, user):
        self.acme_plugins.pop(v["id"], None)
        return None

    async def _acme_schema(self, v, user):
        rows = [{"id": api, "name": api, "type": "dns", "schema": {}} for api in _apis()]
        return [*rows, {"id": "standalone", "name": "standalone", "type": "standalone", "schema": {}}]

    async def _node_config(self, v, user):
        config = dict(self.node_configs.get(v["node"], {}))
        text = json.dumps(config, sort_keys=True)
        return {**config, "digest": hashlib.sha1(text.encode()).hexdigest()}  # noqa: S324

    async def _node_config_set(self, v, user):
        config = self.node_configs.setdefault(v["node"], {})
        for key in split_list(v.get("delete", "")):
            config.pop(key, None)
        config.update(
            {
                k: val
                for k, val in v.items()
                if val is not None and (k == "acme" or k.startswith("acmedomain"))
            }
        )
        return None

    # ------------------------------------------------------------------ accounts (ACMEAccount.pm)

    def _account_file(self, name: str) -> dict:
        account = self.acme_accounts.get(name)
        if account is None:
            raise param_error(name=f"ACME account config file '{name}' does not exist.")
        return account

    async def _account_index(self, v, user):
        return [{"name": name} for name in sorted(self.acme_accounts)]

    async def _account_register(self, v, user):
        name = v.get("name") or "default"
        if name in self.acme_accounts:
            raise param_error(name=f"ACME account config file '{name}' already exists.")
        directory = v.get("directory") or DIRECTORIES[0]["url"]
        contact = [f"mailto:{address}" for address in split_list(v.get("contact", ""))]
        meta = self.acme_meta.get(directory, {})

        async def worker():
            if meta.get("externalAccountRequired") and not v.get("eab-kid"):
                raise TaskError("Registration failed: POST to newAccount failed - externalAccountRequired")
            if v.get("eab-kid"):
                self.eab_sent.append(v["eab-kid"])
            self.acme_accounts[name] = {
                "account": {"contact": contact, "status": "valid"},
                "directory": directory,
                "location": f"{directory.rsplit('/', 1)[0]}/acct/{len(self.acme_accounts) + 1}",
                **({"tos": v["tos_url"]} if v.get("tos_url") else {}),
            }

        return await self.task(sorted(self.nodes)[0], "acmeregister", name, user, worker)

    async def _account_read(self, v, user):
        return json.loads(json.dumps(self._account_file(v["name"])))

    async def _account_update(self, v, user):
        name = v["name"]
        account = self._account_file(name)
        contact = [f"mailto:{address}" for address in split_list(v.get("contact", ""))]

        async def worker():
            if contact:
                account["account"]["contact"] = contact

        kind = "acmeupdate" if contact else "acmerefresh"
        return await self.task(sorted(self.nodes)[0], kind, name, user, worker)

    async def _account_deactivate(self, v, user):
        name = v["name"]
        account = self._account_file(name)

        async def worker():
            account["account"]["status"] = "deactivated"
            slot = next(i for i in range(101) if f"_deactivated_{name}_{i}" not in self.deactivated_accounts)
            self.deactivated_accounts[f"_deactivated_{name}_{slot}"] = self.acme_accounts.pop(name)

        return await self.task(sorted(self.nodes)[0], "acmedeactivate", name, user, worker)

    async def _acme_directories(self, v, user):
        return DIRECTORIES

    async def _acme_meta(self, v, user):
        return self.acme_meta.get(v.get("directory") or DIRECTORIES[0]["url"], {})
