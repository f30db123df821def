"""A FakePve that keeps ``datacenter.cfg``, as pve-manager and pve-cluster do.

fakepve 0.5.0 checks ``PUT /cluster/options`` against PVE 9's schema, then stores nothing, and
synthesises ``GET /cluster/options`` (``tests.support.access.AccessPve`` answers a dict a test sets).
``DatacenterPve`` keeps the file, written from pve-manager ``PVE/API2/Cluster.pm`` ``get_options``/
``set_options`` and pve-cluster ``src/PVE/DataCenterConfig.pm`` ``parse_datacenter_config``/
``write_datacenter_config``:

- ``datacenter`` holds the config as ``cfs_read_file`` parses it (property strings as objects,
  ``registered-tags`` and ``user-allow-list`` as lists), without the two values the parser adds:
- ``GET`` answers it with ``mac_prefix`` defaulted to ``BC:24:11`` and ``description`` (``''`` when the
  file has no comment line, else each line followed by a newline); a caller without Sys.Audit on ``/``
  gets ``console`` and ``tag-style`` alone; ``allowed-tags`` is always there;
- ``PUT`` sets each key sent, then deletes the ``delete`` list, then writes and re-reads the file: a
  ``mac_prefix`` equal to ``BC:24:11`` (any case) and an ``applet`` console are written as PVE writes
  them, ``next-id`` with ``lower`` above ``upper`` dies (``lower (X) <= upper (Y) boundary rule
  broken``), trailing empty lines of a description are lost; on PVE 8 (``release_version``)
  ``replication`` and ``location`` are not in the schema;
- ``GET /nodes/{node}/apt/versions`` also lists ``pve-cluster`` at ``cluster_version``.

Differences from PVE: no cfs lock; sub-key values are not checked against their formats (fakepve's
schema check does the top-level ones).
"""

from __future__ import annotations

from fakepve.routing import die, param_error

from tests.support.ceph import CephPve

PVE_OUI = "BC:24:11"
#: The keys ``parse_datacenter_config`` parses as property strings, and their default keys.
PARSED = {
    "crs": None, "migration": "type", "replication": "type", "next-id": None, "ha": None, "notify": None,
    "u2f": None, "webauthn": None, "tag-style": None, "user-tag-access": None,
}  # fmt: skip
FLAGS = {"ha-rebalance-on-start", "ha-auto-rebalance", "allow-subdomains", "case-sensitive"}
NUMBERS = {
    "lower", "upper", "ha-auto-rebalance-threshold", "ha-auto-rebalance-hold-duration",
    "ha-auto-rebalance-margin",
}  # fmt: skip


def parse_property_string(text: str, default_key: str | None) -> dict:
    """pve-common ``parse_property_string``, short: ``k=v`` items, a bare one its format's default key."""
    out: dict = {}
    for part in filter(None, (item.strip() for item in text.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            if default_key is None:
                raise die(f"value without key, but schema does not define a default key: {part}")
            key, value = default_key, part
        if key in FLAGS:
            out[key] = 1 if value.lower() in ("1", "true", "yes", "on") else 0
        elif key in NUMBERS:
            out[key] = float(value) if "." in value else int(value)
        else:
            out[key] = value
    return out


class DatacenterPve(CephPve):
    """CephPve with a stored ``datacenter.cfg`` (see the module docstring)."""

    cluster_version = "9.1.6"

    def _routes_datacenter(self):
        return [("PUT", "/cluster/options", self._cluster_options_set)]

    def _major(self) -> int:
        return int(str(self.release_version).split(".")[0])

    async def _cluster_options(self, v, user):
        """``get_options``: the parsed file for an auditor, ``console`` and ``tag-style`` otherwise."""
        config = {"description": "", **self.datacenter}
        config.setdefault("mac_prefix", PVE_OUI)
        if not self.allowed(user, "/", "Sys.Audit"):
            config = {key: config[key] for key in ("console", "tag-style") if key in config}
        return {**config, "allowed-tags": []}

    async def _cluster_options_set(self, v, user):
        """``set_options``: each key as sent, then ``delete``; then ``write_datacenter_config``."""
        params = {key: value for key, value in v.items() if key != "delete"}
        if self._major() < 9:
            for key in ("replication", "location"):
                if key in params:
                    raise param_error(**{key: "property is not defined in schema"})
        config = dict(self.datacenter)
        config.update(params)
        for key in filter(None, str(v.get("delete") or "").replace(";", ",").split(",")):
            config.pop(key.strip(), None)
        self.datacenter = self._written(config)

    def _written(self, config: dict) -> dict:
        """``write_datacenter_config`` then ``parse_datacenter_config``, as the config comes back."""
        if str(config.get("mac_prefix", "")).upper() == PVE_OUI:
            del config["mac_prefix"]
        if config.get("console") == "applet":
            config["console"] = "html5"
        next_id = config.get("next-id")
        if isinstance(next_id, str):
            next_id = parse_property_string(next_id, None)
        if next_id is not None:
            lower, upper = int(next_id.get("lower", 100)), int(next_id.get("upper", 1_000_000))
            if lower > upper:
                raise die(f"lower ({lower}) <= upper ({upper}) boundary rule broken")
        for key, default_key in PARSED.items():
            if isinstance(config.get(key), str):
                config[key] = parse_property_string(config[key], default_key)
        access = config.get("user-tag-access")
        if isinstance(access, dict) and isinstance(access.get("user-allow-list"), str):
            access["user-allow-list"] = access["user-allow-list"].split(";")
        if isinstance(config.get("registered-tags"), str):
            config["registered-tags"] = config["registered-tags"].split(";")
        description = config.pop("description", "") or ""
        lines = description.split("\n")
        while lines and lines[-1] == "":
            lines.pop()
        if lines:
            config["description"] = "".join(f"{line}\n" for line in lines)
        return config

    async def _apt_versions(self, v, user):
        rows = await super()._apt_versions(v, user)
        return [*rows, {"Package": "pve-cluster", "OldVersion": self.cluster_version}]
