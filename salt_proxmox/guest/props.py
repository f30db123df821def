"""What every guest declaration takes, in both families (containers, VMs): the state's own
arguments (``guest_problems``), a ``pool:``, a create secret, and a config value's wire spelling
(``wired_value``). Bad input is refused here, before any network call, with one sentence per key
naming the key and the rule (docs/design.md §3).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.ownership.rows import removal_problem
from salt_proxmox.pve.constraints import MAX_POST, NODE, NODE_MAX, check_poolid, post_problem, vmid_number
from salt_proxmox.wire.propstring import flag, text_problem, wire

#: Control characters. Only ``description`` may span lines (PVE stores it as ``#`` comment lines,
#: pve-container Config.pm ``write_pct_config``) or hold tabs; no value may hold the others.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


#: An OpenSSH public key line: optional options, a key type, base64 (PVE::Tools::validate_ssh_public_keys
#: runs ssh-keygen -l on them; this is the shape it accepts).
_SSH_KEY = re.compile(
    r"^(?:\S+\s+)?(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521)|sk-\S+)\s+[A-Za-z0-9+/]+={0,3}(?:\s.*)?$"
)


def pool_problem(value: object) -> str | None:
    """Why ``value`` is not a ``pool:`` of a container, or None: a poolid PVE creates
    (``pve.constraints.check_poolid``), or ``''`` for no pool."""
    if not isinstance(value, str):
        return f"expected a pool name (text), got {shown(value)}"
    return None if value == "" else check_poolid(value)


def secret_problem(key: str, value: object) -> str | None:
    """Why a create secret (``schema.CREATE_SECRETS``) cannot be sent, or None; the message never
    repeats the value. ``password``: text of at least 5 characters on one line (pve-container
    ``create_vm``: minLength 5); ``ssh-public-keys``: one OpenSSH public key per line."""
    if not isinstance(value, str):
        return f"expected text (quote it), got {type(value).__name__}; the value is not repeated here"
    if key == "password":
        if len(value) < 5:
            return "PVE wants at least 5 characters (pve-container create_vm: minLength 5)"
        if CONTROL.search(value):
            return "holds a line break or another control character"
        return (post_problem({key: value}, secrets={key}) or "").partition(": ")[2] or None
    lines = [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]
    bad = [number for number, line in enumerate(lines, 1) if not _SSH_KEY.match(line)]
    if not lines or bad:
        return (
            f"line {bad[0] if bad else 1} is not an OpenSSH public key (PVE: SSH public key validation "
            "error, pve-common PVE::Tools validate_ssh_public_keys); one key per line"
        )
    return None


def guest_problems(
    vmid: object, node: object, target: object, adopt: object, removal: object, reboot_for_pending: object
) -> tuple[int, list[str]]:
    """``(vmid, problems)`` for the arguments every guest state takes, in both families: the vmid
    (``vmid_number``; 0 when it is bad), the node (pve-common ``pve_verify_node_name``), the
    target, ``adopt``, ``removal`` and ``reboot_for_pending``."""
    problems: list[str] = []
    try:
        number = vmid_number(vmid)
    except DeclarationError as exc:
        problems += exc.problems
        number = 0
    if not isinstance(node, str) or len(node) > NODE_MAX or not NODE.match(node):
        # A node name is a host name label (at most NODE_MAX characters); the message stays PVE's.
        problems.append(f"node: {shown(node)} is not a PVE node name (pve-node)")
    if not isinstance(target, str) or not target:
        problems.append("target: name the cluster from proxmox:targets")
    problems += filter(
        None,
        (
            boolean_problem("adopt", adopt),
            removal_problem(removal),
            boolean_problem("reboot_for_pending", reboot_for_pending),
        ),
    )
    return number, problems


def config_problems(
    config: Mapping[object, object] | None, take: Callable[[str, object], list[str]]
) -> tuple[list[str], str | None]:
    """``(problems, pool)`` of a guest declaration's ``config``, in both families: each key in name
    order; a key that is not text is refused; ``pool`` is checked here (``pool_problem``; None when
    not declared, ``''`` for no pool); every other key goes to the family's ``take(key, value)``,
    which keeps what it accepts and returns its problems, one sentence each."""
    problems: list[str] = []
    pool: str | None = None
    for key, raw in sorted((config or {}).items(), key=lambda item: str(item[0])):
        if not isinstance(key, str):
            problems.append(f"{shown(key)}: config keys are strings")
        elif key == "pool":
            problem = pool_problem(raw)
            if problem:
                problems.append(f"pool: {problem}")
            else:
                pool = str(raw)
        else:
            problems += take(key, raw)
    return problems, pool


def wired_value(key: str, raw: object, kind: str | None) -> tuple[str, str | None]:
    """``(wire spelling, None)`` of a declared config value whose schema rule is of ``kind``, or
    ``('', problem)``: a boolean where a number goes, YAML's boolean or float where text goes
    (``text_problem``), a list or mapping, a control character (only ``description`` may span
    lines: PVE keeps each other key on one config line, pve-container ``write_pct_config`` and
    qemu-server ``write_vm_config``: "detected invalid newline inside property"), or a value longer
    than one request (``post_problem``). A boolean API parameter is sent as 1/0, the only spelling
    pve-common ``JSONSchema.pm`` ``check_type`` takes for one."""
    if isinstance(raw, bool) and kind in ("integer", "number"):
        return "", f"expected a number, got {raw!r}"
    problem = text_problem(raw) if kind in ("string", "enum") else None
    if problem:
        return "", problem
    try:
        value = wire(raw)
    except TypeError as exc:
        return "", str(exc)
    if CONTROL.search(value.replace("\n", "").replace("\t", "") if key == "description" else value):
        return "", (
            "the value holds a line break or another control character; PVE keeps each key on one config "
            'line ("detected invalid newline inside property"), so nothing can be written from it'
        )
    if value and kind == "boolean":
        try:
            value = flag(value)
        except ValueError:
            return "", f"type check ('boolean') failed - got {shown(value)}"
    if len(value) > MAX_POST:
        return "", str(post_problem({key: value})).partition(": ")[2]
    return value, None
