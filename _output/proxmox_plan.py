"""Outputter ``proxmox_plan``: a state run read as a plan, one line per object that changes and a
summary of the whole run per family, in the spirit of ``terraform plan``.

.. code-block:: bash

    salt-call --local state.apply proxmox test=True --out=proxmox_plan

Each state that changes or fails is one line marked ``+`` (create), ``~`` (update), ``-`` (destroy or
delete) or ``!`` (refused or failed), followed by what changes:

- a property string (``netN``, ``mpN``, ``rootfs``, ``devN``, ``features``, ``startup``) by the
  sub-keys that change, in PVE's key order (``net1: tag 42 → 43``), as the state return gives them;
- a text (a container's ``description``, an OpenBao policy) as the unified diff the return carries;
- a list (a role's privileges) by what it gains and loses; any other key as ``old → new``;
- values PVE holds pending until a restart under ``pending``;

then the comment lines of the state. States with nothing to do are counted, not listed. The last
lines count, per family, what would be (or was) created, updated, destroyed, left pending a
restart, refused, and what needs no change; then the run's notes (a return's ``notes``, such as
the backup coverage), each once, whichever state carried it.

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

#: The order of a summary's buckets: (bucket, words under test=True, words after an apply).
BUCKETS = (
    ("create", "to create", "created"),
    ("update", "to update", "updated"),
    ("destroy", "to destroy", "destroyed"),
    ("pending", "pending restart", "pending restart"),
    ("refuse", "refused", "failed"),
    ("same", "no change", "no change"),
)
MARKS = {"create": "+", "update": "~", "destroy": "-", "pending": "~", "refuse": "!"}
COLOURS = {
    "create": "GREEN",
    "update": "YELLOW",
    "destroy": "RED",
    "pending": "YELLOW",
    "refuse": "LIGHT_RED",
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
        return "refuse"
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


def _options(value: str | None) -> dict[str, str]:
    """A property string as ``{key: value}`` in its own order; a bare item is the volume."""
    out: dict[str, str] = {}
    for item in (value or "").split(","):
        if item:
            key, eq, val = item.partition("=")
            out.update({key: val} if eq else {"volume": item})
    return out


def _property_line(key: str, old: str | None, new: str | None) -> str:
    if old is None or new in (None, ""):
        return f"{key}: {_text(old)} → {_text(new)}"
    was, wants = _options(old), _options(new)
    parts = [
        f"{sub} {_text(was.get(sub))} → {_text(wants.get(sub))}" for sub in dict.fromkeys([*wants, *was])
    ]
    return f"{key}: {', '.join(parts)}"


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
        elif isinstance(change, dict) and set(change) == {"diff"}:
            lines.append(f"{key}:")
            lines.extend(f"  {line}" for line in str(change["diff"]).splitlines())
        elif isinstance(change, dict) and set(change) == {"old", "new"}:
            old, new = change["old"], change["new"]
            if module == "proxmox_lxc" and PROPERTY_KEYS.match(key):
                lines.append(_property_line(key, old, new))
            elif isinstance(old, list) and isinstance(new, list):
                gained = [f"+{item}" for item in new if item not in old]
                lost = [f"-{item}" for item in old if item not in new]
                lines.append(f"{key}: {' '.join(gained + lost) or 'reordered'}")
            else:
                lines.append(f"{key}: {_text(old)} → {_text(new)}")
        elif isinstance(change, dict) and key in ("disks", "pending"):
            title = "pending until restart" if key == "pending" else key
            lines.append(f"{title}:")
            lines.extend(f"  {line}" for line in change_lines(module, change))
        else:
            lines.append(f"{key}: {json.dumps(change, sort_keys=True, default=str)}")
    return lines


def _states(data: object) -> dict[str, dict] | None:
    """``data`` as {minion: {state key: return}}, or None when it is not a state run."""
    if not isinstance(data, dict):
        return None
    for returns in data.values():
        if isinstance(returns, dict) and not all(
            isinstance(ret, dict) and "result" in ret for ret in returns.values()
        ):
            return None
    return data


def render(data: object, test: bool, colours: dict[str, str] | None = None) -> str:
    """The plan text for ``data`` (what ``state.apply`` returns, per minion); ``test``: say it as a plan
    (``Plan: 1 to create``) rather than an apply (``Apply: 1 created``). A render error (a list of
    strings) is one failed line per message; data that is no state run is printed as JSON."""
    colours = colours or {}
    end = colours.get("ENDC", "")
    states = _states(data)
    if states is None:
        return json.dumps(data, indent=2, sort_keys=True, default=str)
    counts: dict[str, dict[str, int]] = {}
    out: list[str] = []
    notes: list[str] = []
    for minion, returns in states.items():
        if len(states) > 1 or minion != "local":
            out.append(f"{minion}:")
        if not isinstance(returns, dict):
            messages = returns if isinstance(returns, list) else [returns]
            out.extend(f"{colours.get('LIGHT_RED', '')}! {message}{end}" for message in messages)
            counts.setdefault("render", {}).setdefault("refuse", 0)
            counts["render"]["refuse"] += len(messages)
            continue
        for tag, ret in sorted(returns.items(), key=lambda item: item[1].get("__run_num__", 0)):
            notes.extend(note for note in _notes(ret) if note not in notes)
            parts = tag.split("_|-")
            module = parts[0]
            state_id = parts[1] if len(parts) > 1 else tag
            kind = bucket(ret)
            tally = counts.setdefault(family(module), {})
            tally[kind] = tally.get(kind, 0) + 1
            if kind == "same":
                continue
            colour = colours.get(COLOURS[kind], "")
            out.append(f"{colour}{MARKS[kind]} {state_id}{end} ({module}.{parts[-1]})")
            out.extend(f"    {line}" for line in change_lines(module, ret.get("changes") or {}, kind))
            noted = set(_notes(ret))
            out.extend(
                f"    # {line}" for line in str(ret.get("comment") or "").splitlines() if line not in noted
            )
    total = {name: sum(tally.get(name, 0) for tally in counts.values()) for name, *_ in BUCKETS}
    words = 1 if test else 2
    summary = ", ".join(f"{total[spec[0]]} {spec[words]}" for spec in BUCKETS)
    out.append(f"{'Plan' if test else 'Apply'}: {summary}.")
    for name in sorted(counts):
        out.append(
            f"  {name}: " + ", ".join(f"{counts[name].get(spec[0], 0)} {spec[words]}" for spec in BUCKETS)
        )
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
    answers None for every change). ``state.apply test=True`` passes ``test`` to the state run, not
    to the caller's options the outputter sees, so the returns say which it was."""
    states = _states(data) or {}
    return any(
        ret.get("result") is True and ret.get("changes")
        for returns in states.values()
        if isinstance(returns, dict)
        for ret in returns.values()
    )


def output(data, **kwargs):  # pylint: disable=unused-argument
    """Salt's outputter entry point."""
    opts = globals().get("__opts__") or {}
    shades = colours(opts.get("color", True), opts.get("color_theme"))
    return render(data, test=bool(opts.get("test")) or not applied(data), colours=shades)
