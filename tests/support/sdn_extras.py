"""A FakePve that keeps SDN controllers, IPAMs and DNS servers, as pve-network does.

fakepve 0.5.0 checks ``/cluster/sdn/{controllers,ipams,dns}`` against PVE 9's schema and permissions,
then answers with a handler that stores nothing; ``tests.support.network.NetworkPve`` lists the three
(``sdn_controllers``, ``sdn_ipams``, ``sdn_dns``) for the zones' hooks but takes no write. ``SdnExtrasPve``
adds stateful routes in front of fakepve's catch-all, written from pve-network master ``ecf98c5``
``src/PVE/API2/Network/SDN/{Controllers,Ipams,Dns}.pm`` and the plugins' ``options`` and hooks:

- controllers are staged as zones are: ``sdn_controllers`` is ``controllers.cfg`` as written,
  ``sdn_controllers_running`` the running copy; ``GET …/controllers`` takes ``pending``/``running``
  (``pending_config``); ``PUT /cluster/sdn`` commits them and ``POST /cluster/sdn/rollback`` reverts
  them with the zones, and the global lock's ``allow-pending`` check counts them;
- IPAMs and DNS servers are written at once (``ipams.cfg``/``dns.cfg``: no running copy); the ``pve``
  IPAM is in every read (``Ipams.pm`` ``config`` adds it), so deleting it changes nothing;
- every row carries the file's ``digest``; ``update`` checks it (``assert_if_modified``), looks the
  plugin up from the stored section, applies ``delete`` (``delete_from_config``: a required option is
  refused); every key must be an option of the type (``check_config``: ``unexpected property``), the
  required ones present (``missing value for required option``); the listings answer the secrets
  (``token``, ``key``) as ``ipams.cfg``/``dns.cfg`` keep them;
- hooks: ``EvpnPlugin`` ``on_update_hook`` (one evpn controller; exactly one of peers/fabric),
  ``Bgp``/``IsisPlugin`` ``on_update_hook`` as written (counts the others of the type on the node
  answering, here the first node, and refuses from the third), ``Evpn``/``BgpPlugin``
  ``on_delete_hook`` (``controller <id> is used by <zone>``).

Differences from PVE: no ``verify_api``/``powerdns_api_request`` (PVE asks the IPAM's or DNS
server's API before it saves); error texts are the die messages without the cfs lock's wrapping.
"""

from __future__ import annotations

import copy

from fakepve.routing import check_digest, die, param_error, split_list

from tests.support.ceph import CephPve
from tests.support.network import _digest, pending_config

#: ``{kind: {type: (options, required)}}`` (each plugin's ``options``).
OPTIONS = {
    "controllers": {
        "evpn": ({"asn", "peers", "fabric"}, {"asn"}),
        "bgp": (
            {"node", "asn", "peers", "ebgp", "ebgp-multihop", "bgp-multipath-as-path-relax", "loopback"},
            {"node", "asn", "peers"},
        ),
        "isis": ({"isis-domain", "isis-net", "isis-ifaces", "node", "loopback"},
                 {"isis-domain", "isis-net", "isis-ifaces", "node"}),
        "faucet": (set(), set()),
    },
    "ipams": {
        "pve": (set(), set()),
        "netbox": ({"url", "token", "fingerprint"}, {"url", "token"}),
        "phpipam": ({"url", "token", "section", "fingerprint"}, {"url", "token", "section"}),
    },
    "dns": {"powerdns": ({"url", "key", "ttl", "reversemaskv6", "fingerprint"}, {"url", "key"})},
}  # fmt: skip
NUMBERS = {"asn", "ebgp", "ebgp-multihop", "bgp-multipath-as-path-relax", "section", "ttl", "reversemaskv6"}
ID_KEY = {"controllers": "controller", "ipams": "ipam", "dns": "dns"}


class SdnExtrasPve(CephPve):
    """CephPve with stateful SDN controllers, IPAMs and DNS servers (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sdn_controllers_running: dict[str, dict] = {}

    def _sdn_store(self, kind: str) -> dict[str, dict]:
        return {"controllers": self.sdn_controllers, "ipams": self.sdn_ipams, "dns": self.sdn_dns}[kind]

    def _sdn_file(self, kind: str) -> dict[str, dict]:
        store = self._sdn_store(kind)
        if kind == "ipams":
            store.setdefault("pve", {"type": "pve"})  # Ipams.pm config
        return store

    # ------------------------------------------------------------------------------------- routes

    def _routes_sdn(self):
        ours = {"/cluster/sdn/controllers", "/cluster/sdn/ipams", "/cluster/sdn/dns"}
        routes = [route for route in super()._routes_sdn() if route[1] not in ours]
        routes.append(("PUT", "/cluster/sdn", self._sdn_reload_all))
        routes = [route for route in routes if route[2] != self._sdn_reload]
        routes = [route for route in routes if route[2] != self._sdn_rollback]
        routes.append(("POST", "/cluster/sdn/rollback", self._sdn_rollback_all))
        for kind, key in ID_KEY.items():
            many, one = f"/cluster/sdn/{kind}", f"/cluster/sdn/{kind}/{{{key}}}"
            routes += [
                ("GET", many, self._extras_index(kind)),
                ("POST", many, self._extras_create(kind)),
                ("GET", one, self._extras_read(kind)),
                ("PUT", one, self._extras_update(kind)),
                ("DELETE", one, self._extras_delete(kind)),
            ]
        return routes

    def _sdn_section_of(self, kind: str, v: dict) -> dict:
        if kind == "controllers" and v.get("pending") in (1, "1", True):
            return pending_config(self.sdn_controllers_running, self.sdn_controllers)
        if kind == "controllers" and v.get("running") in (1, "1", True):
            return self.sdn_controllers_running
        return self._sdn_file(kind)

    def _sdn_row(self, kind: str, oid: str, options: dict) -> dict:
        return {**copy.deepcopy(options), ID_KEY[kind]: oid, "digest": _digest(self._sdn_file(kind))}

    def _extras_index(self, kind: str):
        async def index(v, user):
            return [
                self._sdn_row(kind, oid, options)
                for oid, options in sorted(self._sdn_section_of(kind, v).items())
                if self._may_audit(user, f"/sdn/{kind}/{oid}")
                and (not v.get("type") or options.get("type") == v["type"])
            ]

        return index

    def _extras_read(self, kind: str):
        async def read(v, user):
            section = self._sdn_section_of(kind, v)
            oid = v[ID_KEY[kind]]
            if oid not in section:
                raise die(f"sdn '{oid}' does not exist")
            return self._sdn_row(kind, oid, section[oid])

        return read

    @staticmethod
    def _sdn_checked(kind: str, type_: str, param: dict) -> dict:
        options, _ = OPTIONS[kind][type_]
        out = {}
        for key, value in param.items():
            if key not in options:
                raise param_error(**{key: f"unexpected property '{key}'"})
            out[key] = int(value) if key in NUMBERS else value
        return out

    def _extras_create(self, kind: str):
        async def create(v, user):
            self.need_quorum()
            errmsg = f"create sdn {ID_KEY[kind]} object failed"
            param = {key: value for key, value in v.items() if value is not None}
            oid, type_ = param.pop(ID_KEY[kind]), param.pop("type")
            self._locked(errmsg, param.pop("lock-token", None))
            store = self._sdn_file(kind)
            if oid in store:
                raise die(f"{errmsg}: sdn {ID_KEY[kind]} object ID '{oid}' already defined")
            options = self._sdn_checked(kind, type_, param)
            for key in sorted(OPTIONS[kind][type_][1]):
                if key not in options:
                    raise param_error(**{key: "property is missing and it is not optional"})
            store[oid] = {"type": type_, **options}
            try:
                self._sdn_hook(kind, oid, errmsg)
            except Exception:
                del store[oid]
                raise

        return create

    def _extras_update(self, kind: str):
        async def update(v, user):
            errmsg = f"update sdn {ID_KEY[kind]} object failed"
            param = {key: value for key, value in v.items() if value is not None}
            oid = param.pop(ID_KEY[kind])
            self._locked(errmsg, param.pop("lock-token", None))
            store = self._sdn_file(kind)
            check_digest(_digest(store), param.pop("digest", None))
            if oid not in store:
                raise die(f"{errmsg}: sdn '{oid}' does not exist")
            before = copy.deepcopy(store[oid])
            type_ = before["type"]
            delete = split_list(param.pop("delete", ""))
            options = self._sdn_checked(kind, type_, param)
            for key in delete:
                if key in OPTIONS[kind][type_][1]:
                    raise die(f"{errmsg}: unable to delete required option '{key}'")
                store[oid].pop(key, None)
            store[oid].update(options)
            try:
                self._sdn_hook(kind, oid, errmsg)
            except Exception:
                store[oid] = before
                raise

        return update

    def _extras_delete(self, kind: str):
        async def delete(v, user):
            errmsg = f"delete sdn {ID_KEY[kind]} object failed"
            oid = v[ID_KEY[kind]]
            self._locked(errmsg, v.get("lock-token"))
            store = self._sdn_file(kind)
            if oid not in store:
                raise die(f"{errmsg}: sdn '{oid}' does not exist")
            if kind == "controllers" and store[oid]["type"] in ("evpn", "bgp"):
                for zone, options in sorted(self.sdn["zones"].items()):
                    if options.get("controller") == oid:
                        raise die(f"{errmsg}: controller {oid} is used by {zone}")
            del store[oid]
            self._sdn_file(kind)

        return delete

    def _sdn_hook(self, kind: str, oid: str, errmsg: str) -> None:
        """The controller plugins' ``on_update_hook`` (module docstring)."""
        if kind != "controllers":
            return
        store = self.sdn_controllers
        mine = store[oid]
        others = {other: c for other, c in store.items() if other != oid}
        if mine["type"] == "evpn":
            if any(c["type"] == "evpn" for c in others.values()):
                raise die(f"{errmsg}: only 1 global evpn controller can be defined")
            if bool(mine.get("peers")) == bool(mine.get("fabric")):
                raise die(f"{errmsg}: must have exactly one of peers / fabric defined")
        if mine["type"] in ("bgp", "isis"):
            local = sorted(self.nodes)[0]
            count = sum(1 for c in others.values() if c["type"] == mine["type"] and c.get("node") == local)
            if count > 1:
                words = "bgp" if mine["type"] == "bgp" else "bgp or isis"
                raise die(f"{errmsg}: only 1 {words} controller can be defined")

    # ------------------------------------------------------------------------- commit, rollback

    def _has_pending(self) -> bool:
        staged = pending_config(self.sdn_controllers_running, self.sdn_controllers)
        return super()._has_pending() or any("pending" in entry for entry in staged.values())

    async def _sdn_reload_all(self, v, user):
        """``commit_config``: the controllers go running with the zones (``compile_running_cfg``)."""
        controllers = copy.deepcopy(self.sdn_controllers)
        answer = await self._sdn_reload(v, user)
        self.sdn_controllers_running = controllers
        return answer

    async def _sdn_rollback_all(self, v, user):
        await self._sdn_rollback(v, user)
        self.sdn_controllers.clear()
        self.sdn_controllers.update(copy.deepcopy(self.sdn_controllers_running))
