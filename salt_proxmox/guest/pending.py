"""A guest's config as PVE holds it: the values in effect and the pending section (pure).

A change written to a running guest goes to its ``[pve:pending]`` section unless PVE can apply
that key live (pve-container ``src/PVE/LXC/Config.pm`` ``update_pct_config`` then
``vmconfig_hotplug_pending``; qemu-server ``PVE/QemuServer.pm`` ``vmconfig_hotplug_pending`` with
the VM's ``hotplug`` option), and it takes effect at the next start (``vmconfig_apply_pending``).
``GET …/config`` answers the pending values merged in unless ``current=1``, so it cannot tell
what is running from what is waiting.

One ``GET …/pending`` tells both (pve-container ``src/PVE/API2/LXC.pm`` ``vm_pending``,
qemu-server ``PVE/API2/Qemu.pm`` ``vm_pending``, both answered by pve-guest-common
``PVE::GuestHelpers::config_with_pending_array``): one row per key with ``value`` (in effect),
``pending`` (the value waiting for the next start) and ``delete`` (1, or 2 for a forced delete: a
removal waiting). ``load_config`` puts the config's ``digest`` into the hash the rows are made of,
so the digest is a row too (``format_pending`` skips it when ``pct pending`` prints). It checks the
same VM.Audit and answers a missing config with the same error as ``GET …/config``, so it replaces
that read: still one request per guest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


class PendingRowsError(ValueError):
    """The ``GET …/pending`` answer does not have the shape ``config_with_pending_array`` gives."""


@dataclass(frozen=True)
class GuestConfig:
    """One read of a guest's config.

    ``current``: key → value in effect (``GET …/config?current=1`` without ``digest``).
    ``pending``: key → value waiting for the next start. ``deletes``: keys whose removal waits.
    ``digest``: the config file's SHA-1, for a digest-guarded write.
    """

    current: dict[str, object]
    digest: str
    pending: dict[str, object] = field(default_factory=dict)
    deletes: frozenset[str] = frozenset()

    def merged(self) -> dict[str, object]:
        """The config with every pending change applied, ``digest`` included: what
        ``GET …/config`` answers by default and what the next start will run."""
        out = {key: value for key, value in self.current.items() if key not in self.deletes}
        out.update(self.pending)
        out["digest"] = self.digest
        return out

    def in_effect(self) -> dict[str, object]:
        """The values the guest runs with now, ``digest`` included."""
        return {**self.current, "digest": self.digest}

    def waiting(self) -> list[str]:
        """Every key with a pending value or a pending removal, sorted."""
        return sorted({*self.pending, *self.deletes})

    @classmethod
    def from_rows(cls, rows: object) -> GuestConfig:
        """Parse the ``GET …/pending`` answer.

        Raises PendingRowsError when it is not a list of objects with a string ``key``, when a
        ``delete`` is not 0, 1 or 2, or when no row carries a non-empty ``digest`` value.
        """
        if not isinstance(rows, list):
            raise PendingRowsError("the answer is not a list of config rows, so it has no digest")
        current: dict[str, object] = {}
        pending: dict[str, object] = {}
        deletes: set[str] = set()
        for row in rows:
            if not isinstance(row, Mapping) or not isinstance(row.get("key"), str) or not row["key"]:
                raise PendingRowsError("a row has no key")
            key = row["key"]
            if row.get("value") is not None:
                current[key] = row["value"]
            if row.get("pending") is not None:
                pending[key] = row["pending"]
            delete = row.get("delete")
            if delete not in (None, 0, 1, 2, "0", "1", "2"):
                raise PendingRowsError(f"{key}: delete is {delete!r}, not 0, 1 or 2")
            if delete not in (None, 0, "0"):
                deletes.add(key)
        digest = current.pop("digest", None)
        if not isinstance(digest, str) or not digest:
            raise PendingRowsError("no digest row, so it is not a config PVE read from disk")
        return cls(current=current, digest=digest, pending=pending, deletes=frozenset(deletes))

    @classmethod
    def settled(cls, config: Mapping[str, object]) -> GuestConfig:
        """A config with nothing pending (a ``GET …/config`` answer, ``digest`` included)."""
        current = {key: value for key, value in config.items() if key != "digest"}
        return cls(current=current, digest=str(config.get("digest") or ""))

    def rows(self) -> list[dict[str, object]]:
        """This config as ``GET …/pending`` answers it (tests and fakes build answers with it)."""
        out: list[dict[str, object]] = [{"key": "digest", "value": self.digest}]
        for key in sorted({*self.current, *self.pending, *self.deletes}):
            row: dict[str, object] = {"key": key}
            if key in self.current:
                row["value"] = self.current[key]
            if key in self.pending:
                row["pending"] = self.pending[key]
            if key in self.deletes:
                row["delete"] = 1
            out.append(row)
        return out
