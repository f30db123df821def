"""How this minion reaches the cluster: the connections the firewall must keep letting through
(``salt_proxmox.firewall.lockout``), found without sending a packet.

- the API: port 8006 (pveproxy's, whatever port the member's URL names: another one is a proxy's or
  a forward's, in front of the node) of each member of the target (``https://host:port``), its host resolved
  (``socket.getaddrinfo``), the node it is found by the address ``GET /cluster/status`` lists for
  each node; a member whose address is no node's (a name behind a proxy or a VIP) is judged against
  every node;
- SSH: port 22 of each node's address in ``GET /cluster/status``;
- the source address of each: the one the kernel would route from (a UDP socket ``connect``ed to
  the destination, then ``getsockname``: no packet is sent). A NAT between the minion and the node
  changes the source PVE sees; the model cannot know it (docs/design.md §7c).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlsplit

from salt_proxmox.firewall.lockout import Traffic

#: The API's port as the node's firewall sees it (pve-firewall ``enable_host_firewall``: ``# PVE API``).
API_PORT = 8006


def route_source(dest: str) -> str | None:
    """The local address the kernel routes to ``dest`` from, or None when there is no route."""
    family = socket.AF_INET6 if ":" in dest else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((dest, 9))
            return str(probe.getsockname()[0])
    except OSError:
        return None


def resolve(host: str) -> list[str]:
    """The addresses ``host`` resolves to ([] when it does not)."""
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})
    except OSError:
        return []


def traffic(
    members: Sequence[str],
    nodes: Mapping[str, str],
    source: Callable[[str], str | None] | None = None,
    lookup: Callable[[str], list[str]] | None = None,
) -> tuple[list[Traffic], list[str]]:
    """``(connections, notes)``: the minion's API connections to ``members`` and SSH connections to
    ``nodes`` (``{node: address}``), each from the address ``source`` finds; a destination it cannot
    resolve or route to is a note, not a connection."""
    source = source or route_source
    lookup = lookup or resolve
    found, notes = [], []
    by_address = {address: node for node, address in nodes.items()}
    for member in members:
        parts = urlsplit(member)
        host = parts.hostname or ""
        addresses = lookup(host)
        if not addresses:
            notes.append(f"member {member} does not resolve here, so the firewall is not judged for it")
        for address in addresses:
            origin = source(address)
            if origin is None:
                notes.append(f"no route to member {member} ({address}), so the firewall is not judged for it")
                continue
            for node in [by_address[address]] if address in by_address else sorted(nodes):
                found.append(Traffic("API traffic", node, origin, address, API_PORT))
    for node, address in sorted(nodes.items()):
        origin = source(address)
        if origin is None:
            notes.append(f"no route to node {node} ({address}), so SSH to it is not judged")
            continue
        found.append(Traffic("SSH", node, origin, address, 22))
    return found, notes
