#!py
"""proxmox formula: turns pillar into salt-proxmox states.

Rendered by Salt's ``py`` renderer: ``run()`` returns the highstate as data, so a pillar key or value
reaches Salt as a Python string and is never pasted into YAML text. A key holding a newline and YAML,
or a ``#``, is one state id (or one failing state naming the key), never a second state and never a
render error that drops every state.

Pillar sections, each a mapping of ``<key>: {keys}``:

  proxmox:lxc:<state id>           proxmox_lxc: the keys are the arguments of proxmox_lxc.present
                                   (vmid, node, target, adopt, removal and PVE config keys spelled as
                                   PVE spells them). ``ensure: absent`` declares it gone instead
                                   (removal: retain forgets it, removal: destroy deletes it).
  openbao:policies:<name>          openbao_policy: fragments (inline HCL or salt:// files, in order),
                                   adopt, removal, rename_from.
  proxmox:firewall_aliases:<name>  proxmox_firewall_alias: cidr, comment, target, adopt, rename_from.
  proxmox:pools:<poolid>           proxmox_pool: comment, target, adopt (removal for absent).
  proxmox:roles:<roleid>           proxmox_role: privs, target, adopt (removal for absent).
  proxmox:acls:<label>             proxmox_acl: path, role, user|group|token, propagate, target, adopt.

The key of a simple object or policy is its name unless the entry says ``name:``. Targets
(proxmox:targets) and OpenBao (openbao) are read by the modules with config.get, so they may live in
the minion config or in pillar.

Order and requisites. States run in the order of this file (Salt's ``state_auto_order``): OpenBao
policies first, then aliases, pools, roles, ACL entries, containers. Only real dependencies are
requisites, so a family fails alone:

- an ACL entry requires the role it grants and the pool of a ``/pool/<poolid>`` path, when this pillar
  declares them present (PVE refuses an ACL entry naming a role that does not exist:
  pve-access-control ``src/PVE/API2/ACL.pm`` ``update_acl``);
- a container requires the pool its ``pool:`` key names, when this pillar declares it present.

A policy is not a requisite of the PVE states: it runs before them, but a failed or refused policy
leaves OpenBao's policy as it was, so the credentials the PVE states mint are those of the run before;
when they cannot be minted, each PVE state fails saying so.

Pillar shapes. A section or an entry of another shape (a YAML list, a bare string), or a key that is
not a string or holds a control character, becomes one failing state that names the pillar key and
the shape it needs: never a traceback, never an entry passed on half-read, never a run that silently
does nothing. An empty section (``lxc:`` with nothing under it) is no entry.
"""

import json
import unicodedata
from collections.abc import Mapping

# (pillar path, state id prefix, state module, what an entry declares, keys not passed to present,
#  keys not passed to absent). In this order the states run.
SECTIONS = [
    (
        "openbao:policies",
        "openbao-policy-",
        "openbao_policy",
        "policy (fragments, ...)",
        ["ensure", "name"],
        ["ensure", "name", "fragments", "adopt", "rename_from"],
    ),
    (
        "proxmox:firewall_aliases",
        "proxmox-firewall-alias-",
        "proxmox_firewall_alias",
        "firewall alias (cidr, comment, ...)",
        ["ensure", "name"],
        ["ensure", "name", "cidr", "comment", "adopt", "rename_from"],
    ),
    (
        "proxmox:pools",
        "proxmox-pool-",
        "proxmox_pool",
        "pool (comment, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "comment", "adopt"],
    ),
    (
        "proxmox:roles",
        "proxmox-role-",
        "proxmox_role",
        "role (privs, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "privs", "adopt"],
    ),
    (
        "proxmox:acls",
        "proxmox-acl-",
        "proxmox_acl",
        "ACL entry (path, role, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "propagate", "adopt"],
    ),
    (
        "proxmox:lxc",
        "proxmox-lxc-",
        "proxmox_lxc",
        "container (vmid, node, ostemplate, ...)",
        ["ensure"],
        None,
    ),
]

# The keys an absent container passes on: the rest of its declaration is what it was, not what to do.
LXC_ABSENT_KEYS = ["vmid", "node", "target", "removal"]

SECTION_NAMES = "targets, lxc, firewall_aliases, pools, roles, acls"


def _shape(value):
    """What a pillar value is, in the words of the YAML that wrote it."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "empty"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def _printable(key):
    """``key`` as one printable line: control characters escaped as JSON escapes them."""
    text = key if isinstance(key, str) else str(key)
    return "".join(
        json.dumps(char)[1:-1] if unicodedata.category(char) == "Cc" else char for char in text
    )


def _key_problem(key):
    """Why a pillar key cannot be a state id and object name, or None."""
    if not isinstance(key, str):
        return (
            f"is {_shape(key)}, not a string: YAML reads an unquoted 150, on or null as a number, a "
            f"boolean or nothing; quote the key ('{key}':)"
        )
    if not key:
        return "is empty: give the entry a name"
    if any(unicodedata.category(char) == "Cc" for char in key):
        return (
            "holds a control character (a newline, a tab, ...): a state id and a name are one line "
            "of printable text"
        )
    return None


def _failing(states, state_id, pillar_key, text):
    """Add one failing state saying ``text`` about ``pillar_key``; Salt's own test state carries it,
    failing under test=True as in an apply."""
    while state_id in states:
        state_id += "_"
    states[state_id] = {
        "test.configurable_test_state": [
            {"name": f"pillar {pillar_key}"},
            {"changes": False},
            {"result": False},
            {"allow_test_mode_failure": True},
            {"comment": f"{text} Nothing was written."},
        ]
    }


def _lookup(pillar, path, states, prefix):
    """The value at ``path`` (``a:b``) in ``pillar``; a level that is not a mapping adds a failing state
    and reads as nothing."""
    value = pillar
    walked = []
    for part in path.split(":"):
        if value is None:
            return None
        if not isinstance(value, Mapping):
            where = ":".join(walked)
            _failing(
                states,
                f"{prefix}pillar",
                where,
                f"pillar {where} is {_shape(value)}, not a mapping: write {path} as keys under "
                f"{where}:, as pillar_examples/proxmox.sls does.",
            )
            return None
        walked.append(part)
        value = value.get(part)
    return value


def _entries(pillar, path, prefix, what, states):
    """The well-shaped entries of section ``path`` as ``[(key, declaration)]`` in key order; each
    entry or section of another shape becomes a failing state."""
    raw = _lookup(pillar, path, states, prefix)
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        _failing(
            states,
            f"{prefix}pillar",
            path,
            f"pillar {path} is {_shape(raw)}, not a mapping of state id to {what}: write each entry "
            "as `<state id>: {keys}`, as pillar_examples/proxmox.sls does.",
        )
        return []
    entries = []
    for key in sorted(raw, key=lambda k: (not isinstance(k, str), str(k))):
        value = raw[key]
        shown = f"{path}:{_printable(key)}"
        problem = _key_problem(key)
        if problem is not None:
            _failing(states, prefix + _printable(key), shown, f"pillar key {shown} {problem}.")
        elif not isinstance(value, Mapping):
            _failing(
                states,
                prefix + key,
                shown,
                f"pillar {shown} is {_shape(value)}, not a mapping: declare the {what} as keys under "
                "it, as pillar_examples/proxmox.sls does.",
            )
        else:
            entries.append((key, value))
    return entries


def _arguments(name, declared, skip, only=None):
    """The state's argument list: ``name`` first, then the declared keys in key order."""
    args = [{"name": name}]
    for key in sorted(declared, key=str):
        if key in skip or (only is not None and key not in only):
            continue
        args.append({key: declared[key]})
    return args


def _present(declared):
    return declared.get("ensure", "present") != "absent"


def _name(path, key, declared):
    """The object's name: the key, or the entry's ``name:`` (not for containers and ACL entries, whose
    key is only a state id). A non-string ``name:`` is passed on for the state to refuse."""
    if path in ("proxmox:lxc", "proxmox:acls"):
        return key
    return declared.get("name", key)


def _text(value):
    """``value`` when it is a string (a name another entry may point at), else None."""
    return value if isinstance(value, str) else None


def estate(pillar):
    """The highstate for ``pillar``: state id -> ``{"<module>.<function>": [one {argument: value} per
    argument]}``, in run order."""
    states = {}
    proxmox = pillar.get("proxmox")
    if proxmox is not None and not isinstance(proxmox, Mapping):
        _failing(
            states,
            "proxmox-pillar",
            "proxmox",
            f"pillar proxmox is {_shape(proxmox)}, not a mapping of sections ({SECTION_NAMES}): "
            "write each section as a key under proxmox:, as pillar_examples/proxmox.sls does.",
        )
        pillar = {key: value for key, value in pillar.items() if key != "proxmox"}

    sections = {}
    for path, prefix, module, what, _skip_present, _skip_absent in SECTIONS:
        sections[path] = _entries(pillar, path, prefix, what, states)

    # Objects declared present, by the name PVE knows them by, for the requisites below.
    present = {}
    for path, prefix, module, *_ in SECTIONS:
        present[path] = {
            _text(_name(path, key, declared)): {module: prefix + key}
            for key, declared in sections[path]
            if _present(declared)
        }
        present[path].pop(None, None)

    for path, prefix, module, _what, skip_present, skip_absent in SECTIONS:
        for key, declared in sections[path]:
            name = _name(path, key, declared)
            if not _present(declared):
                if path == "proxmox:lxc":
                    args = _arguments(name, declared, [], LXC_ABSENT_KEYS)
                else:
                    args = _arguments(name, declared, skip_absent)
                states[prefix + key] = {f"{module}.absent": args}
                continue
            args = _arguments(name, declared, skip_present)
            needs = []
            if path == "proxmox:lxc":
                needs.append(present["proxmox:pools"].get(_text(declared.get("pool"))))
            elif path == "proxmox:acls":
                needs.append(present["proxmox:roles"].get(_text(declared.get("role"))))
                acl_path = _text(declared.get("path")) or ""
                if acl_path.startswith("/pool/"):
                    needs.append(present["proxmox:pools"].get(acl_path.removeprefix("/pool/")))
            needs = [need for need in needs if need is not None]
            if needs:
                args.append({"require": needs})
            states[prefix + key] = {f"{module}.present": args}
    return states


def run():
    """The py renderer's entry point."""
    # Salt hands the pillar in a loader context object that reads as a mapping but is no dict.
    return estate(dict(__pillar__))  # noqa: F821 - set by Salt's py renderer
