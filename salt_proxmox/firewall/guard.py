"""The no-lockout check of the firewall's options and of the cluster's ``management`` and ``blacklist``
IP sets, on the one model the rule lists use (``salt_proxmox.firewall.lockout``).

The firewall as it stands (``listcheck.standing_firewall``, read with the read credential), with what
earlier states of this run write (``listcheck.with_run_plans``), is ``before``; the same with the change
judged is ``after``; the minion's traffic to each member's API and SSH (``reach.traffic``) is judged on
both, and a connection ``after`` drops that ``before`` lets through is a refusal naming what drops it.

- Options: only the cluster's and a node's reach the nodes' own traffic (pve-firewall ``Firewall.pm``
  ``compile``: a guest's options filter its own tap device); a guest's are never judged here.
- ``management``: pve-firewall accepts its sources on the API, SSH and the cluster's ports before the
  cluster's ``policy_in`` (``ruleset_generate_host_rules`` ``PVEFW-HOST-IN``); the model reads it.
- ``blacklist``: pve-firewall drops its sources first in ``PVEFW-HOST-IN`` and ``PVEFW-FORWARD``
  (``ruleset_create_chain`` of ``PVEFW-blacklist``, ``generate_std_chains``), whatever the rules say,
  once the cluster firewall is enabled: a new entry holding the minion's source is a refusal.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import replace

from salt_proxmox.firewall import listcheck, reach
from salt_proxmox.firewall import lockout as model
from salt_proxmox.run.context import PveContext

#: What each refusal tells the operator to do.
REMEDY = "declare allow_lockout: true to make the change knowingly, or let this minion's traffic in first"


def _judge(ctx: PveContext, change) -> list[str]:
    """Refusals for ``change(before) -> after`` (``model.Firewall``). Raises what the reads raise."""
    before, nodes = listcheck.standing_firewall(ctx)
    before = listcheck.with_run_plans(ctx, before)
    traffic, _notes = reach.traffic(ctx.target.members, nodes)
    refusals, _more = model.lockout(change(before), traffic, before)
    return refusals


def options_lockout(ctx: PveContext, scope: str, changes: Mapping[str, object]) -> list[str]:
    """Refusals for firewall options ``changes`` (``{enable: 1}``, ``{policy_in: DROP}``) of ``scope``
    (``cluster``, ``node/<node>``; a guest's scope is never refused here). Raises what the reads raise."""
    kind, _, node = scope.partition("/")
    if kind == "cluster":

        def change(fw):
            return replace(fw, cluster_options={**fw.cluster_options, **changes})

    elif kind == "node":

        def change(fw):
            options = {**fw.node_options.get(node, {}), **changes}
            return replace(fw, node_options={**fw.node_options, node: options})

    else:
        return []
    return [f"firewall options of {scope}: {refusal}; {REMEDY}" for refusal in _judge(ctx, change)]


def _entries(values: Sequence[object]) -> list[dict]:
    """IP set entries as the model reads them (``{cidr, nomatch}``), from canonical entries."""
    out = []
    for entry in values:
        if isinstance(entry, Mapping):
            out.append({"cidr": str(entry.get("cidr", "")), "nomatch": bool(entry.get("nomatch"))})
        else:
            text = str(entry)
            out.append({"cidr": text.lstrip("!"), "nomatch": text.startswith("!")})
    return out


def ipset_lockout(ctx: PveContext, name: str, old: Sequence[object], new: Sequence[object]) -> list[str]:
    """Refusals for the cluster IP set ``name`` (``management`` or ``blacklist``) going from ``old`` to
    ``new`` entries. Raises what the reads raise."""
    if name == "management":

        def change(fw):
            return replace(fw, ipsets={**fw.ipsets, "management": _entries(new)})

        return [f"IP set management: {refusal}; {REMEDY}" for refusal in _judge(ctx, change)]
    if name != "blacklist":
        return []
    before, nodes = listcheck.standing_firewall(ctx)
    before = listcheck.with_run_plans(ctx, before)
    if not model.enabled(before.cluster_options.get("enable", 0)):
        return []  # the cluster firewall is off: the blacklist drops nothing
    traffic, _notes = reach.traffic(ctx.target.members, nodes)
    refusals = []
    for each in traffic:
        source = ipaddress.ip_address(each.source)
        held = [e for e in _entries(new) if not e["nomatch"] and _holds(e["cidr"], source)]
        was = [e for e in _entries(old) if not e["nomatch"] and _holds(e["cidr"], source)]
        if held and not was:
            refusals.append(
                f"IP set blacklist: entry {held[0]['cidr']} would drop this minion's {each} (pve-firewall "
                f"drops blacklisted sources before any rule); {REMEDY}"
            )
    return refusals


def _holds(cidr: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    try:
        return address in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
