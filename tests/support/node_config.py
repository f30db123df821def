"""A FakePve that keeps each node's ``/etc/resolv.conf``, ``/etc/hosts`` and time zone, as PVE does.

fakepve 0.5.0 checks ``/nodes/{node}/dns``, ``/hosts`` and ``/time`` against PVE 9's schema and
permissions, then answers them with synthesised values and stores nothing (``shapes.py``). ``NodeConfigPve``
adds stateful routes in front of it (the ``_routes_*`` mechanism), written from pve-manager
``PVE/API2/Nodes.pm`` (``dns``, ``update_dns``, ``get_etc_hosts``, ``write_etc_hosts``, ``time``,
``set_timezone``) over pve-common ``src/PVE/INotify.pm`` and ``src/PVE/Systemd.pm``:

- ``node_resolv[node]``: the resolv.conf text; ``GET …/dns`` is ``read_etc_resolv_conf`` (``search``
  from the first ``search``/``domain`` line's first word, ``dns1``..``dns3`` from the first three
  ``nameserver`` lines), ``PUT …/dns`` is ``update_etc_resolv_conf`` (the PUT's ``search`` and name
  servers, each once, ``0.0.0.0`` skipped, then every other line kept);
- ``node_hosts[node]``: the hosts text; ``GET …/hosts`` is ``read_etc_hosts`` (``digest``: SHA-1 of the
  text), ``POST …/hosts`` is ``write_etc_hosts`` (``assert_if_modified`` when a digest is sent; ``Invalid
  IP``/``Invalid Hostname`` as 400 on ``data``; the text stored as sent);
- ``node_timezone[node]``: ``GET …/time`` (``time`` and ``localtime`` from the clock), ``PUT …/time``
  (``No such timezone`` as 400 on ``timezone``).

Differences from PVE: a zone is checked against Python's tz database, not ``timedatectl list-timezones``
(PVE 9) or ``/usr/share/zoneinfo`` (PVE 8); no UTF-8 decoding of comment lines; the digest is of the
text as stored, which is the file's bytes for ASCII.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import time
import zoneinfo

from fakepve.routing import check_digest, param_error

from tests.support.ceph import CephPve

#: A node's files before anything writes them (the Debian installer's, as on a fresh PVE node).
RESOLV = "search example.org\nnameserver 192.0.2.53\n"
HOSTS = (
    "127.0.0.1 localhost.localdomain localhost\n{ip} {node}.example.org {node}\n\n# IPv6\n::1 ip6-localhost\n"
)
_NAME = re.compile(r"^[.\-a-zA-Z0-9]+$")


def _ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return "%" not in text


class NodeConfigPve(CephPve):
    """CephPve with each node's DNS settings, hosts file and time zone kept (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.node_resolv: dict[str, str] = {}
        self.node_hosts: dict[str, str] = {}
        self.node_timezone: dict[str, str] = {}

    # ---------------------------------------------------------------------------------- scenarios

    def resolv_of(self, node: str) -> str:
        return self.node_resolv.setdefault(node, RESOLV)

    def hosts_of(self, node: str) -> str:
        number = sorted(self.nodes).index(node) + 21 if node in self.nodes else 20
        return self.node_hosts.setdefault(node, HOSTS.format(ip=f"192.0.2.{number}", node=node))

    # ------------------------------------------------------------------------------------- routes

    def _routes_node_config(self):
        return [
            ("GET", "/nodes/{node}/dns", self._node_dns),
            ("PUT", "/nodes/{node}/dns", self._node_dns_update),
            ("GET", "/nodes/{node}/hosts", self._node_hosts_read),
            ("POST", "/nodes/{node}/hosts", self._node_hosts_write),
            ("GET", "/nodes/{node}/time", self._node_time),
            ("PUT", "/nodes/{node}/time", self._node_time_set),
        ]

    async def _node_dns(self, v, user):
        found, count = {}, 0
        for line in self.resolv_of(v["node"]).split("\n"):
            if match := re.match(r"^(search|domain)\s+(\S+)\s*", line):
                found["search"] = match.group(2)
            elif (match := re.match(r"^\s*nameserver\s+(\S+)\s*", line)) and _ip(match.group(1)):
                count += 1
                if count <= 3:
                    found[f"dns{count}"] = match.group(1)
        return found

    async def _node_dns_update(self, v, user):
        data = f"search {v['search']}\n" if v.get("search") else ""
        written = set()
        for key in ("dns1", "dns2", "dns3"):
            server = v.get(key)
            if server and server != "0.0.0.0" and server not in written:  # noqa: S104 - compared
                written.add(server)
                data += f"nameserver {server}\n"
        kept = [
            line
            for line in self.resolv_of(v["node"]).splitlines(keepends=True)
            if not re.match(r"^(search|domain|nameserver)\s+", line)
        ]
        self.node_resolv[v["node"]] = data + "".join(kept)
        return None

    async def _node_hosts_read(self, v, user):
        text = self.hosts_of(v["node"])
        return {"data": text, "digest": hashlib.sha1(text.encode()).hexdigest()}  # noqa: S324 - as PVE

    async def _node_hosts_write(self, v, user):
        current = self.hosts_of(v["node"])
        check_digest(hashlib.sha1(current.encode()).hexdigest(), v.get("digest"))  # noqa: S324
        for line in v["data"].split("\n"):
            if re.match(r"^\s*#", line) or re.match(r"^\s*$", line):
                continue
            ip, *names = [field for field in re.split(r"\s+", line)]
            while names and names[-1] == "":
                names.pop()
            if not _ip(ip):
                raise param_error(data=f"Invalid IP '{ip}'")
            for name in names:
                if not _NAME.match(name):
                    raise param_error(data=f"Invalid Hostname '{name}'")
        self.node_hosts[v["node"]] = v["data"]
        return None

    async def _node_time(self, v, user):
        now = int(time.time())
        return {"timezone": self.node_timezone.get(v["node"], "UTC"), "time": now, "localtime": now}

    async def _node_time_set(self, v, user):
        if v["timezone"] not in zoneinfo.available_timezones():
            raise param_error(timezone="No such timezone")
        self.node_timezone[v["node"]] = v["timezone"]
        return None
