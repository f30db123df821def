"""A node's time zone (``proxmox_node.time``).

Source: pve-manager ``PVE/API2/Nodes.pm`` ``time`` (GET, Sys.Audit on ``/nodes/{node}``: ``timezone``,
``time``, ``localtime``) and ``set_timezone`` (PUT, Sys.Modify on ``/nodes/{node}``, ``timezone``
required). PVE 9 checks the zone with pve-common ``src/PVE/Systemd.pm`` ``set_timezone`` (one of
``timedatectl list-timezones``, else ``timezone: No such timezone``); PVE 8 with ``src/PVE/INotify.pm``
``write_etc_timezone`` (``/usr/share/zoneinfo/<zone>`` must be a file, the same refusal).

- The plan checks a zone against Python's tz database (``zoneinfo.available_timezones()``: the IANA
  names, as ``timedatectl`` lists them), so a zone PVE would refuse is refused by name before a write.
- Only ``timezone`` is compared; ``time`` and ``localtime`` move with the clock and are never drift, and
  are left out of the fingerprint the write guard compares (no digest: ``simple.spec.reread_guard``).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from functools import lru_cache

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.node import common
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple.spec import Call, Declared, fingerprint, reread_guard

FAMILY = "node_time"
#: What moves with the clock in ``GET /nodes/{node}/time``.
CLOCK = ("time", "localtime")


@lru_cache(maxsize=1)
def zones() -> frozenset[str]:
    """The time zone names Python's tz database knows (``zoneinfo.available_timezones``)."""
    return frozenset(zoneinfo.available_timezones())


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """The time zone of node ``name``. Raises DeclarationError."""
    return common.identify_node(state_id, target, name, extra, what="time zone", has="timezone")


def declare(
    state_id: str, target: str, name: object = None, timezone: object = None, adopt: object = False, **extra
) -> Declared:
    """A checked declaration: ``timezone`` (an IANA name, ``Europe/Vienna``; required), ``adopt``. Raises
    DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name, **extra)
    problems = []
    if not isinstance(timezone, str) or timezone not in zones():
        problems.append(
            f"timezone: {shown(timezone)} is not a time zone name (PVE: `No such timezone`, Systemd.pm "
            "set_timezone checks timedatectl list-timezones; zone names as in /usr/share/zoneinfo)"
        )
    problem = boolean_problem("adopt", adopt)
    if problem:
        problems.append(problem)
    if problems:
        raise DeclarationError(problems)
    return probe.declaring({"timezone": timezone}, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET /nodes/{node}/time`` → ``timezone`` and a ``fingerprint`` without the clock. Raises
    ValueError for another shape."""
    if not isinstance(data, Mapping) or not isinstance(data.get("timezone"), str):
        raise ValueError("expected the node's time settings with a timezone")
    return {"timezone": data["timezone"], "fingerprint": fingerprint(data, CLOCK)}


def _path(decl: Declared) -> str:
    return api_path("nodes", decl.names["name"], "time")


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /nodes/{node}/time`` with ``timezone``; None when the node has it."""
    if live.get("timezone") == decl.values["timezone"]:
        return None
    return Call("PUT", _path(decl), form={"timezone": str(decl.values["timezone"])})


ENDPOINT = Endpoint(
    "PUT /nodes/{node}/time", ("timezone",), lambda key: Rule() if key == "timezone" else None
)

SPEC = common.setting_spec(
    "time zone",
    "never: a node always has a time zone (pve-manager PVE/API2/Nodes.pm time)",
    family=FAMILY,
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    parse=parse,
    create=lambda decl: update(decl, {}),
    create_endpoint=ENDPOINT,
    update=update,
    update_endpoint=ENDPOINT,
    write_guard=reread_guard(_path, "GET /nodes/{node}/time shows no digest", skip=CLOCK),
    export_values=lambda live, probe: {"timezone": live["timezone"]},
    live_only=("fingerprint",),
)
