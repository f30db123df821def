"""A node's ``/etc/hosts`` (``proxmox_node.hosts``): the whole file, or managed entries inside it.

Source: pve-manager ``PVE/API2/Nodes.pm`` ``get_etc_hosts`` (GET: ``{data, digest}``; Sys.Audit on ``/``,
not on the node) and ``write_etc_hosts`` (POST ``data`` and ``digest``; Sys.Modify on ``/nodes/{node}``),
over pve-common ``src/PVE/INotify.pm`` ``read_etc_hosts`` (``digest``: SHA-1 of the file's bytes) and
``write_etc_hosts`` (the whole file is written as sent).

- ``data``: the whole file, compared exactly.
- ``entries``: ``{ip: names}`` (a list, or one text of names separated by spaces; None or ``[]``: no line
  for that address). An entry is identified by its address, the key the file itself has: the lines
  whose first field is that address (compared as an address) are the entry, and it is as declared when
  exactly one line holds it with the declared names in order. A write replaces the entry's first line
  by ``<ip> <names>``, drops its other lines, appends a new entry at the end, and keeps every other
  line byte for byte. Our lines carry no marker comment: the address already identifies them, and
  ``write_etc_hosts`` refuses a comment after the names (``Invalid Hostname '#'``).
- ``write_etc_hosts`` refuses a file whose line (not a comment, not blank) starts with anything but an
  IP address (``Invalid IP``, a leading space included: ``split(/\\s+/)``) or holds a name outside
  ``[.\\-a-zA-Z0-9]`` (``Invalid Hostname``): a declared ``data`` is refused by name, and a write that
  would keep such a line the node already has is refused at plan, naming its line number.
- Every write carries the ``digest`` the decision was judged on: ``write_etc_hosts`` asserts it
  (``assert_if_modified``) under ``/var/lock/pve-etchosts.lck``, so a file changed meanwhile is refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.node import common
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple.spec import Call, Declared

FAMILY = "node_hosts"
#: INotify.pm ``write_etc_hosts``: a host name.
NAME = re.compile(r"^[.\-a-zA-Z0-9]+\Z")
_COMMENT = re.compile(r"^\s*#")
_BLANK = re.compile(r"^\s*\Z")


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """The ``/etc/hosts`` of node ``name``. Raises DeclarationError."""
    return common.identify_node(state_id, target, name, extra, what="hosts file", has="data or entries")


def address(text: object) -> str | None:
    """``text`` as a canonical IP address when it is one PVE takes (``$PVE::Tools::IPRE``: no scope, no
    prefix), else None."""
    if not isinstance(text, str) or "%" in text or "/" in text:
        return None
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def line_problem(line: str) -> str | None:
    """Why ``write_etc_hosts`` refuses ``line``, or None."""
    if _COMMENT.match(line) or _BLANK.match(line):
        return None
    fields = re.split(r"\s+", line)
    while fields and fields[-1] == "":  # Perl's split drops trailing empty fields
        fields.pop()
    if address(fields[0]) is None:
        return f"Invalid IP '{fields[0]}'"
    bad = next((name for name in fields[1:] if not NAME.match(name)), None)
    return f"Invalid Hostname '{bad}'" if bad is not None else None


def file_problems(data: str) -> list[str]:
    """``line N: <PVE's refusal>`` for each line of ``data`` ``write_etc_hosts`` refuses."""
    return [
        f"line {number}: {problem} (INotify.pm write_etc_hosts)"
        for number, line in enumerate(data.split("\n"), start=1)
        if (problem := line_problem(line))
    ]


def _names(ip: str, value: object) -> tuple[str | None, str | None]:
    """``(names as one text or None, problem)`` of one declared entry."""
    if value is None or value == "" or value == []:
        return None, None
    names = value.split() if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and NAME.match(n) for n in names):
        return None, (
            f"entries: {ip}: expected host names (a list or one text), each of [.-a-zA-Z0-9] (INotify.pm "
            f"write_etc_hosts: Invalid Hostname), got {shown(value)}"
        )
    return " ".join(names), None


def declare(
    state_id: str,
    target: str,
    name: object = None,
    data: object = None,
    entries: object = None,
    adopt: object = False,
    **extra: object,
) -> Declared:
    """A checked declaration: ``data`` (the whole file) or ``entries`` (``{ip: names}``), not both;
    ``adopt``. Raises DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name, **extra)
    problems, values = [], {}
    if (data is None) == (entries is None):
        problems.append("data, entries: declare exactly one (the whole file, or the entries managed in it)")
    elif data is not None:
        if not isinstance(data, str):
            problems.append(f"data: expected the file's text, got {shown(data)}")
        else:
            problems += [f"data: {problem}" for problem in file_problems(data)]
            values["data"] = data
    elif not isinstance(entries, Mapping) or not entries:
        problems.append(f"entries: expected a mapping of IP address to host names, got {shown(entries)}")
    else:
        managed: dict[str, str | None] = {}
        for ip, value in entries.items():
            canonical = address(ip)
            if canonical is None:
                problems.append(
                    f"entries: {ip!r} is not an IP address (INotify.pm write_etc_hosts: Invalid IP)"
                )
                continue
            if canonical in managed:
                problems.append(f"entries: {ip} is declared twice (as {canonical})")
            names, problem = _names(str(ip), value)
            problems += [problem] if problem else []
            managed[canonical] = names
        values["entries"] = dict(sorted(managed.items()))
    problem = boolean_problem("adopt", adopt)
    if problem:
        problems.append(problem)
    if problems:
        raise DeclarationError(problems)
    return probe.declaring(values, adopt)


def _ip_of(line: str) -> str | None:
    if _COMMENT.match(line) or _BLANK.match(line):
        return None
    return address(line.split()[0])


def entry_of(lines: list[str], ip: str) -> str | None:
    """The entry ``ip`` as the file holds it: its names as one text (None: no line; several lines are
    shown joined by `` | ``, which no declaration equals)."""
    held = [" ".join(line.split()[1:]) for line in lines if _ip_of(line) == ip]
    return " | ".join(held) if held else None


def parse(data: object, decl: Declared) -> dict:
    """``GET /nodes/{node}/hosts`` → ``data``, ``digest`` and, for declared ``entries``, each declared
    address's entry (``entry_of``). Raises ValueError for another shape."""
    if not isinstance(data, Mapping) or not isinstance(data.get("data"), str) or not data.get("digest"):
        raise ValueError("expected the node's /etc/hosts as data and digest")
    live = {"data": data["data"], "digest": str(data["digest"])}
    if "entries" in decl.values:
        lines = live["data"].split("\n")
        live["entries"] = {ip: entry_of(lines, ip) for ip in decl.values["entries"]}
    return live


def written(decl: Declared, text: str) -> str:
    """The file after the write: ``data``, or ``text`` with the declared entries put in (module
    docstring)."""
    if "data" in decl.values:
        return str(decl.values["data"])
    lines, pending = text.split("\n"), dict(decl.values["entries"])
    out = []
    for line in lines:
        ip = _ip_of(line)
        if ip not in pending and ip in decl.values["entries"]:
            continue  # a later line of an entry already written
        if ip in pending:
            names = pending.pop(ip)
            if names is not None:
                out.append(f"{ip} {names}")
            continue
        out.append(line)
    added = [f"{ip} {names}" for ip, names in pending.items() if names is not None]
    if added:
        if out and out[-1] == "":
            out.pop()
        out += [*added, ""]
    return "\n".join(out)


def _path(decl: Declared) -> str:
    return api_path("nodes", decl.names["name"], "hosts")


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``POST /nodes/{node}/hosts`` with the whole new file (``written``); None when nothing differs."""
    after = written(decl, str(live.get("data") or ""))
    if after == live.get("data"):
        return None
    return Call("POST", _path(decl), form={"data": after})


def refusals(ctx, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A write of entries into a file holding a line ``write_etc_hosts`` refuses (it refuses the whole
    file): each such line by number."""
    if action == "delete" or live is None or "entries" not in decl.values:
        return []
    return [
        f"{decl.label}: {problem}: PVE refuses to write the file with it; fix that line by hand, or declare "
        "the whole file (data)"
        for problem in file_problems(written(decl, str(live.get("data") or "")))
    ]


ENDPOINT = Endpoint(
    "POST /nodes/{node}/hosts", ("data",), lambda key: Rule() if key in ("data", "digest") else None
)

SPEC = common.setting_spec(
    "hosts file",
    "never: a node always has /etc/hosts (pve-manager PVE/API2/Nodes.pm get_etc_hosts)",
    family=FAMILY,
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    parse=parse,
    create=lambda decl: Call("POST", _path(decl), form={"data": written(decl, "")}),
    create_endpoint=ENDPOINT,
    update=update,
    update_endpoint=ENDPOINT,
    # The digest the decision was judged on: write_etc_hosts refuses the write if the file changed since.
    write_guard=lambda ctx, credential, decl, live: {"digest": str(live["digest"])},
    refusals=refusals,
    export_values=lambda live, probe: {"data": live["data"]},
    live_only=("digest", "entries"),
)
