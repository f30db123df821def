"""PVE's refusals and rewrites of a node interface write, predicted at plan (docs/design.md §7b).

Sources (pve-manager master ``14a22df``, pve-common master ``f665029``): pve-manager
``PVE/API2/Network.pm`` (``create_network``/``update_network`` and their checks) and pve-common
``src/PVE/Network/Interfaces.pm`` (``__read_etc_network_interfaces``,
``__write_etc_network_interfaces``, ``__interface_to_string``; ``PVE/INotify.pm`` registers them
for ``interfaces``). Each write rewrites the whole file, so what the writer refuses or forces is
judged here against the node's listing, with what this run writes earlier laid over it.

- **The address method** (``update_network``): the update takes no ``method``, ``method6`` or
  ``families`` (its schema has none, ``additionalProperties => 0``); it rebuilds them from the
  address IN THAT PUT: ``inet static`` with a ``cidr`` sent, else ``inet manual``; an ``inet6``
  stanza only with a ``cidr6`` sent (``static``). An interface configured otherwise (``inet dhcp``,
  ``inet6 auto``/``dhcp``, an ``inet6 manual`` stanza of its own) would be rewritten, and the node's
  next reload would drop its address: such an update is refused (``address_method``), unless the
  declaration itself declares the static address of each family whose method changes.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.simple.spec import Declared

#: The address families an ``iface`` stanza names, and the key holding each one's method.
_METHOD_KEY = {"inet": "method", "inet6": "method6"}
_ADDRESS_KEY = {"inet": "cidr", "inet6": "cidr6"}


def pve_families(form: Mapping[str, str]) -> dict[str, str]:
    """``{family: method}`` as ``update_network`` writes them for ``form`` (the PUT's keys):
    ``inet`` static with a ``cidr``, ``inet6`` static with a ``cidr6``, ``inet manual`` when
    neither."""
    written = {family: "static" for family, key in _ADDRESS_KEY.items() if form.get(key)}
    return written or {"inet": "manual"}


def live_families(live: Mapping[str, object]) -> dict[str, str]:
    """``{family: method}`` of the interface as the listing gives it (``families``, ``method``,
    ``method6``; ``__read_etc_network_interfaces`` defaults a missing method to ``manual`` and
    ``families`` to ``[inet]``). A stanza without a family (ifupdown2's typeless ``iface``) is
    left out: it has no method to lose."""
    families = live.get("families")
    if not isinstance(families, list) or not families:
        families = ["inet"]
    return {
        family: str(live.get(_METHOD_KEY[family]) or "manual") for family in families if family in _METHOD_KEY
    }


def _spelled(families: Mapping[str, str]) -> str:
    return ", ".join(f"`{family} {method}`" for family, method in families.items())


def address_method(decl: Declared, live: Mapping[str, object], form: Mapping[str, str]) -> list[str]:
    """The refusal of an update PVE would write with another address method (module docstring):
    ``[]`` when every live family keeps its method, or changes to ``static`` with the address the
    declaration declares for it."""
    before, after = live_families(live), pve_families(form)
    lost = [
        family
        for family, method in before.items()
        if after.get(family) != method
        and not (after.get(family) == "static" and decl.values.get(_ADDRESS_KEY[family]))
    ]
    if not lost:
        return []
    node = decl.names["node"]
    dynamic = [family for family in lost if before[family] not in ("static", "manual")]
    harm = (
        "so the node's next reload would leave it without the address it gets by "
        + " and ".join(f"{before[family]} ({family})" for family in dynamic)
        if dynamic
        else f"so the node's next reload would drop its {_spelled({f: before[f] for f in lost})} stanza"
    )
    keys = " and ".join(_ADDRESS_KEY[family] for family in lost)
    return [
        f"{decl.label}: it is configured {_spelled(before)}, and PVE rewrites an interface it updates as "
        "`inet static` with the cidr the update sends or `inet manual` without one, with an `inet6` stanza "
        "only for a cidr6 sent (pve-manager PVE/API2/Network.pm update_network; the API takes no method). "
        f"This update would stage {_spelled(after)}, {harm}. Change it in /etc/network/interfaces on node "
        f"{node} (then `ifreload -a`), or declare the interface as it is (nothing to update), or declare "
        f"its static {keys}."
    ]
