"""The ``proxmox`` execution module's operator calls: reads and one-off actions an operator runs from
the command line (``salt-call proxmox.guest_start 150``), each one function here taking the target's
context first. The execution module generates its function from each of ``CALLS``, with this
function's docstring and its signature less ``ctx`` plus ``target`` (the ``proxmox:targets`` entry,
default the only or the default one), so a call adds no wrapper there (docs/design.md §2
"Execution modules").

Every function raises what the library raises (SaltProxmoxError: DeclarationError naming the argument,
Refused, PveError, ...), which the module turns into Salt's CommandExecutionError with the sentence.
Boolean arguments go through ``errors.boolean`` (true or false, never a string or a number) before any
request.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING

from salt_proxmox.errors import boolean
from salt_proxmox.pve.client import api_path

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext


def _guests():
    from salt_proxmox.registry import guests

    return guests()


def cluster_resources(ctx: PveContext, type: str = "vm") -> object:
    """
    ``GET /cluster/resources`` with the read credential: a list of rows (vmid, node, type, status, ...).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.cluster_resources type=vm target=homelab
    """
    return ctx.client.request("GET", "cluster/resources", ctx.broker.read(), params={"type": type})


def task_status(ctx: PveContext, node: str, upid: str) -> object:
    """
    The status of a task, read with the read credential (PVE needs Sys.Audit on the node for a
    task another token started).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.task_status node=pve1 upid='UPID:pve1:...'
    """
    path = f"{api_path('nodes', node, 'tasks', upid)}/status"
    return ctx.client.request("GET", path, ctx.broker.read())


# Power calls and the guest list serve containers and VMs alike (salt_proxmox.guest.power); each finds
# the guest's node and type in the cluster's guest index.


def guests(ctx: PveContext) -> list[dict]:
    """
    Every guest of the cluster the read credential may audit, from one
    ``GET /cluster/resources?type=vm``, sorted by vmid: a list of
    ``{vmid, name, node, type (lxc|qemu), status, template}``. Fails (CommandExecutionError with
    the sentence) when the cluster cannot be read or answers something other than a list of guests.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guests
        salt-call proxmox.guests target=homelab
    """
    from salt_proxmox.guest import power

    return power.guest_rows(ctx)


def guest_status(ctx: PveContext, vmid: object, node: str | None = None) -> dict:
    """
    The power state of one guest (container or VM): ``{vmid, node, type, status}``, the status from
    ``GET /nodes/{node}/{lxc|qemu}/{vmid}/status/current``. ``node`` defaults to the one the
    cluster's guest index lists; a ``node`` it is not on is refused.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_status vmid=150
    """
    from salt_proxmox.guest import power

    return power.status_of(ctx, vmid, node)


def _power(ctx: PveContext, call: str, vmid, node, adopt, timeout=None, force_stop=False) -> dict:
    from salt_proxmox.guest import power

    return power.power_call(ctx, _guests(), call, vmid, node, adopt, timeout, force_stop)


def guest_start(ctx: PveContext, vmid: object, node: str | None = None, adopt: bool = False) -> dict:
    """
    Start a stopped guest this minion owns (``POST …/status/start``) and wait for the task with the
    credential that started it. Returns ``{vmid, node, type, status, changed, upid}``; a running
    guest is left alone (``changed: False``). A guest this minion did not create or adopt, or one
    that does not carry its recorded fingerprint, is refused unless ``adopt=True``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_start vmid=150
        salt-call proxmox.guest_start vmid=9001 node=pve2 adopt=True
    """
    return _power(ctx, "start", vmid, node, adopt)


def guest_shutdown(
    ctx: PveContext,
    vmid: object,
    node: str | None = None,
    adopt: bool = False,
    timeout: object = None,
    force_stop: bool = False,
) -> dict:
    """
    Shut a running guest this minion owns down cleanly (``POST …/status/shutdown``), waiting at
    most ``timeout`` seconds (PVE's default 60). Without ``force_stop=True`` a guest still running
    then stays running and the call fails; with it PVE stops it hard. Ownership as
    ``proxmox.guest_start``; a stopped guest is left alone.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_shutdown vmid=150 timeout=120
        salt-call proxmox.guest_shutdown vmid=150 timeout=30 force_stop=True
    """
    return _power(ctx, "shutdown", vmid, node, adopt, timeout, force_stop)


def guest_stop(ctx: PveContext, vmid: object, node: str | None = None, adopt: bool = False) -> dict:
    """
    Stop a running guest this minion owns at once (``POST …/status/stop``: PVE's hard stop, like
    pulling the plug; prefer ``proxmox.guest_shutdown``). Ownership as ``proxmox.guest_start``; a
    stopped guest is left alone.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_stop vmid=150
    """
    return _power(ctx, "stop", vmid, node, adopt)


def guest_reboot(
    ctx: PveContext, vmid: object, node: str | None = None, adopt: bool = False, timeout: object = None
) -> dict:
    """
    Reboot a running guest this minion owns (``POST …/status/reboot``: a shutdown, then a start,
    which makes pending changes live); ``timeout`` bounds the shutdown in seconds. A stopped guest
    is refused (nothing sent). Ownership as ``proxmox.guest_start``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_reboot vmid=150
    """
    return _power(ctx, "reboot", vmid, node, adopt, timeout)


def realm_sync(ctx: PveContext, realm: str, dry_run: bool = True, **options: object) -> dict:
    """
    Sync the users and groups of LDAP/AD ``realm`` from its directory now (``POST
    /access/domains/{realm}/sync`` as a task, awaited): ``dry_run`` (default True) writes nothing.
    ``scope``, ``remove-vanished``, ``enable-new`` as PVE takes them, else the realm's
    ``sync-defaults-options``. Never a side effect of a plan. Returns ``{realm, dry_run, upid}``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.realm_sync realm=corp dry_run=True
    """
    from salt_proxmox.access.realm import sync

    return sync(ctx, realm, boolean("dry_run", dry_run), **options)


def backup_coverage(ctx: PveContext) -> dict:
    """
    Which guests of the cluster no enabled backup job covers, and the enabled jobs covering every other
    guest: ``{uncovered: [CT 150, ...], covered: {VM 210: [nightly]}, disabled: [job ids]}``. PVE's
    ``/cluster/backup-info/not-backed-up`` counts disabled jobs as covering; this does not.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.backup_coverage
    """
    from salt_proxmox.backup import coverage

    return coverage.report(ctx)


def snapshot_list(ctx: PveContext, vmid: object, node: str | None = None) -> list[dict]:
    """
    The snapshots of guest ``vmid`` (``current`` left out), as PVE lists them: ``name``,
    ``description``, ``snaptime``, ``parent``, ``vmstate`` (VMs).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_list 150
    """
    from salt_proxmox.backup import adhoc

    return adhoc.list_snapshots(ctx, _guests(), vmid, node)


def snapshot_create(
    ctx: PveContext,
    vmid: object,
    snapname: str,
    node: str | None = None,
    description: str | None = None,
    vmstate: object = None,
    adopt: bool = False,
) -> dict:
    """
    Take snapshot ``snapname`` of a guest this minion owns (a PVE task), after the checks a plan makes
    (a config lock, a volume that cannot snapshot, ``vmstate`` of a stopped VM). A guest this minion did
    not create or adopt, or one not carrying its recorded fingerprint, is refused unless ``adopt=True``.
    Returns ``{vmid, node, type, snapname, upid}``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_create 150 before-upgrade description='pre 13.2'
    """
    from salt_proxmox.backup import adhoc

    return adhoc.create(ctx, _guests(), vmid, snapname, node, description, vmstate, adopt)


def snapshot_delete(
    ctx: PveContext, vmid: object, snapname: str, node: str | None = None, adopt: bool = False
) -> dict:
    """
    Delete snapshot ``snapname`` of a guest this minion owns (a PVE task; never forced). Ownership as
    ``proxmox.snapshot_create``. Returns ``{vmid, node, type, snapname, upid}``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_delete 150 before-upgrade
    """
    from salt_proxmox.backup import adhoc

    return adhoc.delete(ctx, _guests(), vmid, snapname, node, adopt)


def snapshot_rollback(
    ctx: PveContext,
    vmid: object,
    snapname: str,
    node: str | None = None,
    adopt: bool = False,
    test: bool = False,
) -> dict:
    """
    Roll a guest this minion owns back to snapshot ``snapname`` (a PVE task), saying what it discards:
    ``discards: {config: {key: {old, new}}, later_snapshots: [...]}``. With ``test=True`` only that is
    returned and nothing is sent. Ownership as ``proxmox.snapshot_create``. Returns ``{vmid, node,
    type, snapname, discards, upid}``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_rollback 150 before-upgrade test=True
        salt-call proxmox.snapshot_rollback 150 before-upgrade
    """
    from salt_proxmox.backup import adhoc

    return adhoc.rollback(ctx, _guests(), vmid, snapname, node, adopt, boolean("test", test))


#: The calls the ``proxmox`` execution module generates, in the order ``sys.doc`` lists them.
CALLS: tuple[Callable[..., object], ...] = (
    cluster_resources,
    task_status,
    guests,
    guest_status,
    guest_start,
    guest_shutdown,
    guest_stop,
    guest_reboot,
    realm_sync,
    backup_coverage,
    snapshot_list,
    snapshot_create,
    snapshot_delete,
    snapshot_rollback,
)


def signature(function: Callable[..., object]) -> inspect.Signature:
    """The execution function's signature of operator call ``function``: its own without ``ctx``, with
    ``target=None`` after its named parameters (before a ``**options``)."""
    params = list(inspect.signature(function).parameters.values())[1:]
    named = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    rest = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    target = inspect.Parameter("target", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
    return inspect.Signature([*named, target, *rest])


def bind(function: Callable[..., object], args: tuple, kwargs: dict) -> tuple[object, dict]:
    """``(target, keyword arguments)`` of one execution-function call of ``function``: ``args`` and
    ``kwargs`` bound to ``signature(function)``, Salt's own ``__``-prefixed keys dropped first. Raises
    TypeError for arguments the call does not take, naming them as Python does."""
    given = {key: value for key, value in kwargs.items() if not str(key).startswith("__")}
    bound = signature(function).bind(*args, **given)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    target = arguments.pop("target")
    for param in inspect.signature(function).parameters.values():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(arguments.pop(param.name, {}))
    return target, arguments
