"""A family judge's answer about one guest (``Change``) and how a live config value reads as text
(``live_text``): plain data both the families' judges and the shared lifecycle read, with no import of
either (``guest.verdict`` adds what a guest's pending section makes of a ``Change``).

A family's judge (``lxc.judge.judge``) compares a declaration with one config and answers a
``Change``: ``put`` keys for the config PUT, ``clear`` keys for ``delete=``, ``resize`` for
``PUT …/resize`` tasks after the PUT, ``refuse`` sentences (non-empty means nothing is written)
and ``drift`` (every differing key). Plan and apply both consume that one answer.

``root`` names the keys of ``put``/``clear`` only root@pam may write, each with the sentence that
refuses it when the target has no root lane (``guest.lane.route``): with a lane they are written
through it, the rest with the provision token (``guest.lane.split``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from salt_proxmox.wire.propstring import wire
from salt_proxmox.wire.volumes import VolumeVerdict


@dataclass(frozen=True)
class Change:
    """A judge's answer; see the module docstring."""

    put: dict[str, str] = field(default_factory=dict)
    clear: list[str] = field(default_factory=list)
    resize: list[tuple[str, str]] = field(default_factory=list)
    refuse: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    root: dict[str, str] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        """True when applying this change sends anything to PVE."""
        return bool(self.put or self.clear or self.resize)

    def root_write(self, key: str, value: str, refusal: str) -> None:
        """Record a write of ``key`` only root@pam may make: ``value`` put (``''``: cleared), and
        ``refusal``, the family's sentence for a target without a root lane."""
        if value == "":
            self.clear.append(key)
        else:
            self.put[key] = value
        self.root[key] = refusal

    def take_volume(self, key: str, verdict: VolumeVerdict, root_only: str) -> bool:
        """Record ``judge_volume``'s verdict on volume ``key``: its refusal, ``root_only`` (the
        family's refusal sentence) when only root@pam may make it, the put and the resize. True
        when the volume differs (drift)."""
        if verdict.refuse:
            self.refuse.append(verdict.refuse)
        if verdict.root_only:
            self.refuse.append(root_only)
        if verdict.put:
            self.put[key] = verdict.put
        if verdict.resize:
            self.resize.append((key, verdict.resize))
        return verdict.differs


def live_text(value: object) -> str | None:
    """A live config value as a string (PVE's JSON gives numbers for integer keys)."""
    if value is None:
        return None
    try:
        return wire(value)
    except TypeError:
        return str(value)
