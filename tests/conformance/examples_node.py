"""The conformance examples of ``proxmox_node``'s kinds (``node_dns``, ``node_hosts``, ``node_time``), merged
into ``examples.EXAMPLES``. A node always has these settings, so each first write takes them over
(``adopt: true``); their delete is ``ensure: absent`` without ``removal`` (forget: PVE deletes none of
them, and ``removal: destroy`` is refused, ``contract.KEPT``)."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.examples import Examples, _bad

_DNS = {"name": "pve1", "search": "example.org", "dns1": "192.0.2.53", "dns2": "192.0.2.54", "adopt": True}
_HOSTS = {"name": "pve1", "entries": {"192.0.2.60": ["ci.example.org", "ci"]}, "adopt": True}
_TIME = {"name": "pve1", "timezone": "Europe/Vienna", "adopt": True}


def _node(kind: str, create: dict, update: dict, clear: dict, wrong: dict) -> Examples:
    return Examples(
        create=create,
        update={**create, **update},
        clear={**create, **clear},
        delete={"name": create["name"]},
        bad={
            **_bad(create, {"name": create["name"]}, kind, f"{kind}_absent"),
            "wrong type": (kind, {**create, **wrong}, next(iter(wrong))),
            # pve-manager PVE/API2/Nodes.pm: GET /nodes lists the cluster's nodes; PVE proxies to the node.
            "no such node": (kind, {**create, "name": "pve9"}, "name"),
        },
    )


def examples() -> dict[str, Examples]:
    """``{kind name: Examples}`` of the node kinds."""
    dns = _node("dns", _DNS, {"dns2": "192.0.2.55"}, {"dns2": None}, {"dns1": 7})
    hosts = _node(
        "hosts",
        _HOSTS,
        {"entries": {"192.0.2.60": ["ci.example.org", "ci", "runner"]}},
        {"entries": {"192.0.2.60": None}},
        {"entries": "192.0.2.60 ci"},
    )
    time = _node("time", _TIME, {"timezone": "Europe/Berlin"}, {"timezone": "UTC"}, {"timezone": 7})
    gap = ("dns", {**_DNS, "dns2": None, "dns3": "192.0.2.9"}, "dns3")
    not_ip = ("hosts", {**_HOSTS, "entries": {"ci": ["x"]}}, "entries")
    no_zone = ("time", {**_TIME, "timezone": "Mars/Olympus"}, "timezone")
    return {
        "node_dns": replace(dns, bad={**dns.bad, "gap": gap}),
        "node_hosts": replace(hosts, bad={**hosts.bad, "not an address": not_ip}),
        "node_time": replace(time, bad={**time.bad, "no such zone": no_zone}),
    }
