"""The context every call of one target makes within one Salt run (``PveContext``): the client,
the credential broker, the ownership rows, task polling and the run's reads ahead. Shared by every
family (guests, simple objects, networks, SDN, firewall aliases)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from salt_proxmox.openbao.creds import CredentialBroker
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.pve.client import PveClient, Target
from salt_proxmox.pve.lane import Lane
from salt_proxmox.pve.readahead import ReadAhead
from salt_proxmox.pve.tasks import (
    CREATE_POLLS,
    POLL_INTERVAL,
    TASK_POLLS,
    await_task,
    start_task,
    upid_node,
    warnings_note,
)
from salt_proxmox.run.memo import RunMemo
from salt_proxmox.run.overlap import TaskSlots


@dataclass
class PveContext:
    """Everything one target's calls need within one Salt run.

    ``client`` sends; ``broker`` hands out credentials; ``ownership`` keeps rows; ``sleep`` and
    ``poll_interval`` (seconds) drive task polling (tests pass a no-op sleep). ``create_polls``
    and ``task_polls`` bound the polls of a create and of any other task (``pve.tasks``'
    ``CREATE_POLLS``/``TASK_POLLS``; tests lower them to meet a task still running at its bound).
    ``reads`` holds the run's reads ahead (``salt_proxmox.pve.readahead``) and ``memo`` what the
    run learned once for all its states (``salt_proxmox.run.memo``: the cluster's release and tag
    style, planned creates and stagings, a failed apply), both dropped when another run begins
    (``begin``).
    ``notes`` collects what a task that succeeded with warnings left to say (``take_notes``).
    ``slots``: the target's task slots when its guest tasks may overlap (``salt_proxmox.run.overlap``,
    ``task_concurrency`` above 1), else None. ``lane``: the writes only root@pam may make
    (``guest.lane``), or None.
    """

    target: Target
    client: PveClient
    broker: CredentialBroker
    ownership: Ownership
    sleep: Callable[[float], None] | None = None
    poll_interval: float = POLL_INTERVAL
    create_polls: int = CREATE_POLLS
    task_polls: int = TASK_POLLS
    reads: ReadAhead = field(default_factory=ReadAhead)
    memo: RunMemo = field(default_factory=RunMemo)
    notes: list[str] = field(default_factory=list)
    slots: TaskSlots | None = None
    #: The target's root lane (``proxmox:targets:<t>:root_lane``, ``salt_proxmox.pve.lane``), or None.
    lane: Lane | None = None
    _held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    _holding: bool = field(default=False, repr=False)

    def begin(self, run: object) -> None:
        """Serve run ``run`` (its key; None outside a state run): the reads ahead and the memo of
        another run are dropped, never served."""
        self.reads.begin(run)
        self.memo.begin(run)

    def task(
        self, method: str, path: str, node: str, what: str, form=None, polls: int | None = None, params=None
    ) -> str:
        """Run one task with a fresh provision credential, polled by that same credential
        (at most ``polls`` polls, ``task_polls`` unless given, ``poll_interval`` seconds apart);
        ``form`` goes in the body, ``params`` in the query string; returns its UPID.

        Raises CredentialError when no provision credential can be minted, PveError when PVE
        refused the call (nothing started), TaskFailed when the task ended in error, and
        TaskUncertain when no UPID came back or the task's end could not be read
        (``pve.tasks.start_task`` / ``await_task``).
        """
        polls = self.task_polls if polls is None else polls
        credential = self.broker.provision(need_seconds=polls * self.poll_interval)
        upid = start_task(self.client, credential, method, path, what, form, params)
        self.await_task(credential, node, upid, what, polls)
        return upid

    def await_task(self, credential, node: str, upid: str, what: str, polls: int) -> None:
        """Poll ``upid`` with ``credential`` (its owner), bounded by ``polls``; a task that ended
        ``WARNINGS: N`` succeeded, and its note goes to ``notes``."""
        kwargs = {"sleep": self.sleep} if self.sleep is not None else {}
        count = await_task(self.client, credential, node, upid, what, polls, self.poll_interval, **kwargs)
        if count:
            self.notes.append(warnings_note(what, upid_node(upid) or node, upid, count))

    def write_slot(self, node: str) -> None:
        """Hold a task slot of ``node`` and of the target (``TaskSlots.held``, waiting for one) until
        ``release_slots``; nothing when the target's tasks do not overlap or a slot is held already.
        Raises Refused when a slot cannot be taken (``TaskSlots.held``)."""
        if self.slots is None or self._holding:
            return
        self._held.enter_context(self.slots.held(node))
        self._holding = True

    def release_slots(self) -> None:
        """Let go of the slot ``write_slot`` took, if any."""
        self._holding = False
        self._held.close()

    def take_notes(self) -> list[str]:
        """The task notes gathered since the last call, handed over once."""
        notes, self.notes = self.notes, []
        return notes
