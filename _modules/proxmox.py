"""Execution module ``proxmox``: reads and writes of a Proxmox VE cluster, for states and ad-hoc use.

Targets are read with ``config.get('proxmox:targets')`` (minion config or pillar); OpenBao with
``config.get('openbao')``. Ownership rows go to the grain ``salt_proxmox:owned``, or to the JSON
file ``config.get('proxmox:ownership_file')`` names when set — what salt-ssh needs, because a
salt-ssh target keeps its grains in the thin directory, which salt-ssh deletes on every redeploy.
The logic lives in the ``salt_proxmox`` library; this module only translates Salt's world (opts,
pillar, grains, ``__context__``) into library calls.

:depends: salt_proxmox, requests, hvac
"""

import logging

log = logging.getLogger(__name__)

__virtualname__ = "proxmox"

try:
    from salt_proxmox import runtime
    from salt_proxmox.errors import SaltProxmoxError
    from salt_proxmox.lxc import lifecycle
    from salt_proxmox.lxc.judge import stored_config
    from salt_proxmox.ownership import FileStore
    from salt_proxmox.pve.client import api_path

    HAS_LIBS = True
except ImportError as exc:  # pragma: no cover - reported through __virtual__
    HAS_LIBS = False
    IMPORT_ERROR = str(exc)

GRAIN = "salt_proxmox"


def __virtual__():
    if not HAS_LIBS:
        return False, f"proxmox: the salt_proxmox library is not importable ({IMPORT_ERROR})"
    return __virtualname__


class _GrainsStore:
    """Ownership rows in the ``salt_proxmox:owned`` grain (written with ``grains.setval``)."""

    def load(self):
        value = __salt__["grains.get"](GRAIN, {})
        owned = value.get("owned") if isinstance(value, dict) else None
        return dict(owned) if isinstance(owned, dict) else {}

    def save(self, rows):
        value = __salt__["grains.get"](GRAIN, {})
        value = dict(value) if isinstance(value, dict) else {}
        value["owned"] = rows
        __salt__["grains.setval"](GRAIN, value)


def _ownership_store():
    """The grain, or the file ``proxmox:ownership_file`` names (minion config, roster
    ``minion_opts`` or pillar)."""
    path = __salt__["config.get"]("proxmox:ownership_file", None)
    return FileStore(path) if path else _GrainsStore()


def _context(target=None):
    from salt.exceptions import CommandExecutionError

    try:
        return runtime.context_for(
            __salt__["config.get"]("proxmox:targets", {}),
            target,
            __salt__["config.get"]("openbao", None),
            __context__,
            _ownership_store(),
        )
    except SaltProxmoxError as exc:
        raise CommandExecutionError(str(exc)) from None


def _call(fun, *args, **kwargs):
    from salt.exceptions import CommandExecutionError

    try:
        return fun(*args, **kwargs)
    except SaltProxmoxError as exc:
        raise CommandExecutionError(str(exc)) from None


def lxc_config(node, vmid, target=None):
    """
    The config of one container, without description, digest, lock, env or raw ``lxc`` values.
    Returns ``None`` when the cluster proves the vmid absent; fails on any other error.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_config node=pve1 vmid=150 target=homelab
    """
    ctx = _context(target)
    live = _call(lifecycle.read_live, ctx, node, int(vmid))
    return None if live is None else stored_config(live)


def cluster_resources(type="vm", target=None):
    """
    ``GET /cluster/resources`` with the read credential: a list of rows (vmid, node, type, status, ...).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.cluster_resources type=vm target=homelab
    """
    ctx = _context(target)
    return _call(ctx.client.request, "GET", "cluster/resources", ctx.broker.read(), params={"type": type})


def task_status(node, upid, target=None):
    """
    The status of a task, read with the read credential (PVE needs Sys.Audit on the node for a
    task another token started).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.task_status node=pve1 upid='UPID:pve1:...'
    """
    ctx = _context(target)
    path = f"{api_path('nodes', node, 'tasks', upid)}/status"
    return _call(ctx.client.request, "GET", path, ctx.broker.read())


def lxc_present(name, test=False, target=None, **declared):
    """
    Plan (``test=True``) or apply one container declaration; returns a state return dict.
    This is what the ``proxmox_lxc.present`` state calls.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_present web test=True vmid=150 node=pve1 memory=1024
    """
    declared = {k: v for k, v in declared.items() if not k.startswith("__")}
    try:
        ctx = _context(target)
    except Exception as exc:
        return {"name": name, "result": False, "changes": {}, "comment": f"Refused: {exc}"}
    return lifecycle.present(ctx, name, bool(test), **declared).salt_return(name)


def lxc_absent(name, vmid, node, test=False, target=None, removal="retain"):
    """
    Retain (forget ownership) or destroy (``removal=destroy``) one container; returns a state
    return dict. This is what the ``proxmox_lxc.absent`` state calls.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_absent web vmid=150 node=pve1 test=True
    """
    try:
        ctx = _context(target)
    except Exception as exc:
        return {"name": name, "result": False, "changes": {}, "comment": f"Refused: {exc}"}
    return lifecycle.absent(ctx, name, bool(test), vmid=vmid, node=node, removal=removal).salt_return(name)


def lxc_create(node, vmid, ostemplate, target=None, **config):
    """
    Create a container (``POST /nodes/{node}/lxc``) after proving the vmid free, wait for the
    task with the credential that started it, read it back and record it as ours. The same rules
    as the ``proxmox_lxc.present`` state apply; returns its state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_create node=pve1 vmid=151 \\
            ostemplate=local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst \\
            rootfs=local-zfs:8 unprivileged=1 hostname=ct151
    """
    return _adhoc(target, vmid, dict(config, node=node, ostemplate=ostemplate))


def lxc_update(node, vmid, target=None, **config):
    """
    Write config keys to a container this minion owns: one digest-guarded PUT, then a resize
    task per grown disk, then a read-back. The keys merge over its recorded declaration.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_update node=pve1 vmid=150 memory=2048
    """
    return _adhoc(target, vmid, dict(config, node=node))


def _adhoc(target, vmid, config):
    from salt.exceptions import CommandExecutionError

    ctx = _context(target)
    config = {k: v for k, v in config.items() if not k.startswith("__")}
    state_id, declared = _call(lifecycle.adhoc_declaration, ctx, vmid, config)
    ret = lifecycle.present(ctx, state_id, False, **declared).salt_return(state_id)
    if ret["result"] is False:
        raise CommandExecutionError(ret["comment"])
    return ret


def lxc_resize(node, vmid, disk, size, target=None):
    """
    Grow one mount point (``PUT /nodes/{node}/lxc/{vmid}/resize``) and wait for the task.
    ``size`` as PVE takes it: ``+2G`` or an absolute ``12G``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_resize node=pve1 vmid=150 disk=rootfs size=+2G
    """
    from salt_proxmox.lxc import schema
    from salt_proxmox.pve.constraints import check_form

    ctx = _context(target)
    form = {"disk": str(disk), "size": str(size)}
    _call(check_form, schema.RESIZE, form, True)
    path = f"{lifecycle.guest_path(node, int(vmid))}/resize"
    upid = _call(ctx.task, "PUT", path, node, f"grow {disk} of CT {vmid} to {size}", form)
    return {"upid": upid, "disk": disk, "size": size}
