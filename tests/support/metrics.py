"""A FakePve that keeps external metric servers, as pve-manager does.

fakepve 0.5.0 checks the ``/cluster/metrics/server`` requests against PVE 9's schema and permissions, then
answers them with a generic handler that stores nothing. ``MetricServerPve`` adds stateful routes in front
of it (the ``_routes_*`` mechanism), written from pve-manager 9.2.11 ``PVE/API2/Cluster/MetricServer.pm``
over ``PVE/Status/Plugin.pm``, ``Graphite.pm``, ``InfluxDB.pm``, ``OpenTelemetry.pm`` and pve-common
``SectionConfig.pm`` ``check_config``/``check_value``:

- ``metric_servers``: ``status.cfg``'s sections by id, each ``{type, <options as sent>}`` with integers and
  booleans as numbers (``check_value``: ``$value + 0``); ``metric_tokens``: the InfluxDB tokens kept apart
  (``priv/metricserver/<id>.pw``, ``on_add_hook``/``on_update_hook``), never in an answer;
- ``GET /cluster/metrics/server`` is ``server_index`` (``id``, ``disable`` // 0, ``type``, ``server``,
  ``port``); ``GET …/{id}`` is ``read`` (the section, no digest) or 500 ``status server entry '<id>' does
  not exist``;
- ``POST …/{id}`` is ``create``: ``Metric server '<id>' already exists``, ``unexpected property '<key>'``
  for an option of another type, ``missing value for required option '<key>'``; on PVE 8
  (``release_version`` below 9) the type ``opentelemetry`` is not in the enumeration;
- ``PUT …/{id}`` is ``update``: the digest (``assert_if_modified``), ``no such server '<id>'``, the
  options sent, then ``delete`` (``no such option``, ``unable to delete required option``, ``cannot set
  and delete property '<key>' at the same time!``); a ``token`` in ``delete`` removes the kept token;
- ``DELETE …/{id}`` is ``delete``: the section and its token go.

Differences from PVE: no ``test_connection`` (PVE connects to the server before it saves a create or an
update); the error texts are the die messages of the code, without the cfs lock's wrapping; the digest is
one hash of the sections, not the file's bytes.
"""

from __future__ import annotations

import hashlib
import json

from fakepve.routing import check_digest, die, param_error, split_list

from tests.support.ceph import CephPve

#: Each plugin's ``options`` (the keys its sections take) and which of them are required.
OPTIONS = {
    "graphite": ({"server", "port", "mtu", "proto", "timeout", "path", "disable"}, {"server"}),
    "influxdb": (
        {
            "server", "port", "mtu", "disable", "organization", "bucket", "token", "influxdbproto", "timeout",
            "max-body-size", "api-path-prefix", "verify-certificate",
        },
        {"server", "port"},
    ),
    "opentelemetry": (
        {
            "server", "port", "disable", "otel-protocol", "otel-path", "otel-timeout", "otel-headers",
            "otel-verify-ssl", "otel-max-body-size", "otel-resource-attributes", "otel-compression",
        },
        {"server"},
    ),
}  # fmt: skip
#: The integer and boolean properties (``check_value`` stores them as numbers).
NUMBERS = {
    "port", "mtu", "timeout", "disable", "max-body-size", "verify-certificate", "otel-timeout",
    "otel-verify-ssl", "otel-max-body-size",
}  # fmt: skip


class MetricServerPve(CephPve):
    """CephPve with stateful metric servers (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.metric_servers: dict[str, dict] = {}
        self.metric_tokens: dict[str, str] = {}

    # ---------------------------------------------------------------------------------- scenarios

    def add_metric_server(self, server_id: str, type: str, token: str | None = None, **options) -> dict:
        """A metric server made outside this product (by hand in the GUI), ``options`` as stored."""
        self.metric_servers[server_id] = {"type": type, **options}
        if token is not None:
            self.metric_tokens[server_id] = token
        return self.metric_servers[server_id]

    def metrics_digest(self) -> str:
        text = json.dumps(self.metric_servers, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - as PVE's SectionConfig digest

    # ------------------------------------------------------------------------------------- routes

    def _routes_metric_servers(self):
        servers, server = "/cluster/metrics/server", "/cluster/metrics/server/{id}"
        return [
            ("GET", servers, self._metrics_index),
            ("GET", server, self._metrics_read),
            ("POST", server, self._metrics_create),
            ("PUT", server, self._metrics_update),
            ("DELETE", server, self._metrics_delete),
        ]

    async def _metrics_index(self, v, user):
        return [
            {
                "id": sid,
                "disable": section.get("disable", 0),
                "type": section["type"],
                "server": section.get("server"),
                "port": section.get("port"),
            }
            for sid, section in sorted(self.metric_servers.items())
        ]

    async def _metrics_read(self, v, user):
        section = self.metric_servers.get(v["id"])
        if section is None:
            raise die(f"status server entry '{v['id']}' does not exist")
        return dict(section)

    @staticmethod
    def _checked(kind: str, param: dict) -> dict:
        """``check_config``: every key an option of the type, numbers as numbers."""
        options, _ = OPTIONS[kind]
        settings = {}
        for key, value in param.items():
            if key not in options:
                raise die(f"unexpected property '{key}'")
            settings[key] = int(value) if key in NUMBERS else value
        return settings

    async def _metrics_create(self, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        kind, sid = param.pop("type"), param.pop("id")
        if kind == "opentelemetry" and int(str(self.release_version).split(".")[0]) < 9:
            raise param_error(
                type="value 'opentelemetry' does not have a value in the enumeration 'graphite, influxdb'"
            )
        token = param.pop("token", None)
        if sid in self.metric_servers:
            raise die(f"Metric server '{sid}' already exists")
        settings = self._checked(kind, param)
        for key in sorted(OPTIONS[kind][1]):
            if key not in settings:
                raise die(f"missing value for required option '{key}'")
        self.metric_servers[sid] = {"type": kind, **settings}
        if token is not None:
            self.metric_tokens[sid] = token
        else:
            self.metric_tokens.pop(sid, None)
        return None

    async def _metrics_update(self, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        sid = param.pop("id")
        digest = param.pop("digest", None)
        delete = split_list(param.pop("delete", ""))
        token = param.pop("token", None)
        check_digest(self.metrics_digest(), digest)
        section = self.metric_servers.get(sid)
        if section is None:
            raise die(f"no such server '{sid}'")
        kind = section["type"]
        settings = self._checked(kind, param)
        data = {**section, **settings}
        options, required = OPTIONS[kind]
        for key in delete:
            if key not in options:
                raise die(f"no such option '{key}'")
            if key in required:
                raise die(f"unable to delete required option '{key}'")
            if key in settings:
                raise die(f"cannot set and delete property '{key}' at the same time!")
            data.pop(key, None)
        self.metric_servers[sid] = data
        if token is not None:
            self.metric_tokens[sid] = token
        elif "token" in delete:
            self.metric_tokens.pop(sid, None)
        return None

    async def _metrics_delete(self, v, user):
        if v["id"] not in self.metric_servers:
            raise die("cannot lookup undefined type!")
        del self.metric_servers[v["id"]]
        self.metric_tokens.pop(v["id"], None)
        return None
