"""The rules both guest families' judges share (pure): how a declared value is compared with the live
one (``compared_as``, by a ``guest.schema.Key``'s ``compare`` kind), how each declared key is judged
(``judge_each``, ``put_or_clear``), and the root-only refusals, worded with the family's own
``guest.words.Words`` (pve-container ``src/PVE/LXC.pm`` ``check_ct_modify_config_perm``, qemu-server
``PVE/API2/Qemu.pm`` ``$check_vm_modify_config_perm``: only ``root@pam`` passes, never an API token).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from salt_proxmox.guest.change import Change, live_text
from salt_proxmox.guest.schema import STARTUP, PropString
from salt_proxmox.guest.words import Words
from salt_proxmox.outcome import text_diff
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle
from salt_proxmox.wire.propstring import flag, option_map, pairs, sorted_form


def ordered_list(value: str) -> str:
    """A resolver list: order matters (PVE writes it into resolv.conf as given), separators do not."""
    return " ".join(value.replace(",", " ").replace(";", " ").split())


def compared_as(
    compare: str, value: str, style: TagStyle = DEFAULT_TAG_STYLE, form: PropString | None = None
) -> str:
    """``value`` in its comparable spelling for a ``Key.compare`` kind shared by the guest families
    (``number``, ``flag``, ``description``, ``features``, ``list``, ``startup``, ``tags``); any
    other kind is compared as written. ``form``: the key's table (``Key.form``) for ``features``,
    compared as an option map with its defaults dropped."""
    if compare == "number":
        try:
            number = float(value)
        except ValueError:
            return value
        return str(int(number)) if number.is_integer() else str(number)
    if compare == "flag":
        try:
            return flag(value)
        except ValueError:
            return value
    if compare == "description":
        # PVE stores a description as ``#`` comment lines and reads each back with "\n"
        # appended (pve-container Config.pm ``parse_pct_config``): trailing whitespace is not it.
        return value.rstrip()
    if compare == "features" and form is not None:
        return sorted_form(option_map(value, form))
    if compare == "list":
        return ordered_list(value)
    if compare == "startup":
        return sorted_form(dict(pairs(value, STARTUP.default_key)))
    if compare == "tags":
        return style.unique(value)
    return value


def judge_each(
    config: Mapping[str, str],
    live: Mapping[str, object],
    change: Change,
    drift: set[str],
    judge_key: Callable[[str, str, str | None], None],
) -> None:
    """Run ``judge_key(key, declared, live text)`` over every declared key of either guest family; a
    live value the family's parser cannot read (``ValueError``) is drift with a refusal naming the
    key, so nothing is written over a value this product does not understand."""
    for key, want in config.items():
        try:
            judge_key(key, want, live_text(live.get(key)))
        except ValueError as exc:
            drift.add(key)
            change.refuse.append(f"{key}: the live value cannot be read as PVE's format ({exc}).")


def put_or_clear(
    key: str,
    want: str,
    have: str | None,
    change: Change,
    drift: set[str],
    differs: Callable[[str, str], bool],
    write: Callable[[str, str | None], str],
) -> None:
    """Judge a key PVE clears with ``delete``: a declared ``''`` clears it when live holds it;
    otherwise a missing live value, or one ``differs(want, have)`` says is not the same, is put as
    ``write(want, have)`` (which may keep live parts such as a NIC's MAC)."""
    if want == "":
        if have is not None:
            drift.add(key)
            change.clear.append(key)
        return
    if have is None or differs(want, have):
        drift.add(key)
        change.put[key] = write(want, have)


def judge_scalar(
    key: str,
    want: str,
    have: str | None,
    default: str | None,
    form: Callable[[str], str],
    change: Change,
    drift: set[str],
) -> None:
    """Judge a scalar key of either guest family: a declared ``''`` clears it unless it is absent or
    holds PVE's ``default`` (what absence means, ``guest.schema.Key.default``); any other value is put
    when its comparable spelling (``form``) differs from the live one, or from the default when the
    key is absent."""
    if want == "":
        if have is None or (default is not None and form(have) == form(default)):
            return
        drift.add(key)
        change.clear.append(key)
        return
    current = have if have is not None else default
    if form(want) == ("" if current is None else form(current)):
        return
    drift.add(key)
    change.put[key] = want


def root_only_refusal(
    words: Words, vmid: int, node: str, key: str, value: str, why: str, source: str = ""
) -> str:
    """A refusal of a root-only change to an existing guest of either family, naming the
    ``<command> set`` (``words.command``: ``pct``/``qm``) to run on its node; ``''`` names
    ``--delete``. ``source``: the PVE check, in parentheses, when given."""
    option = f"--delete {key}" if value == "" else f"--{key} '{value}'"
    return (
        f"{key}: {why} PVE lets only root@pam make this change{source}, and an API token is never "
        f"root@pam. Run `{words.command} set {vmid} {option}` on node {node}, then plan again."
    )


def root_only_at_create_refusal(
    words: Words, vmid: int, node: str, key: str, value: str, why: str, create_args: str = ""
) -> str:
    """A refusal of a root-only value on a guest of either family that does not exist yet: ``set``
    cannot help before the create, so it names the two ways that work — create it as root@pam with
    the value (``<command> create <vmid><create_args>``, then ``adopt: true``), or create it without
    and ``<command> set`` it after. ``words``: the family's ``label`` and ``command``."""
    return (
        f"{key}: {why} PVE lets only root@pam set this, and an API token is never root@pam. {words.label} "
        f"{vmid} does not exist yet: create it as root@pam on node {node} (`{words.command} create "
        f"{vmid}{create_args} --{key} '{value}'` with the rest of its declaration) and declare "
        f"adopt: true; or drop {key}, apply, run `{words.command} set {vmid} --{key} '{value}'` on node "
        f"{node}, and declare it again."
    )


def description_change(old: str | None, new: str | None) -> dict[str, str]:
    """What a return shows for a guest's ``description``: ``{"diff": <unified diff>}`` of the two
    texts without trailing white space, as the judges compare it (both families: PVE hands the text
    back with a trailing newline, pve-container ``Config.pm`` and qemu-server ``QemuServer.pm``
    ``write_vm_config``'s comment lines)."""

    def lines(text: str | None) -> str | None:
        return text.rstrip() + "\n" if text and text.rstrip() else None

    return {"diff": text_diff(lines(old), lines(new), "description (PVE)", "description (declared)")}
