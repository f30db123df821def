"""A judge's answer about one guest, and what its pending section adds to it (pure; shared by guest
families).

A family's judge (``lxc.judge.judge``) compares a declaration with one config and answers a
``guest.change.Change`` (put, clear, resize, refuse, drift). Plan and apply both consume that one
answer.

A running guest keeps most changes pending until its next start (``salt_proxmox.guest.pending``).
``judge_guest`` judges a declaration against both halves of one ``GET …/pending`` read: what to write
against the config with pending changes merged (PVE writes into the pending section, so a value
already waiting is not written again), what is still waiting against the values in effect, and which
pending changes contradict the declaration (refused: ``pct set <vmid> --revert <key>`` / ``qm set``,
pve-guest-common ``PVE::GuestHelpers`` ``check_and_apply_pending``'s revert, or a restart settles them,
not a write of the value).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from salt_proxmox.guest.change import Change, live_text
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Declaration, Family


@dataclass(frozen=True)
class Verdict:
    """``judge_guest``'s answer.

    ``change``: what to write, judged against the merged config, without the keys ``conflicts``
    refuses. ``waiting``: declared keys whose declared value is written but pending until the
    next start. ``conflicts``: refusal sentences, one per pending change that contradicts the
    declaration. ``undeclared``: note sentences, one per pending change to a key the declaration
    does not name. ``drift_in_effect``: every key whose value in effect differs from the
    declaration (what adopt and destroy checks judge).
    """

    change: Change
    waiting: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)
    drift_in_effect: list[str] = field(default_factory=list)

    @property
    def refuse(self) -> list[str]:
        """Every refusal: the judge's and the pending conflicts'."""
        return [*self.change.refuse, *self.conflicts]


def _pending_text(family: Family, config: GuestConfig, key: str) -> str:
    if key in config.pending:
        return f"pending {family.shown(key, live_text(config.pending[key]))}"
    return "pending removal"


def _declared_before(
    family: Family, ours: Declaration | None, key: str, merged: Mapping[str, object], style: TagStyle
) -> bool:
    """True when ``ours`` declared ``key`` with the value ``merged`` holds for it."""
    if ours is None or key not in ours.config:
        return False
    return not family.judge(replace(ours, config={key: ours.config[key]}), merged, style).drift


def judge_guest(
    family: Family,
    decl: Declaration,
    config: GuestConfig,
    ours: Declaration | None = None,
    style: TagStyle = DEFAULT_TAG_STYLE,
) -> Verdict:
    """Judge ``decl`` (a declaration of ``family``) against a guest's values in effect and its
    pending section.

    ``ours``: the declaration this state last applied (its ownership row), or None. A pending value
    of a declared key that equals neither ``decl`` nor ``ours`` is somebody else's change: PVE would
    make it live at the next start, so it is refused with its remedy (``pct set <vmid> --revert
    <key>``, ``qm set`` for a VM, keeps the value in effect; a restart makes it live) instead of
    being overwritten. ``style``: the datacenter's tag style, as for the family's judge. Pure: no I/O.
    """
    merged = config.merged()
    change = family.judge(decl, merged, style, ours)
    queued = set(config.waiting())
    # Nothing pending: the values in effect are the merged ones, so one judgement serves both.
    drift_in_effect = (
        family.judge(decl, config.in_effect(), style, ours).drift if queued else list(change.drift)
    )
    waiting = [key for key in drift_in_effect if key not in change.drift and key in queued]
    conflicts: list[str] = []
    dropped: set[str] = set()
    label, command = family.label, family.command
    for key in change.drift:
        if key not in queued:
            continue
        if _declared_before(family, ours, key, merged, style):
            continue  # the pending value is what this state declared before: rewriting it is ours
        dropped.add(key)
        had = family.shown(key, live_text(config.current.get(key)))
        conflicts.append(
            f"{key}: a pending change waits for {label} {decl.vmid}'s next start "
            f"({_pending_text(family, config, key)}, in effect {had if had is not None else 'unset'}) and it "
            f"is not the declared value. Revert it with `{command} set {decl.vmid} --revert {key}` to keep "
            f"the value in effect, or restart the {family.noun} to make it live; then plan again."
        )
    undeclared = [
        f"{label} {decl.vmid}: {key} has a change this state does not declare waiting for the next start "
        f"({_pending_text(family, config, key)}); `{command} set {decl.vmid} --revert {key}` drops it."
        for key in sorted(queued)
        if key not in decl.config
    ]
    if dropped:
        # ``replace`` keeps a family's own fields (a VM's ``secrets``) on the change.
        change = replace(
            change,
            put={k: v for k, v in change.put.items() if k not in dropped},
            clear=[k for k in change.clear if k not in dropped],
        )
    return Verdict(
        change=change,
        waiting=waiting,
        conflicts=conflicts,
        undeclared=undeclared,
        drift_in_effect=drift_in_effect,
    )


def split_by_effect(
    family: Family, verdict: Verdict, config: GuestConfig, running: bool
) -> tuple[list[str], list[str]]:
    """The keys ``verdict.change`` writes, split into (in effect at once, pending until the next
    start).

    A stopped guest takes every change at once (``vmconfig_apply_pending``); on a running one,
    ``family.applies_live`` (the family's hotplug rules) says which keys PVE applies live. A write
    of a key whose value in effect already is the declared one only drops a pending change
    (pve-guest-common ``AbstractConfig`` ``cleanup_pending``): at once too. A resize is done online:
    at once. Every key the write sends is placed: a second write's keys (a VM's ``after``) and its
    secrets (a VM's ``cipassword``, a ``$confdesc_cloudinit`` key qemu-server's ``$fast_plug_option``
    takes at once) by the same rules; a secret's value is never looked at.
    """
    change = verdict.change
    now: list[str] = []
    later: list[str] = []
    after: Mapping[str, str] = getattr(change, "after", {})
    secrets: list[str] = getattr(change, "secrets", [])
    for key in [*change.put, *change.clear, *after, *secrets]:
        value = change.put.get(key, after.get(key))
        live = (
            not running
            or key not in verdict.drift_in_effect
            or family.applies_live(key, key in change.clear, config, value)
        )
        (now if live else later).append(key)
    now.extend(disk for disk, _ in change.resize if disk not in now)
    return now, later
