"""Outputter ``proxmox_plan``: a state run read as a plan, one line per object that changes and a
summary of the whole run per family, in the spirit of ``terraform plan``.

.. code-block:: bash

    salt-call --local state.apply proxmox test=True --out=proxmox_plan --log-level=critical

Each state that changes or fails is one line marked ``+`` (create), ``~`` (update), ``-`` (destroy or
delete), ``o`` (ownership only) or ``!`` (refused or failed), followed by what changes:

- a property string (``netN``, ``mpN``, ``rootfs``, ``devN``, ``features``, ``startup``) by the
  sub-keys that change, in PVE's key order (``net1: tag 42 → 43``), as the state return gives them;
- a text (a container's ``description``, an OpenBao policy) as the unified diff the return carries;
- a list (a role's privileges) by what it gains and loses; any other key as ``old → new``;
- values PVE holds pending until a restart under ``pending``;

then the comment lines of the state. States with nothing to do are counted, not listed. The last
lines count, per family, what would be (or was) created, updated, destroyed, left pending a
restart, refused, and what needs no change; a change to ownership alone (a row recorded by
``adopt: true`` with nothing to write, a row forgotten by ``removal: retain``: the ``ownership``
and ``fingerprint`` keys) is counted apart from PVE writes, as ``ownership only``; then the run's
notes (a return's ``notes``: the owned objects the run no longer declares, the backup coverage), each
once, whichever state carried it.

A VM's property strings (``netN``, drives, ``ipconfigN``, ``cpu``, ``agent`` ...) are shown per
sub-key as a container's are. A node's network or the SDN apply states show in a plan the staged
configuration they would apply as a diff, with the states whose changes they would apply.

The summary says ``Plan:`` for ``state.apply ... test=True`` and ``Apply:`` for an apply, whatever
its outcome (nothing changed, everything failed): the outputter reads the command's own ``test``
argument (``__opts__['arg']``, which ``salt-call`` and ``salt`` keep), or the minion's ``test``
option, and falls back to the returns (an apply that wrote something) when neither is there.

Many minions (``salt-run proxmox.apply tgt='pve-*' --out=proxmox_plan``, or ``salt --static``; one
minion per cluster) are printed in minion order, each under a line naming the minion and the cluster
its states ran against (the ``target`` the returns carry); a cluster that did not answer fails
every state of it with the same cause, which is folded into one line (``! cluster homelab
unreachable: 100 states not run``) and counted as unreachable, not refused; one summary across the
fleet ends the output.

This module reads state returns only; it needs nothing of ``salt_proxmox``, so it runs wherever the
output is printed (a master, a salt-ssh host). Colours follow Salt's ``color`` options
(``salt.utils.color``), as the ``highstate`` outputter does.
"""

from __future__ import annotations

import json
import re

__virtualname__ = "proxmox_plan"

#: Container keys whose values are property strings: the return shows only the sub-keys that change.
PROPERTY_KEYS = re.compile(r"^(?:net\d+|mp\d+|dev\d+|rootfs|features|startup)$")

#: VM keys whose values are property strings (qemu-server ``PVE/QemuServer.pm`` ``$confdesc``), each
#: with the sub-key a bare first item stands for (its format's ``default_key``; ``None``: none).
#: ``tests/unit/test_plan_view.py`` pins this table to ``salt_proxmox.qemu.schema.property_format``.
VM_PROPERTY_KEYS = (
    (re.compile(r"^(?:(?:ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0)$"), "volume"),
    (re.compile(r"^net\d+$"), "model"),
    (re.compile(r"^ipconfig\d+$"), None),
    (re.compile(r"^(?:hostpci|usb)\d+$"), "host"),
    (re.compile(r"^cpu$"), "cputype"),
    (re.compile(r"^memory$"), "current"),
    (re.compile(r"^agent$"), "enabled"),
    (re.compile(r"^vga$"), "type"),
    (re.compile(r"^startup$"), "order"),
    (re.compile(r"^(?:smbios1|cicustom)$"), None),
)

#: The keys of a change to ownership alone: a row recorded or forgotten, a fingerprint recorded.
OWNERSHIP_KEYS = frozenset({"ownership", "fingerprint"})

#: A failure saying no member of the cluster answered (``salt_proxmox.pve.client`` raises it as
#: ``PveUnreachable``): every state of that cluster fails with it, so the fleet view folds them.
UNREACHABLE = re.compile(r"no member of target (?P<target>\S+) answered")

#: The order of a summary's buckets: (bucket, words under test=True, words after an apply).
BUCKETS = (
    ("create", "to create", "created"),
    ("update", "to update", "updated"),
    ("destroy", "to destroy", "destroyed"),
    ("pending", "pending restart", "pending restart"),
    ("own", "ownership only", "ownership only"),
    ("refuse", "refused", "failed"),
    ("unreachable", "unreachable", "unreachable"),
    ("same", "no change", "no change"),
)
#: Buckets the summary names only when some state falls in them.
OPTIONAL = frozenset({"own", "unreachable"})
MARKS = {
    "create": "+",
    "update": "~",
    "destroy": "-",
    "pending": "~",
    "own": "o",
    "refuse": "!",
    "unreachable": "!",
}
COLOURS = {
    "create": "GREEN",
    "update": "YELLOW",
    "destroy": "RED",
    "pending": "YELLOW",
    "own": "CYAN",
    "refuse": "LIGHT_RED",
    "unreachable": "LIGHT_RED",
}


def __virtual__():
    return __virtualname__


def colours(use: bool = True, theme: str | None = None) -> dict[str, str]:
    """Salt's colour codes (``salt.utils.color.get_colors``), or none when ``use`` is false or Salt is
    not importable."""
    try:
        import salt.utils.color
    except ImportError:  # pragma: no cover - rendered outside Salt
        return {}
    return salt.utils.color.get_colors(use, theme)


def family(module: str) -> str:
    """The family a state module manages: ``proxmox_lxc`` → ``lxc``, ``openbao_policy`` → ``policy``;
    the formula's failing pillar states (``proxmox_pillar``) → ``pillar``. It is the ``name`` of the
    module's entry in ``salt_proxmox/registry.py`` (this module does not import the library, which is
    not on the path where output is printed; ``tests/unit/test_registry.py`` pins the two)."""
    return module.removeprefix("proxmox_").removeprefix("openbao_")


def bucket(ret: dict) -> str:
    """Which summary bucket one state return falls in (each state counts once)."""
    changes = ret.get("changes") or {}
    if ret.get("result") is False:
        return "unreachable" if UNREACHABLE.search(str(ret.get("comment") or "")) else "refuse"
    if changes and set(changes) <= OWNERSHIP_KEYS:
        return "own"
    if "created" in changes:
        return "create"
    if "deleted" in changes or "destroyed" in changes:
        return "destroy"
    if set(changes) - {"pending", "rebooted"}:
        return "update"
    if changes.get("pending"):
        return "pending"
    if changes or ret.get("result") is None:
        return "update"
    return "same"


def _text(value: object) -> str:
    if value is None:
        return "(none)"
    if value == "":
        return "''"
    return str(value)


def _options(value: str | None, bare: str | None = "volume") -> dict[str, str]:
    """A property string as ``{key: value}`` in its own order; a bare item is the ``bare`` sub-key
    (the volume of a disk), or shown as it is when the format has none."""
    out: dict[str, str] = {}
    for item in (value or "").split(","):
        if item:
            key, eq, val = item.partition("=")
            out.update({key: val} if eq else {bare or item: item if bare else ""})
    return out


def property_key(module: str, key: str) -> tuple[bool, str | None]:
    """Whether ``key`` of a ``module`` state is a property string, and the sub-key its bare item
    stands for."""
    if module == "proxmox_lxc":
        return bool(PROPERTY_KEYS.match(key)), "volume"
    if module == "proxmox_qemu":
        for pattern, bare in VM_PROPERTY_KEYS:
            if pattern.match(key):
                return True, bare
    return False, None


def _property_line(key: str, old: str | None, new: str | None, bare: str | None = "volume") -> str:
    if old is None or new in (None, ""):
        return f"{key}: {_text(old)} → {_text(new)}"
    was, wants = _options(old, bare), _options(new, bare)
    # Only the sub-keys that differ (a VM's NIC comes back whole, MAC and all).
    parts = [
        f"{sub} {_text(was.get(sub))} → {_text(wants.get(sub))}"
        for sub in dict.fromkeys([*wants, *was])
        if was.get(sub) != wants.get(sub)
    ]
    return f"{key}: {', '.join(parts)}" if parts else f"{key}: {_text(old)} → {_text(new)}"


def change_lines(module: str, changes: dict, kind: str = "update") -> list[str]:
    """The lines that show one state's ``changes``; under a create (``kind``) each key by its new
    value alone, and the ``created`` line by what is created."""
    lines: list[str] = []
    if kind == "create":
        for key, change in changes.items():
            if isinstance(change, dict) and set(change) == {"old", "new"}:
                lines.append(f"{key}: {_text(change['new'])}")
            else:
                lines.extend(change_lines(module, {key: change}))
        return lines
    for key, change in changes.items():
        if key == "diff" and isinstance(change, str):
            lines.append("diff:")
            lines.extend(f"  {line}" for line in change.splitlines())
        elif isinstance(change, dict) and isinstance(change.get("diff"), str):
            # A text's diff, or a node's or the SDN's staged configuration with what else it says.
            lines.append(f"{key}:")
            lines.extend(f"  {line}" for line in change["diff"].splitlines())
            rest = {sub: value for sub, value in change.items() if sub != "diff"}
            if set(rest) == {"old", "new"}:
                lines.append(f"  {_text(rest['old'])} → {_text(rest['new'])}")
            else:
                lines.extend(f"  {line}" for line in change_lines(module, rest))
        elif isinstance(change, dict) and set(change) == {"old", "new"}:
            old, new = change["old"], change["new"]
            is_property, bare = property_key(module, key)
            if is_property and isinstance(old, (str, type(None))) and isinstance(new, (str, type(None))):
                lines.append(_property_line(key, old, new, bare))
            elif isinstance(old, list) and isinstance(new, list):
                gained = [f"+{item}" for item in new if item not in old]
                lost = [f"-{item}" for item in old if item not in new]
                lines.append(f"{key}: {' '.join(gained + lost) or 'reordered'}")
            else:
                lines.append(f"{key}: {_text(old)} → {_text(new)}")
        elif isinstance(change, dict) and key in ("disks", "pending", "reload"):
            title = "pending until restart" if key == "pending" else key
            lines.append(f"{title}:")
            lines.extend(f"  {line}" for line in change_lines(module, change))
        elif isinstance(change, list) and all(isinstance(item, str) for item in change):
            lines.append(f"{key}: {', '.join(change)}")
        else:
            lines.append(f"{key}: {json.dumps(change, sort_keys=True, default=str)}")
    return lines


def _states(data: object) -> dict[str, dict] | None:
    """``data`` as {minion: {state key: return}}, or None when it is not a state run. What
    ``salt-run proxmox.apply`` returns (``{"data": {minion: ...}, "retcode": N}``) is its ``data``."""
    if isinstance(data, dict) and set(data) == {"data", "retcode"} and isinstance(data["data"], dict):
        data = data["data"]
    if not isinstance(data, dict):
        return None
    for returns in data.values():
        if isinstance(returns, dict) and not all(
            isinstance(ret, dict) and "result" in ret for ret in returns.values()
        ):
            return None
    return data


def _count(tallies: list[dict[str, int]], kind: str, number: int = 1) -> None:
    for tally in tallies:
        tally[kind] = tally.get(kind, 0) + number


def _summary(tally: dict[str, int], words: int, always: bool = False) -> str:
    return ", ".join(
        f"{tally.get(spec[0], 0)} {spec[words]}"
        for spec in BUCKETS
        if always or spec[0] not in OPTIONAL or tally.get(spec[0])
    )


def clusters(returns: object) -> list[str]:
    """The clusters (targets) one minion's returns name: the ``target`` a state return carries, or
    the target a failure says did not answer; in first-seen order."""
    found: dict[str, None] = {}
    if isinstance(returns, dict):
        for ret in returns.values():
            if isinstance(ret, dict) and isinstance(ret.get("target"), str):
                found[ret["target"]] = None
            elif isinstance(ret, dict) and (match := UNREACHABLE.search(str(ret.get("comment") or ""))):
                found[match.group("target")] = None
    return list(found)


def render(data: object, test: bool, colours: dict[str, str] | None = None) -> str:
    """The plan text for ``data`` (what ``state.apply`` returns, per minion); ``test``: say it as a plan
    (``Plan: 1 to create``) rather than an apply (``Apply: 1 created``). A render error (a list of
    strings) is one failed line per message; data that is no state run is printed as JSON.

    Minions are printed in name order, each named with its clusters when there is more than one
    minion or it is not ``local``; the failures of a cluster that did not answer (``UNREACHABLE``)
    are one line per cluster. With more than one minion the summary ends with a line per minion."""
    colours = colours or {}
    end = colours.get("ENDC", "")
    states = _states(data)
    if states is None:
        return json.dumps(data, indent=2, sort_keys=True, default=str)
    counts: dict[str, dict[str, int]] = {}
    fleet: dict[str, dict[str, int]] = {}
    total: dict[str, int] = {}
    out: list[str] = []
    notes: list[str] = []  # the run's notes (a return's ``notes``), each once
    for minion in sorted(states, key=str):
        returns = states[minion]
        mine = fleet.setdefault(minion, {})
        named = clusters(returns)
        if len(states) > 1 or minion != "local":
            out.append(f"{minion}" + (f" (cluster {', '.join(named)})" if named else "") + ":")
        if not isinstance(returns, dict):
            messages = returns if isinstance(returns, list) else [returns]
            out.extend(f"{colours.get('LIGHT_RED', '')}! {message}{end}" for message in messages)
            _count([counts.setdefault("render", {}), mine, total], "refuse", len(messages))
            continue
        unreachable: dict[str, list[str]] = {}
        for tag, ret in sorted(returns.items(), key=lambda item: item[1].get("__run_num__", 0)):
            notes.extend(note for note in _notes(ret) if note not in notes)
            parts = tag.split("_|-")
            module = parts[0]
            state_id = parts[1] if len(parts) > 1 else tag
            kind = bucket(ret)
            _count([counts.setdefault(family(module), {}), mine, total], kind)
            if kind == "same":
                continue
            comment = str(ret.get("comment") or "")
            if kind == "unreachable":
                target = UNREACHABLE.search(comment).group("target")  # type: ignore[union-attr]
                unreachable.setdefault(target, []).append(comment)
                continue
            colour = colours.get(COLOURS[kind], "")
            out.append(f"{colour}{MARKS[kind]} {state_id}{end} ({module}.{parts[-1]})")
            out.extend(f"    {line}" for line in change_lines(module, ret.get("changes") or {}, kind))
            noted = set(_notes(ret))
            out.extend(f"    # {line}" for line in comment.splitlines() if line not in noted)
        for target, comments in unreachable.items():
            colour = colours.get(COLOURS["unreachable"], "")
            number = len(comments)
            out.append(
                f"{colour}! cluster {target} unreachable{end}: {number} state{'s' if number != 1 else ''} "
                "not run"
            )
            out.extend(f"    # {line}" for line in comments[0].splitlines())
    words = 1 if test else 2
    out.append(f"{'Plan' if test else 'Apply'}: {_summary(total, words, always=False)}.")
    for name in sorted(counts):
        out.append(f"  {name}: {_summary(counts[name], words)}")
    if len(fleet) > 1:
        for minion in sorted(fleet, key=str):
            named = clusters(states[minion])
            where = f" (cluster {', '.join(named)})" if named else ""
            out.append(f"  minion {minion}{where}: {_summary(fleet[minion], words)}")
    if notes:
        out.append("Notes:")
        out.extend(f"  * {note}" for note in notes)
    return "\n".join(out)


def _notes(ret: dict) -> list[str]:
    """The run notes a state return carries (``notes``: what the run as a whole has to say, such as
    the backup coverage, given by one state of the run)."""
    notes = ret.get("notes")
    return [str(note) for note in notes] if isinstance(notes, list) else []


def applied(data: object) -> bool:
    """Whether ``data`` is an apply that wrote something: a state with changes and result True (a plan
    answers None for every change). The last resort of ``is_plan``."""
    states = _states(data) or {}
    return any(
        ret.get("result") is True and ret.get("changes")
        for returns in states.values()
        if isinstance(returns, dict)
        for ret in returns.values()
    )


def _yes(value: object) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes", "on")


def is_plan(opts: dict, data: object) -> bool:
    """Whether the run printed is a plan. ``state.apply proxmox test=True`` passes ``test`` to the
    state run, not to the options: the command's arguments say it (``opts['arg']``: ``salt-call``
    and ``salt`` keep the command line there, ``test=True`` as a string or, parsed, a ``{'test':
    True}`` keyword), as does the minion's own ``test`` option. A state function called without
    ``test`` is an apply, whatever it did. Without either (the outputter called by hand), an apply
    is told by a state that wrote something (``applied``)."""
    if _yes(opts.get("test")):
        return True
    args = opts.get("arg")
    if isinstance(args, (list, tuple)):
        for arg in args:
            if isinstance(arg, dict) and "test" in arg:
                return _yes(arg["test"])
            if isinstance(arg, str) and arg.startswith("test="):
                return _yes(arg.partition("=")[2])
        if str(opts.get("fun") or "").startswith("state.") or opts.get("fun") == "proxmox.apply":
            return False
    return not applied(data)


def output(data, **kwargs):  # pylint: disable=unused-argument
    """Salt's outputter entry point."""
    opts = globals().get("__opts__") or {}
    shades = colours(opts.get("color", True), opts.get("color_theme"))
    return render(data, test=is_plan(opts, data), colours=shades)
