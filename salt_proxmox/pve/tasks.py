"""Asynchronous PVE tasks: start one, then poll it with the credential that started it.

Create, resize and delete answer a UPID the moment PVE forks the worker (pve-container
``src/PVE/API2/LXC.pm``: their ``returns`` are ``string``); a config PUT answers ``null`` once
written and needs no wait.

- Each task is polled with the very credential that started it: PVE lets a task's owner read
  its status without ``Sys.Audit`` (pve-manager ``src/PVE/API2/Tasks.pm`` ``read_task_status``:
  ``$user eq $task->{user}``); a new mint is another token identity.
- Polling is bounded (``polls`` × ``interval`` seconds). A poll that cannot be read (an error,
  a body without ``status``) makes the outcome uncertain: reported with the UPID, never retried.
- A task that stops with ``OK`` succeeded; one that stops with ``WARNINGS: N`` succeeded with N
  warnings (pve-common ``src/PVE/UPID.pm`` ``status_is_error`` and ``normalize_status_type``,
  which pve-manager's task list shows as a warning, not an error): the caller reports success, the
  count and the ``pvenode task log`` command. Any other exit status fails with the UPID and the
  ``pvesh get .../log`` command to read why.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping

from salt_proxmox.errors import Refused, SaltProxmoxError, Uncertain
from salt_proxmox.pve.client import Credential, PveClient, api_path
from salt_proxmox.pve.errors import PVE_WORDS, Words

#: One-second polls: a cap, not an estimate.
CREATE_POLLS = 180
TASK_POLLS = 60
POLL_INTERVAL = 1.0


class TaskFailed(Refused):
    """The task ran and ended with a non-OK exit status."""


class TaskUncertain(Uncertain):
    """The task was started and its end could not be observed."""


#: pve-common ``src/PVE/UPID.pm`` ``status_is_error``: ``OK`` and ``WARNINGS: N`` are not errors.
_WARNINGS = re.compile(r"WARNINGS: ([0-9]+)")


def log_command(node: str, upid: str, words: Words = PVE_WORDS) -> str:
    """The command an operator runs to read a task's log (``words``: the API's, PVE's by default)."""
    return words.task_log.format(node=node, upid=upid)


def warnings_of(exit_status: object) -> int | None:
    """The warnings count of a successful task's ``exitstatus``: 0 for ``OK``, N for
    ``WARNINGS: N``; None for any other value (a failure, pve-common ``UPID.pm``
    ``status_is_error``)."""
    if exit_status == "OK":
        return 0
    matched = _WARNINGS.fullmatch(exit_status) if isinstance(exit_status, str) else None
    return int(matched.group(1)) if matched else None


def warnings_note(what: str, node: str, upid: str, count: int) -> str:
    """The comment line for a task that succeeded with ``count`` warnings."""
    return (
        f"{what}: task {upid} succeeded with {count} warning{'s' if count != 1 else ''} "
        f"(WARNINGS: {count}); read them with `pvenode task log {upid}` on {node}."
    )


def upid_node(upid: str) -> str | None:
    """The node a task runs on, from its UPID (pve-common ``src/PVE/Tools.pm`` ``upid_decode``:
    ``UPID:$node:$pid:$pstart:$starttime:$type:$id:$user:``), or None for a malformed UPID."""
    parts = upid.split(":")
    return parts[1] if len(parts) >= 9 and parts[0] == "UPID" and parts[1] else None


def upid_fields(upid: str) -> dict[str, object] | None:
    """``{node, starttime, type, id, user}`` of a UPID (pve-common ``src/PVE/Tools.pm``
    ``upid_decode``: ``UPID:$node:$pid:$pstart:$starttime:$type:$id:$user:``, the start time in
    hex epoch seconds, ``user`` as ``user@realm`` or ``user@realm!token``), or None for a
    malformed one."""
    parts = upid.split(":")
    if len(parts) < 9 or parts[0] != "UPID" or not parts[1]:
        return None
    try:
        start = int(parts[4], 16)
    except ValueError:
        return None
    return {"node": parts[1], "starttime": start, "type": parts[5], "id": parts[6], "user": parts[7]}


def await_task(
    client: PveClient,
    credential: Credential,
    node: str,
    upid: str,
    what: str,
    polls: int = TASK_POLLS,
    interval: float = POLL_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Wait for ``upid`` to stop; returns its warnings count (0 for ``OK``, N for
    ``WARNINGS: N``, see ``warnings_of``).

    The task is read on the node its worker runs on, the one the UPID names (``upid_node``), which
    is not always ``node`` (the guest's): a clone to another node runs on the template's node
    (qemu-server ``clone_vm``), and a node answers only for its own tasks (pve-manager
    ``src/PVE/API2/Tasks.pm`` ``read_task_status`` reads the node's own task file).

    Raises TaskFailed for any other exit status, TaskUncertain when a poll cannot be read or the
    task is still running after ``polls`` polls. Neither is retried.
    """
    node = upid_node(upid) or node
    path = f"{api_path('nodes', node, 'tasks', upid)}/status"
    log = log_command(node, upid, client.words)
    for attempt in range(polls):
        try:
            status = client.request("GET", path, credential)
        except SaltProxmoxError as exc:
            raise TaskUncertain(
                f"{what}: task {upid} could not be read ({exc}); it may still be running or have ended. "
                f"Nothing is retried. Read {log} before running the state again."
            ) from None
        state = status.get("status") if isinstance(status, Mapping) else None
        if not isinstance(state, str):
            raise TaskUncertain(
                f"{what}: task {upid} could not be read (the status answer has no status); nothing is "
                f"retried. Read {log} before running the state again."
            )
        if state == "stopped":
            exit_status = status.get("exitstatus")
            count = warnings_of(exit_status)
            if count is not None:
                return count
            raise TaskFailed(
                f"{what}: task {upid} ended {exit_status or 'with no exit status'!r}. Read "
                f"{log} before running the state again."
            )
        # Any other word (``running``, or one PVE may add) keeps polling: only "stopped" ends it.
        if attempt + 1 < polls:
            sleep(interval)
    raise TaskUncertain(
        f"{what}: task {upid} was still running after {polls * interval:g}s; it was not cancelled and "
        f"nothing is retried. Read {log} and run the state again when it has ended."
    )


def start_task(
    client: PveClient,
    credential: Credential,
    method: str,
    path: str,
    what: str,
    form: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
) -> str:
    """Send a task-starting call (``form`` in the body, ``params`` in the query string, where PVE
    reads a DELETE's keys); returns its UPID.

    Raises PveError when PVE refused (nothing started), and TaskUncertain when PVE answered no
    UPID (the write cannot be confirmed and is not claimed).
    """
    upid = client.request(method, path, credential, params=params, form=form)
    if not isinstance(upid, str) or not upid.startswith("UPID:"):
        raise TaskUncertain(
            f"{what}: {client.words.product} answered no task id, so the write cannot be confirmed and is "
            "not claimed. "
            "Read the object before running the state again."
        )
    return upid


def run_task(
    client: PveClient,
    credential: Credential,
    method: str,
    path: str,
    node: str,
    what: str,
    form: Mapping[str, str] | None = None,
    polls: int = TASK_POLLS,
    interval: float = POLL_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """``start_task`` then ``await_task`` on the same credential; returns the UPID."""
    upid = start_task(client, credential, method, path, what, form)
    await_task(client, credential, node, upid, what, polls, interval, sleep)
    return upid
