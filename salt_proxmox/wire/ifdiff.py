"""The staged diff of a node's network (pure): ``GET /nodes/{node}/network`` answers, beside the
interfaces, ``changes``: ``diff -b -N -u`` of ``/etc/network/interfaces`` against the staged
``interfaces.new`` (pve-manager ``PVE/API2/Network.pm`` ``index``, pve-common ``INotify.pm``
``ccache_compute_diff``). Which ``iface`` stanzas it adds or drops is read here, for the node's apply
step and for a guest NIC whose bridge is only staged."""

from __future__ import annotations

import re

_GONE = re.compile(r"^-\s*iface\s+(\S+)", re.MULTILINE)
_ADDED = re.compile(r"^\+\s*iface\s+(\S+)", re.MULTILINE)


def staged_deletions(diff: str) -> list[str]:
    """The interfaces a staged diff deletes: an ``iface`` stanza the running file has and the staged
    one has not (a stanza whose method changed is removed and added, so it is not one)."""
    return sorted(set(_GONE.findall(diff)) - set(_ADDED.findall(diff)))


def staged_additions(diff: str) -> list[str]:
    """The interfaces a staged diff adds: an ``iface`` stanza the staged file has and the running
    one has not (made live only by the node's network apply)."""
    return sorted(set(_ADDED.findall(diff)) - set(_GONE.findall(diff)))
