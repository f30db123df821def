"""Reads that overlap: GETs a state run will need, sent ahead with a bounded number in flight.

A plan of N guests is N config GETs. Sent one after another they cost N round trips; sent
ahead by C threads at once they cost about N/C. Nothing about what a read means changes:

- the same client sends them (members tried in order, TLS, timeout, the same typed errors);
- an answer read ahead is handed only to a read made with the very same credential, so a
  missing config still leads to the guest index read with that credential (the proof of
  absence), and a credential minted meanwhile reads afresh;
- an answer is what ``PveClient.request`` returned or raised: the state that takes it gets it
  exactly as if it had sent the GET itself, so a 403, a 500 or a malformed answer is that
  state's error, never the run's;
- each answer is handed out once (``take``): the read-back after a write, and any later read of
  the same path, go to PVE.

Listings several states read (``shared``: firewall aliases, pools, roles, ACL entries): one
successful answer per path serves every state of the run until the run writes any of them
(``drop_listings``: deleting a role or a pool also removes ACL entries); a failed listing is not
kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.pve.client import Credential, PveClient


@dataclass(frozen=True)
class _Answer:
    credential: Credential
    value: object = None
    error: SaltProxmoxError | None = None


class ReadAhead:
    """The answers read ahead for one target within one run (kept in Salt's ``__context__``,
    which a minion may keep from one run to the next: ``begin`` drops another run's answers).
    """

    def __init__(self) -> None:
        self.answers: dict[str, _Answer] = {}
        self.listings: dict[str, _Answer] = {}
        self.run: object = None
        self.started: set[str] = set()

    def begin(self, run: object) -> None:
        """Serve run ``run`` (its key; None for a call outside a state run, which shares nothing):
        whatever another run read is dropped, never served."""
        if run is None or run != self.run:
            self.answers.clear()
            self.listings.clear()
            self.started.clear()
            self.run = run

    def first(self, what: str) -> bool:
        """True the first time ``what`` (a family's read ahead) is asked for in this run."""
        if what in self.started:
            return False
        self.started.add(what)
        return True

    def fill(self, client: PveClient, credential: Credential, paths: Iterable[str], concurrency: int) -> int:
        """GET every path not already held, at most ``concurrency`` at once; returns how many
        were sent. Errors are kept as answers (``SaltProxmoxError``); nothing is raised."""
        todo = [path for path in dict.fromkeys(paths) if path not in self.answers]
        if not todo:
            return 0

        def one(path: str) -> tuple[str, _Answer]:
            try:
                return path, _Answer(credential, value=client.request("GET", path, credential))
            except SaltProxmoxError as exc:
                return path, _Answer(credential, error=exc)

        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(todo)))) as pool:
            for path, answer in pool.map(one, todo):
                self.answers[path] = answer
        return len(todo)

    def get(self, client: PveClient, path: str, credential: Credential) -> object:
        """``GET path``: the answer read ahead with ``credential`` (handed out once), else a
        fresh request. Raises what ``PveClient.request`` raises."""
        answer = self.answers.pop(path, None)
        if answer is None or answer.credential != credential:
            return client.request("GET", path, credential)
        if answer.error is not None:
            raise answer.error
        return answer.value

    def held_error(self, path: str) -> SaltProxmoxError | None:
        """The error read ahead for ``path`` and not yet handed out, else None (nothing is handed out)."""
        answer = self.answers.get(path)
        return None if answer is None else answer.error

    def shared(
        self,
        client: PveClient,
        path: str,
        credential: Credential,
        params: Mapping[str, str] | None = None,
        envelope: bool = False,
    ) -> object:
        """``GET path`` for a listing several states read: the run's earlier successful answer
        with ``credential``, else a fresh request whose success is kept. With ``envelope`` the
        whole answer object (``PveClient.request``'s ``envelope``: the node network listing's
        ``changes`` beside its ``data``); a kept envelope serves a later read of its ``data`` too,
        so the listing is sent once. Raises what ``PveClient.request`` raises (and keeps nothing
        then)."""
        key = _listing_key(path, params)
        whole = self.listings.get(f"{key}#envelope")
        if whole is not None and whole.credential == credential and isinstance(whole.value, Mapping):
            return whole.value if envelope else whole.value.get("data")
        if envelope:
            value = client.request("GET", path, credential, params=params, envelope=True)
            self.listings[f"{key}#envelope"] = _Answer(credential, value=value)
            return value
        answer = self.listings.get(key)
        if answer is not None and answer.credential == credential:
            return answer.value
        value = client.request("GET", path, credential, params=params)
        self.listings[key] = _Answer(credential, value=value)
        return value

    def drop_listings(self) -> None:
        """Forget every kept listing: the run is about to write, and what they list may change."""
        self.listings.clear()


def _listing_key(path: str, params: Mapping[str, str] | None) -> str:
    return path if not params else f"{path}?{sorted(params.items())}"
