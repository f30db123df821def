"""Pure rules of external metric servers (salt_proxmox.datacenter.metrics), each beside its pve-manager
(``PVE/API2/Cluster/MetricServer.pm``, ``PVE/Status/*.pm``) or pve-common (``SectionConfig.pm``) source."""

from __future__ import annotations

import base64
import json

import pytest

from salt_proxmox.datacenter import metrics
from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve.facts import Release

TOKEN = "influx-token-never-shown"


def _declare(**options):
    return metrics.declare("sid", "lab", **options)


def _graphite(**options):
    return _declare(name="graphite", type="graphite", server="192.0.2.40", **options)


def _influx(**options):
    return _declare(
        name="influx", type="influxdb", server="influx.example.org", port=8086, token=TOKEN, **options
    )


def test_pve_s_defaults_are_no_drift():
    # Graphite.pm: properties defaults and _connect (port || 2003, proto || 'udp', timeout // 1),
    # assemble (path // 'proxmox'); Plugin.pm mtu default 1500.
    decl = _graphite(mtu=1500, proto="udp", timeout=1, path="proxmox", disable=False)
    live = metrics.parse({"type": "graphite", "server": "192.0.2.40"}, decl)
    assert metrics.SPEC.differences(live, decl) == {}
    assert live["port"] == 2003 and live["path"] == "proxmox"
    # InfluxDB.pm: verify-certificate default 1, max-body-size 25_000_000, organization/bucket // 'proxmox'.
    influx = _influx(**{"verify-certificate": 1, "max-body-size": 25_000_000, "bucket": "proxmox"})
    live = metrics.parse({"type": "influxdb", "server": "influx.example.org", "port": 8086}, influx)
    assert metrics.SPEC.differences(live, influx) == {}


def test_a_cleared_option_is_pve_s_default_and_written_as_delete():
    # MetricServer.pm update: ``delete`` drops the key, so PVE uses its default again; server and port are
    # on every PUT (pve-common SectionConfig.pm updateSchema copies non-optional properties as required).
    decl = _graphite(path=None, mtu="")
    assert decl.values["path"] == "proxmox" and decl.values["mtu"] == 1500
    live = metrics.parse({"type": "graphite", "server": "192.0.2.40", "path": "lab.pve", "mtu": 1400}, decl)
    call = metrics.update(decl, live)
    assert call.form == {"server": "192.0.2.40", "port": "2003", "delete": "mtu,path"}
    # A value other than the default is set; a flag whose default is 1 is sent as 0.
    influx = _influx(**{"verify-certificate": False, "influxdbproto": "https"})
    live = metrics.parse({"type": "influxdb", "server": "influx.example.org", "port": 8086}, influx)
    assert metrics.update(influx, live).form == {
        "server": "influx.example.org",
        "port": "8086",
        "verify-certificate": "0",
        "influxdbproto": "https",
    }


def test_every_create_carries_a_port():
    # SectionConfig.pm createSchema: port is not optional in Plugin.pm's propertyList, so POST requires
    # it; a graphite server without one uses 2003 (Graphite.pm _connect), OpenTelemetry 4318 over https
    # and 4317 over http (OpenTelemetry.pm _get_otlp_url).
    assert metrics.create(_graphite()).form["port"] == "2003"
    otel = _declare(name="otel", type="opentelemetry", server="otel.example.org")
    assert metrics.create(otel).form["port"] == "4318"
    plain = _declare(
        name="otel", type="opentelemetry", server="otel.example.org", **{"otel-protocol": "http"}
    )
    assert metrics.create(plain).form["port"] == "4317"
    live = metrics.parse(
        {"type": "opentelemetry", "server": "otel.example.org", "otel-protocol": "http"}, plain
    )
    assert metrics.SPEC.differences(live, plain) == {}


@pytest.mark.parametrize(
    ("options", "key", "words"),
    [
        # SectionConfig.pm check_value: "unexpected property '<key>'" for an option of another type.
        (
            {"name": "gr", "type": "graphite", "server": "h", "influxdbproto": "http"},
            "influxdbproto",
            "unexpected",
        ),
        ({"name": "ot", "type": "opentelemetry", "server": "h", "mtu": 1500}, "mtu", "graphite, influxdb"),
        # InfluxDB.pm options: port => {} (required); check_config "missing value for required option".
        ({"name": "in", "type": "influxdb", "server": "h"}, "port", "requires it"),
        # MetricServer.pm update: "unable to delete required option".
        ({"name": "gr", "type": "graphite", "server": None}, "server", "unable to delete required option"),
        # Graphite.pm pve_verify_graphite_path.
        ({"name": "gr", "type": "graphite", "server": "h", "path": "a..b"}, "path", "graphite path"),
        # JSONSchema.pm pve_verify_address.
        ({"name": "gr", "type": "graphite", "server": "no such host!"}, "server", "valid address"),
        # Graphite.pm properties: proto enum udp, tcp.
        ({"name": "gr", "type": "graphite", "server": "h", "proto": "http"}, "proto", "udp, tcp"),
        # JSONSchema.pm $CONFIGID_RE: at least two characters.
        ({"name": "g", "type": "graphite", "server": "h"}, "name", "invalid configuration ID"),
        # A token only an InfluxDB server takes (InfluxDB.pm options, extract_sensitive_params).
        ({"name": "gr", "type": "graphite", "server": "h", "token": TOKEN}, "token", "unexpected"),
        ({"name": "gr", "type": "collectd", "server": "h"}, "type", "graphite, influxdb, opentelemetry"),
    ],
)
def test_bad_declarations_are_refused_by_key(options, key, words):
    with pytest.raises(DeclarationError) as caught:
        _declare(**options)
    assert any(problem.startswith(f"{key}:") and words in problem for problem in caught.value.problems)
    assert TOKEN not in str(caught.value)


def test_otel_headers_must_be_base64_of_a_json_object():
    # OpenTelemetry.pm _parse_headers: anything is stored, a bad value only warns at send time, so the
    # headers would silently go unsent.
    good = base64.b64encode(json.dumps({"Authorization": "Bearer x"}).encode()).decode()
    _declare(name="otel", type="opentelemetry", server="h", **{"otel-headers": good})
    with pytest.raises(DeclarationError, match="otel-headers: expected base64 of a JSON object"):
        _declare(name="otel", type="opentelemetry", server="h", **{"otel-headers": "Authorization: x"})


def test_the_token_is_sent_at_create_and_on_a_serial_bump_only_and_never_shown():
    # MetricServer.pm create/update: extract_sensitive_params(['token']); InfluxDB.pm on_add_hook keeps it
    # in priv/metricserver/<id>.pw; read never returns it.
    decl = _influx(secret_serial=2)
    assert metrics.create(decl).form["token"] == TOKEN
    assert TOKEN not in repr(decl) and TOKEN not in json.dumps(decl.stored())
    live = metrics.parse({"type": "influxdb", "server": "influx.example.org", "port": 8086}, decl)
    assert "token" not in live
    assert metrics.update(decl, {**live, "secret_serial": 2}) is None
    bumped = metrics.update(decl, {**live, "secret_serial": 1})
    assert bumped.form["token"] == TOKEN
    with pytest.raises(DeclarationError, match="secret_serial: the declaration holds no token"):
        _declare(name="influx", type="influxdb", server="h", port=8086, secret_serial=1)


def test_a_type_change_is_refused_at_plan_naming_a_new_id():
    # MetricServer.pm update: no type parameter (updateSchema), the plugin is looked up from the stored
    # section, so a graphite server never becomes an InfluxDB one.
    decl = _influx()
    live = metrics.parse({"type": "graphite", "server": "influx.example.org", "port": 8086}, _graphite())
    (refusal,) = metrics.refusals(None, decl, "update", live)
    assert "PVE cannot change its type" in refusal and "new id" in refusal


def test_opentelemetry_is_refused_on_pve_8(monkeypatch):
    # pve-manager 9.0.0 added PVE/Status/OpenTelemetry.pm; stable-8 has graphite and influxdb only.
    decl = _declare(name="otel", type="opentelemetry", server="h")
    monkeypatch.setattr(metrics, "release", lambda ctx: Release("8.4"))
    (refusal,) = metrics.refusals(None, decl, "create", None)
    assert refusal.startswith("type: the cluster runs PVE 8.4") and "pve-manager 9.0.0" in refusal
    monkeypatch.setattr(metrics, "release", lambda ctx: Release("9.1"))
    assert metrics.refusals(None, decl, "create", None) == []


def test_the_plan_says_pve_tests_the_connection():
    # Plugin.pm test_connection (skipped for a disabled plugin); OpenTelemetry.pm's own test_connection
    # does not look at disable.
    (said,) = metrics.side_effects(None, _graphite(), "create")
    assert "192.0.2.40:2003" in said and "unreachable server refuses the write" in said
    assert metrics.side_effects(None, _graphite(disable=True), "update") == []
    otel = _declare(name="otel", type="opentelemetry", server="h", disable=True)
    assert "even when disabled" in metrics.side_effects(None, otel, "create")[0]


def test_the_export_names_only_what_differs_from_pve_s_defaults_and_never_the_token():
    probe = metrics.identify("export", "lab", name="influx")
    live = metrics.parse(
        {"type": "influxdb", "server": "i.example.org", "port": 8086, "mtu": 1500, "bucket": "pve"}, probe
    )
    exported = metrics.export_values(live, probe)
    assert exported == {"type": "influxdb", "server": "i.example.org", "port": 8086, "bucket": "pve"}
    assert metrics.SPEC.export_secrets(live) == {"token"}
    again = metrics.declare("export", "lab", name="influx", adopt=True, **exported)
    assert metrics.SPEC.differences(live, again) == {}
