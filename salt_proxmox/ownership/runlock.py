"""The run lock of a target whose rows live in OpenBao (docs/design.md §8, "The run lock"): one KV
version 2 entry, ``<mount>/data/<path>/locks/<target>``, holding ``{holder: {minion, host, pid, run,
jid, started, expires} | null}`` (epoch seconds), so two hosts never apply to one target at once.

- Taken with ``cas`` = the version that showed it free: 0 for the first take (no entry yet; OpenBao
  ``builtin/logical/kv`` ``path_data.go`` ``pathDataWrite`` refuses ``cas=0`` once the entry
  exists), the released entry's version after. Of two takers, one write wins; the other re-reads.
- Held by another run: wait up to ``timeout`` seconds, then ``LockHeld`` naming the holder.
- Expired (``expires`` past), or held by a process of this host that no longer runs: taken over,
  and the return says whose it was.
- Renewed (a new ``expires``) check-and-set; released by writing ``holder: null`` check-and-set,
  never by a delete (KV version 2 has no check-and-set delete), so a lock another run took over is
  never dropped by the run that lost it.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from urllib.parse import quote

import hvac
import hvac.exceptions
import requests

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.openbao.client import describe_failure
from salt_proxmox.ownership.bao import OwnershipBaoError, bao_call, not_found
from salt_proxmox.ownership.rows import StoreConflict

#: Seconds between two reads of a lock another run holds.
POLL = 1.0


class LockHeld(SaltProxmoxError):
    """Another run holds the target's lock, and it did not come free within ``lock_timeout``."""


class LockLost(SaltProxmoxError):
    """This run's lock was taken over (it had expired) or broken: the run stops writing."""


def shown(holder: Mapping[str, object]) -> str:
    """``minion m1 (job 2024…, pid 42 on host h1) since 12:00:01 UTC, until 12:10:01 UTC``."""

    def clock(value: object) -> str:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(value))
        return "?"

    job = f"job {holder.get('jid')}, " if holder.get("jid") else ""
    return (
        f"minion {holder.get('minion')} ({job}pid {holder.get('pid')} on host {holder.get('host')}) "
        f"since {clock(holder.get('started'))}, until {clock(holder.get('expires'))}"
    )


def gone(holder: Mapping[str, object]) -> bool:
    """True when ``holder`` is a process of this host that no longer runs (signal 0 finds none):
    a run killed or ended early (Salt skipped its last states) leaves its lock behind."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int) or isinstance(pid, bool):
        return False
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


class RunLock:
    """The lock of ``target`` under ``mount``/``path`` (``bao.parse_ownership``). ``clock`` (epoch
    seconds) and ``sleep`` are injected for tests."""

    def __init__(
        self,
        client: hvac.Client,
        mount: str,
        path: str,
        target: str,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.client, self.mount, self.target = client, mount, target
        self.entry = f"{path}/locks/{quote(target, safe='')}"
        self.clock, self.sleep = clock, sleep
        self.version = 0

    @property
    def where(self) -> str:
        return f"the run lock of target {self.target} (OpenBao KV mount {self.mount} at {self.entry})"

    def read(self) -> tuple[dict | None, int]:
        """``(holder, version)`` as stored now: ``(None, 0)`` without an entry, ``(None, v)`` released.
        Raises OwnershipBaoError naming the entry when it cannot be read (never "free")."""
        try:
            answer = self.client.secrets.kv.v2.read_secret_version(
                self.entry, mount_point=self.mount, raise_on_deleted_version=False
            )
        except hvac.exceptions.InvalidPath as exc:
            if not_found(exc):
                return None, 0
            raise OwnershipBaoError(f"{self.where}: {describe_failure(exc)}") from None
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            raise OwnershipBaoError(f"{self.where}: {describe_failure(exc)}") from None
        data = answer.get("data") if isinstance(answer, Mapping) else None
        version = ((data or {}).get("metadata") or {}).get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise OwnershipBaoError(f"{self.where}: the answer holds no KV version 2 entry")
        holder = (data.get("data") or {}).get("holder")
        if holder is not None and not isinstance(holder, dict):
            raise OwnershipBaoError(f"{self.where}: its holder is not a mapping; unlock it with force=True")
        return holder, version

    def _write(self, holder: dict | None, version: int) -> None:
        answer = bao_call(
            self.where,
            lambda: self.client.secrets.kv.v2.create_or_update_secret(
                self.entry, {"holder": holder}, cas=version, mount_point=self.mount
            ),
        )
        written = (answer.get("data") or {}).get("version") if isinstance(answer, Mapping) else None
        self.version = written if isinstance(written, int) and not isinstance(written, bool) else version + 1

    def take(self, me: Mapping[str, object], timeout: float, ttl: float) -> str | None:
        """Hold the lock for run ``me`` (``{minion, host, pid, run, jid}``) for ``ttl`` seconds;
        returns a note when a lock was taken over (expired, or its process gone), else None. Held
        already by ``me['run']``: renewed.

        Raises LockHeld naming the holder once ``timeout`` seconds passed with it held by another
        run; OwnershipBaoError when OpenBao cannot be read or written.
        """
        deadline = self.clock() + timeout
        while True:
            holder, version = self.read()
            now = self.clock()
            note = None
            if holder is not None and holder.get("run") != me.get("run"):
                expired = not isinstance(holder.get("expires"), int | float) or holder["expires"] <= now
                if not (expired or gone(holder)):
                    if now >= deadline:
                        raise LockHeld(
                            f"target {self.target} is locked by another apply: {shown(holder)}. Waited "
                            f"{timeout:g} s (proxmox:ownership:lock_timeout); nothing was written. Let it "
                            "finish, or break the lock: salt-call proxmox.unlock "
                            f"target={self.target} force=True"
                        )
                    self.sleep(min(POLL, max(deadline - now, 0.0)))
                    continue
                why = "it had expired" if expired else "its process no longer runs"
                note = f"took over the run lock of target {self.target} ({why}): it was {shown(holder)}"
            started = holder.get("started") if holder and holder.get("run") == me.get("run") else now
            try:
                self._write({**me, "started": started, "expires": now + ttl}, version)
            except StoreConflict:
                continue  # another taker wrote first: read who holds it now
            return note

    def renew(self, me: Mapping[str, object], ttl: float) -> None:
        """Push ``expires`` to ``ttl`` seconds from now. Raises LockLost when another run holds it
        now (this run's had expired and was taken over, or was broken)."""
        while True:
            holder, version = self.read()
            if holder is None or holder.get("run") != me.get("run"):
                now = f"held by {shown(holder)}" if holder else "released or broken"
                raise LockLost(
                    f"target {self.target}: this run's lock is {now}; nothing more is written by this run. "
                    f"Raise proxmox:ownership:lock_ttl above the longest state, then run again"
                )
            try:
                self._write({**holder, "expires": self.clock() + ttl}, version)
            except StoreConflict:
                continue
            return

    def release(self, me: Mapping[str, object]) -> bool:
        """Free the lock when run ``me`` holds it; returns whether it did (a lock another run holds
        now is left to it)."""
        while True:
            holder, version = self.read()
            if holder is None or holder.get("run") != me.get("run"):
                return False
            try:
                self._write(None, version)
            except StoreConflict:
                continue
            return True

    def force(self) -> dict | None:
        """Free the lock whoever holds it (``proxmox.unlock force=True``); returns the holder it had."""
        while True:
            holder, version = self.read()
            if holder is None:
                return None
            try:
                self._write(None, version)
            except StoreConflict:
                continue
            return holder
