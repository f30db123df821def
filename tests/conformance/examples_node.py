"""The conformance examples of ``proxmox_node``'s kinds (``node_dns``, ``node_hosts``, ``node_time`` and
``apt_repository``), merged into ``examples.EXAMPLES``. A node always has these settings, so each first
write takes them over (``adopt: true``); the first three's delete is ``ensure: absent`` without
``removal`` (forget: PVE deletes none of them, and ``removal: destroy`` is refused, ``contract.KEPT``), the
APT repositories' is ``removal: destroy`` (it disables what the last declaration enabled)."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.examples import Examples, _bad

_DNS = {"name": "pve1", "search": "example.org", "dns1": "192.0.2.53", "dns2": "192.0.2.54", "adopt": True}
_HOSTS = {"name": "pve1", "entries": {"192.0.2.60": ["ci.example.org", "ci"]}, "adopt": True}
_TIME = {"name": "pve1", "timezone": "Europe/Vienna", "adopt": True}
# A node's APT repositories (pve-manager API2/APT.pm over proxmox-apt): the fake node's fresh install has
# the enterprise repository enabled (adopt: true takes it over); the examples add no-subscription and
# disable enterprise, then add test, then disable test; the destroy disables what was enabled.
_APT_OFF = {"path": "/etc/apt/sources.list.d/pve-enterprise.sources", "index": 0, "enabled": False}
_APT = {"name": "pve1", "adopt": True, "repositories": [{"handle": "no-subscription"}, _APT_OFF]}


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
        "apt_repository": Examples(
            create=_APT,
            update={"name": "pve1", "repositories": [*_APT["repositories"], {"handle": "test"}]},
            clear={
                "name": "pve1",
                "repositories": [*_APT["repositories"], {"handle": "test", "enabled": False}],
            },
            delete={"name": "pve1", "removal": "destroy"},
            bad={
                **_bad(_APT, {"name": "pve1"}, "apt_repository", "apt_repository_absent"),
                "wrong type": ("apt_repository", {**_APT, "repositories": "no-subscription"}, "repositories"),
            },
        ),
    }
