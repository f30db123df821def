"""A FakePve that keeps Ceph pools, as pve-manager and Ceph do.

fakepve 0.5.0 answers the Ceph pool endpoints with a generic handler that stores nothing, and its Ceph
status is a fixed ``HEALTH_OK`` document. ``CephPve`` adds stateful routes in front of fakepve's
catch-all (its ``_routes_*`` mechanism, after fakepve's schema and permission checks), written from
pve-manager ``PVE/API2/Ceph/Pool.pm`` and ``PVE/Ceph/Tools.pm``:

- ``ceph_pools``: Ceph's pools by name, each as ``osd dump`` keeps it (``size``, ``min_size``,
  ``pg_num``, ``pg_autoscale_mode``, ``crush_rule`` id, ``application_metadata``, and the pool
  options ``pg_num_min``, ``target_size_bytes``, ``target_size_ratio`` when set, ``type`` 1
  replicated or 3 erasure with ``erasure_code_profile``); ``crush_rules``: rule id → name
  (``replicated_rule`` 0, as a new cluster has);
- ``GET /nodes/{node}/ceph/pool`` is ``lspools``: ``pool``, ``pool_name``, ``size``, ``min_size``,
  ``pg_num``, ``crush_rule`` and ``crush_rule_name``, ``pg_autoscale_mode``, ``application_metadata``,
  ``pg_num_min``/``target_size``/``target_size_ratio`` from the options, ``type``;
- ``POST`` is ``createpool``: PVE's defaults (``pg_num`` 128, ``size`` 3, ``min_size`` 2,
  ``application`` rbd, ``pg_autoscale_mode`` warn), ``target_size`` parsed to bytes, then a
  ``cephcreatepool`` task whose worker runs ``create_pool`` (the pool is made, then ``set_pool``);
- ``PUT /nodes/{node}/ceph/pool/{name}`` is ``setpool``: a ``cephsetpool`` task running ``set_pool``
  exactly: ``size`` first, every other key compared with the properties read BEFORE any is applied
  and skipped when equal, each applied as Ceph's monitor does (``size`` resets ``min_size`` to
  ``size - size/2``; ``min_size`` outside 1..size refused, ``pool min_size must be between 1 and
  size, which is set to N``; an unknown CRUSH rule refused; ``application`` enabled beside the
  others; a pool option set to 0 unset), and ``Could not set: <keys>`` for the ones that failed;
- ``DELETE`` is ``destroypool``: a ``cephdestroypool`` task that, without ``force``, fails ``ceph pool
  '<name>' still in use by storage '<id>'`` while an ``rbd`` storage naming the pool holds volumes,
  destroys the pool, its erasure-code profile unless ``remove_ecprofile=0`` (``removed_ecprofiles``),
  and with ``remove_storages`` the storages naming it (``monhost`` ones kept);
- ``GET /nodes/{node}/ceph/status`` is ``ceph status`` with ``health.checks`` from ``ceph_checks``
  (``degrade()`` raises one) and ``health.status`` ``HEALTH_ERR`` after fakepve's ``ceph_down`` or
  ``ceph_slow(..., 'HEALTH_ERR')``, ``HEALTH_WARN`` while a check is raised, else ``HEALTH_OK``;
- ``erasure-coding`` (``createpool``, ``ec_parse_and_check``, Tools.pm ``create_ecprofile``): k at
  least 2, m at least 1, a declared ``profile`` must be in ``ec_profiles`` ("Erasure code profile
  '<p>' does not exist."), else ``pve_ec_<name>`` is made; ``<name>-data`` (type 3, size k+m,
  min_size k+min(1, m-1) as Ceph's ``OSDMonitor::prepare_pool_size`` gives an erasure pool, its own
  CRUSH rule ``<name>-data``, ``allow_ec_overwrites``) gets every key but size, min_size and
  crush_rule, then ``<name>-metadata`` (pg_num 32) the rest, then — ``add_storages`` defaulting to 1
  — the RBD storage ``<name>`` (``storage ID '<name>' already defined`` when it is); a destroy of an
  erasure pool drops its CRUSH rule too;
- ``GET /nodes/{node}/ceph/osd`` is the CRUSH tree of ``ceph_osds`` (host → OSD count; one OSD on
  the first node, as fakepve's shape);
- ``GET /nodes/{node}/ceph/rules`` lists ``crush_rules`` as ``[{name}]`` (``PVE/API2/Ceph.pm`` ``rules``).

``autoscale(name, pg_num)`` is the pg_autoscaler moving a pool's ``pg_num``. Differences from Ceph: a
``pg_num`` change is at once (Ceph walks ``pg_num`` towards its target), and the pg_autoscaler never
runs by itself.
"""

from __future__ import annotations

import re

from fakepve import shapes
from fakepve.model import TaskError
from fakepve.routing import die, param_error

from tests.support.qemu import QemuPve

#: ``createpool``'s defaults for a key not given (``# pool defaults``).
CREATE_DEFAULTS = {"pg_num": 128, "size": 3, "min_size": 2, "application": "rbd", "pg_autoscale_mode": "warn"}
#: Pool options Ceph unsets when set to 0 (ceph ``OSDMonitor.cc`` ``prepare_command_pool_set``).
OPTIONS = ("pg_num_min", "target_size_bytes", "target_size_ratio")
_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def _size_bytes(text: str) -> int:
    """pve-common ``parse_size`` of ``target_size`` (its pattern already checked by the schema)."""
    unit = text[-1] if text[-1] in "KMGT" else ""
    return int(float(text[: len(text) - len(unit)]) * 1024 ** _UNITS[unit])


class CephPve(QemuPve):
    """QemuPve with stateful Ceph pools, CRUSH rules and health (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ceph_pools: dict[str, dict] = {}
        self.crush_rules: dict[int, str] = {0: "replicated_rule"}
        #: Raised health checks, ``{code: {"severity": ..., "summary": {"message": ...}}}``.
        self.ceph_checks: dict[str, dict] = {}
        self.removed_ecprofiles: list[str] = []
        self.ec_profiles: dict[str, dict] = {}
        self.ceph_osds: dict[str, int] = {sorted(self.nodes)[0]: 1}
        self._pool_ids = iter(range(1, 10_000))

    # ---------------------------------------------------------------------------------- scenarios

    def degrade(
        self, code: str = "PG_DEGRADED", message: str = "Degraded data redundancy: 12/345 objects degraded"
    ):
        """Raise Ceph health check ``code`` (``HEALTH_WARN``)."""
        self.ceph_checks[code] = {"severity": "HEALTH_WARN", "summary": {"message": message, "count": 1}}

    def autoscale(self, name: str, pg_num: int) -> None:
        """The pg_autoscaler sets pool ``name``'s ``pg_num``."""
        self.ceph_pools[name]["pg_num"] = pg_num

    def add_ceph_pool(self, name: str, **settings) -> dict:
        """A pool made outside PVE's API, with ``createpool``'s defaults under ``settings``."""
        pool = {
            "pool": next(self._pool_ids),
            "pool_name": name,
            "type": 1,
            "crush_rule": 0,
            "size": 3,
            "min_size": 2,
            "pg_num": 128,
            "pg_autoscale_mode": "warn",
            "application_metadata": {"rbd": {}},
            "options": {},
            **settings,
        }
        self.ceph_pools[name] = pool
        return pool

    # ------------------------------------------------------------------------------------- routes

    def _routes_ceph(self):
        pools, pool = "/nodes/{node}/ceph/pool", "/nodes/{node}/ceph/pool/{name}"
        return [
            ("GET", pools, self._ceph_pools_index),
            ("POST", pools, self._ceph_pool_create),
            ("PUT", pool, self._ceph_pool_update),
            ("DELETE", pool, self._ceph_pool_destroy),
            ("GET", "/nodes/{node}/ceph/status", self._ceph_node_status),
            ("GET", "/nodes/{node}/ceph/rules", self._ceph_rules),
            ("GET", "/nodes/{node}/ceph/osd", self._ceph_osd_tree),
        ]

    def _health(self) -> str:
        if self.ceph["down"] or self.ceph["health"] == "HEALTH_ERR":
            return "HEALTH_ERR"
        return "HEALTH_WARN" if self.ceph_checks else "HEALTH_OK"

    async def _ceph_node_status(self, v, user):
        if self.ceph["down"]:
            raise die("rados_connect failed - Connection timed out")
        status = shapes.ceph_status(self._health(), sorted(self.nodes)[0])
        status["health"]["checks"] = {code: dict(check) for code, check in self.ceph_checks.items()}
        return status

    async def _ceph_osd_tree(self, v, user):
        ids, hosts = iter(range(10_000)), []
        for host, count in sorted(self.ceph_osds.items()):
            osds = [
                {"id": next(ids), "name": "", "type": "osd", "leaf": 1, "status": "up"} for _ in range(count)
            ]
            for osd in osds:
                osd["name"] = f"osd.{osd['id']}"
            hosts.append({"id": -2 - len(hosts), "name": host, "type": "host", "leaf": 0, "children": osds})
        root = {"id": -1, "name": "default", "type": "root", "leaf": 0, "children": hosts}
        return {"flags": "", "root": {"leaf": 0, "children": [root]}}

    async def _ceph_rules(self, v, user):
        return [{"name": name} for name in sorted(self.crush_rules.values())]

    async def _ceph_pools_index(self, v, user):
        rows = []
        for _name, pool in sorted(self.ceph_pools.items()):
            row = {
                key: pool[key] for key in ("pool", "pool_name", "size", "min_size", "pg_num", "crush_rule")
            }
            row["pg_autoscale_mode"] = pool["pg_autoscale_mode"]
            row["application_metadata"] = {app: {} for app in pool["application_metadata"]}
            options = pool["options"]
            row["pg_num_min"] = options.get("pg_num_min")
            row["target_size"] = options.get("target_size_bytes")
            row["target_size_ratio"] = options.get("target_size_ratio")
            row = {key: value for key, value in row.items() if value is not None}
            if pool["crush_rule"] in self.crush_rules:
                row["crush_rule_name"] = self.crush_rules[pool["crush_rule"]]
            row["type"] = {1: "replicated", 3: "erasure"}.get(pool["type"], "unknown")
            rows.append(row)
        return rows

    # ------------------------------------------------------------------------------- Tools.pm port

    def _properties(self, pool: dict) -> dict:
        """``get_pool_properties`` (``osd pool get <pool> all``): the CRUSH rule by name."""
        return {
            "size": pool["size"],
            "min_size": pool["min_size"],
            "pg_num": pool["pg_num"],
            "pg_autoscale_mode": pool["pg_autoscale_mode"],
            "crush_rule": self.crush_rules.get(pool["crush_rule"]),
            **pool["options"],
        }

    def _set_setting(self, pool: dict, setting: str, value: str) -> str | None:
        """``$set_pool_setting``: Ceph's monitor command; returns its error, or None."""
        if setting == "application":
            pool["application_metadata"][value] = {}
        elif setting == "size":
            size = int(value)
            pool["size"], pool["min_size"] = size, size - size // 2
        elif setting == "min_size":
            if not 1 <= int(value) <= pool["size"]:
                return f"pool min_size must be between 1 and size, which is set to {pool['size']}\n"
            pool["min_size"] = int(value)
        elif setting == "crush_rule":
            ids = {name: rule for rule, name in self.crush_rules.items()}
            if value not in ids:
                return f"specified rule {value} doesn't exist\n"
            pool["crush_rule"] = ids[value]
        elif setting in OPTIONS:
            number = float(value) if setting == "target_size_ratio" else int(value)
            if number == 0:
                pool["options"].pop(setting, None)
            else:
                pool["options"][setting] = number
        elif setting in ("pg_num", "pg_autoscale_mode"):
            pool[setting] = int(value) if setting == "pg_num" else value
        else:
            return f"unrecognized variable '{setting}'\n"
        return None

    def _set_pool(self, name: str, param: dict) -> list[str]:
        """``set_pool``: its log lines; raises TaskError ``Could not set: ...``."""
        pool, log = self.ceph_pools[name], []
        if pool["type"] == 3:
            for setting in ("size", "crush_rule"):
                if param.get(setting):
                    log.append(f"cannot set '{setting}' for erasure coded pool")
                    del param[setting]
        keys = sorted(key for key in param if key != "size")
        if "size" in param:
            keys.insert(0, "size")
        current = self._properties(pool)
        for setting in keys:
            value = str(param[setting])
            if current.get(setting) is not None and value == str(current[setting]):
                log.append(f"skipping '{setting}', did not change")
                del param[setting]
                continue
            log.append(f"pool {name}: applying {setting} = {value}")
            error = self._set_setting(pool, setting, value)
            if error:
                log.append(error.rstrip("\n"))
            else:
                del param[setting]
        if param:
            raise TaskError(f"Could not set: {', '.join(sorted(param))}")
        return log

    # ------------------------------------------------------------------------------------ methods

    def _params(self, v) -> dict:
        param = {key: value for key, value in v.items() if key not in ("node", "name")}
        if "target_size" in param:
            param["target_size_bytes"] = _size_bytes(str(param.pop("target_size")))
        return param

    async def _ceph_pool_create(self, v, user):
        name = v["name"]
        param = self._params(v)
        ec = self._ec(param.pop("erasure-coding", None))
        add = param.pop("add_storages", None)
        add = ec is not None if add is None else add in (1, "1", True)
        if add and not re.match(r"^[a-z][a-z0-9\-_.]*[a-z0-9]$", name, re.I):
            raise die("pool name contains characters which are illegal for storage naming")
        for key, value in CREATE_DEFAULTS.items():
            param.setdefault(key, value)
        if ec is not None:
            return await self.task(
                v["node"], "cephcreatepool", name, user, lambda: self._ec_create(name, ec, param, add)
            )
        if add:
            raise param_error(add_storages="a replicated pool's storage is not modelled by this fake")

        async def worker():
            if name not in self.ceph_pools:  # ``osd pool create`` of an existing name is no error
                self.add_ceph_pool(
                    name, pg_num=int(param["pg_num"]), application_metadata={}, pg_autoscale_mode="on"
                )
            self._set_pool(name, param)

        return await self.task(v["node"], "cephcreatepool", name, user, worker)

    def _ec(self, text):
        """``ec_parse_and_check``: the property string, and a given ``profile`` must exist."""
        if text is None:
            return None
        ec = dict(part.split("=", 1) for part in str(text).split(","))
        if int(ec.get("k", 0)) < 2 or int(ec.get("m", 0)) < 1:
            raise param_error(**{"erasure-coding": "k must be at least 2 and m at least 1"})
        if ec.get("profile") and ec["profile"] not in self.ec_profiles:
            raise die(f"Erasure code profile '{ec['profile']}' does not exist.")
        return ec

    async def _ec_create(self, name: str, ec: dict, param: dict, add: bool) -> None:
        profile = ec.get("profile")
        if not profile:
            profile = f"pve_ec_{name}"
            self.ec_profiles[profile] = {"k": int(ec["k"]), "m": int(ec["m"]), **ec}
        k, m = int(self.ec_profiles[profile]["k"]), int(self.ec_profiles[profile]["m"])
        rule = max(self.crush_rules) + 1
        self.crush_rules[rule] = f"{name}-data"
        data = {key: value for key, value in param.items() if key not in ("size", "min_size", "crush_rule")}
        self.add_ceph_pool(
            f"{name}-data",
            type=3,
            size=k + m,
            min_size=k + min(1, m - 1),
            crush_rule=rule,
            pg_num=int(data["pg_num"]),
            application_metadata={},
            pg_autoscale_mode="on",
            erasure_code_profile=profile,
            allow_ec_overwrites=True,
        )
        self._set_pool(f"{name}-data", data)
        meta = {**param, "pg_num": 32}
        self.add_ceph_pool(f"{name}-metadata", pg_num=32, application_metadata={}, pg_autoscale_mode="on")
        self._set_pool(f"{name}-metadata", meta)
        if add:
            if name in self.storages:
                raise TaskError(
                    f"adding PVE storage for ceph pool '{name}' failed: storage ID '{name}' already defined"
                )
            self.storages[name] = {
                "type": "rbd",
                "pool": f"{name}-metadata",
                "data-pool": f"{name}-data",
                "krbd": 0,
                "content": "rootdir,images",
            }

    async def _ceph_pool_update(self, v, user):
        name = v["name"]
        param = self._params(v)

        async def worker():
            if name not in self.ceph_pools:
                raise TaskError(f"pool '{name}' does not exist")
            self._set_pool(name, param)

        return await self.task(v["node"], "cephsetpool", name, user, worker)

    async def _ceph_pool_destroy(self, v, user):
        name = v["name"]
        if v.get("remove_storages") in (1, "1", True):
            self.require(user, "/storage", "Datastore.Allocate")

        async def worker():
            naming = {
                sid: store
                for sid, store in self.storages.items()
                if store.get("type") == "rbd" and name in (store.get("pool") or "rbd", store.get("data-pool"))
            }
            if v.get("force") not in (1, "1", True):
                for sid, store in sorted(naming.items()):
                    if store.get("volumes"):
                        raise TaskError(f"ceph pool '{name}' still in use by storage '{sid}'")
            pool = self.ceph_pools.pop(name, None)
            if pool is None:
                raise TaskError(f"pool '{name}' does not exist")
            profile = pool.get("erasure_code_profile")
            if profile:  # destroypool drops the pool's CRUSH rule
                self.crush_rules.pop(pool["crush_rule"], None)
            if profile and v.get("remove_ecprofile") not in (0, "0", False):
                self.removed_ecprofiles.append(profile)
            if v.get("remove_storages") in (1, "1", True):
                for sid, store in naming.items():
                    if not store.get("monhost"):
                        del self.storages[sid]

        return await self.task(v["node"], "cephdestroypool", name, user, worker)
