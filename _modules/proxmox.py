"""Execution module ``proxmox``: reads and writes of a Proxmox VE cluster, for states and ad-hoc use.

Targets are read with ``config.get('proxmox:targets')`` (minion config or pillar); OpenBao with
``config.get('openbao')``. Ownership rows go to ``salt_proxmox_owned.json`` beside the grains file,
shown as the grain ``salt_proxmox:owned``, or to the JSON file
``config.get('proxmox:ownership_file')`` names when set — what salt-ssh needs, because a
salt-ssh target keeps its grains in the thin directory, which salt-ssh deletes on every redeploy.
The logic lives in the ``salt_proxmox`` library; this module only translates Salt's world (opts,
pillar, grains, ``__context__``) into library calls.

:depends: salt_proxmox, requests, hvac
"""

__virtualname__ = "proxmox"

#: ``salt-call proxmox.owned`` prints a table by default; ``--out=json`` gives the data.
__outputter__ = {"owned": "proxmox_owned"}

try:
    from salt_proxmox.errors import SaltProxmoxError, boolean
    from salt_proxmox.guest import adhoc as guest_adhoc
    from salt_proxmox.guest import ha_owned as guest_ha_owned
    from salt_proxmox.guest import lifecycle as guest_lifecycle
    from salt_proxmox.guest import live as guest_live
    from salt_proxmox.lxc import schema as lxc_schema
    from salt_proxmox.lxc.family import LXC
    from salt_proxmox.pve.client import api_path
    from salt_proxmox.pve.constraints import vmid_number
    from salt_proxmox.qemu import schema as qemu_schema
    from salt_proxmox.qemu.family import QEMU
    from salt_proxmox.run import config as run_config
    from salt_proxmox.run import overlap
    from salt_proxmox.run.config import declared_keys, refused_return

    HAS_LIBS = True
except ImportError as exc:  # pragma: no cover - reported through __virtual__
    HAS_LIBS = False
    IMPORT_ERROR = str(exc)


def __virtual__():
    if not HAS_LIBS:
        return False, f"proxmox: the salt_proxmox library is not importable ({IMPORT_ERROR})"
    return __virtualname__


def _store(funcs=None):
    import salt.utils.platform

    return run_config.salt_store(
        funcs if funcs is not None else __salt__,
        __opts__,
        __context__,
        __grains__,
        salt.utils.platform.is_proxy(),
    )


def _context(target=None, funcs=None):
    funcs = funcs if funcs is not None else __salt__
    return _call(
        run_config.context_for,
        funcs["config.get"]("proxmox:targets", {}),
        target,
        funcs["config.get"]("openbao", None),
        __context__,
        _store(funcs),
        overlap.slots_dir(__opts__.get("cachedir")),
    )


def _pbs_context(target=None, funcs=None):
    """The context of a ``proxmox:pbs_targets`` entry (``salt_proxmox.pbs.context``)."""
    from salt_proxmox.pbs.context import pbs_context_for

    funcs = funcs if funcs is not None else __salt__
    return _call(
        pbs_context_for,
        funcs["config.get"]("proxmox:pbs_targets", {}),
        target,
        funcs["config.get"]("openbao", None),
        __context__,
        _store(funcs),
    )


def _state(name, target, fun, /, *args, run=None, twins=None, ahead=None, targets_of=None, **kwargs):
    """The state return of ``fun(ctx, *args, **kwargs)`` (a library plan/apply returning an
    Outcome), or a refusal when the target's context cannot be built or, with ``twins``
    (``(state modules, keys_of(chunk, default_target))``), when another state of the run declares
    the same object. ``run``: the call's keyword arguments, holding the state run the skin passed
    through (``__lowstate__``, ``__low__``, ``__instance_id__``; none outside a state run): every state
    enters its run here (``run_config.enter_run``), so what one run learned never serves another.
    ``ahead``: the family's ``read_ahead``, handed the run's declarations of the first state module in
    ``twins`` before the first of them runs. ``targets_of``: the section the target is configured in,
    ``proxmox:pbs_targets`` for a PBS family (default ``proxmox:targets``). The return carries the
    ``target`` (cluster) it ran against, which the ``proxmox_plan`` outputter names. Within a run,
    configuration is read once (``run_config.salt_for_run``)."""
    funcs = run_config.salt_for_run(__salt__, run, __context__)
    section = targets_of or "proxmox:targets"
    try:
        ctx = (_pbs_context if targets_of else _context)(target, funcs)
    except Exception as exc:
        return refused_return(name, exc)
    entered = run_config.enter_run(ctx, run or {}, __context__)
    if fun is guest_lifecycle.present or getattr(args[0] if args else None, "family", None) in (
        "ha_resource",
        "ha_rule",
    ):
        # What the run declares about HA: a guest's status yields to its HA resource, an HA resource
        # needs its guest, a rule its resources (salt_proxmox.guest.ha_owned).
        default = run_config.default_target(funcs["config.get"]("proxmox:targets", {}))
        guest_ha_owned.remember_run(ctx, entered, default)
    if twins is not None:
        states, keys_of = twins
        default = run_config.default_target(funcs["config.get"](section, {}))
        refused = run_config.twins_return(
            name, run or {}, states, lambda chunk: keys_of(chunk, default), __context__
        )
        if refused is not None:
            return refused
        if ahead is not None:
            run_config.read_ahead(ctx, run or {}, states[0], default, ahead, __context__)
    ret = run_config.outcome_return(name, fun, ctx, *args, **kwargs)
    # The cluster it ran against, so that output from many minions (one per cluster) can name it.
    ret["target"] = ctx.target.name
    return _note_undeclared(ret, entered, ctx, funcs)


def _note_undeclared(ret, run, ctx, funcs):
    """``ret`` with, on the first state of a run, the note of owned objects the run no longer declares
    (``salt_proxmox.owned.declared``): comment lines, and the same lines as run ``notes``, which the
    ``proxmox_plan`` outputter prints once. Never a write; a row file that cannot be read notes
    nothing (the state that needs a row says so)."""
    from salt_proxmox.owned import declared

    default = run_config.default_target(funcs["config.get"]("proxmox:targets", {}))
    pbs_default = run_config.default_target(funcs["config.get"]("proxmox:pbs_targets", {}) or {})
    try:
        notes = declared.undeclared_once(run, __context__, ctx.ownership.store.load, default, pbs_default)
    except SaltProxmoxError:
        return ret
    if notes:
        ret["comment"] = "\n".join([ret["comment"], *notes]) if ret.get("comment") else "\n".join(notes)
        ret["notes"] = [*(ret.get("notes") or []), *notes]
    return ret


def _call(fun, *args, **kwargs):
    from salt.exceptions import CommandExecutionError

    try:
        return fun(*args, **kwargs)
    except SaltProxmoxError as exc:
        raise CommandExecutionError(str(exc)) from None


def _switch(key, value):
    """``value`` of the boolean argument ``key`` (``salt_proxmox.errors.boolean``: true or false,
    never a string or a number), else CommandExecutionError naming it, before any request."""
    return _call(boolean, key, value)


def run_state(dunders, fun, arguments):
    """
    What every state function of this project calls, and nothing else: state function ``fun`` of the
    state module whose namespace is ``dunders`` (its ``globals()``, holding Salt's ``__low__``,
    ``__lowstate__``, ``__instance_id__``, ``__opts__``, ``__env__``), with ``arguments`` (its
    ``locals()``), run through the family's execution-module function (``salt_proxmox.run.skin``,
    ``salt_proxmox.registry``). Returns that state return; a declared key the skin sets itself is
    refused by name. Not for the command line: call the family's own function
    (``proxmox.pool_present``, ``openbao.policy_present``, ...).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.pool_present prod test=True   # what proxmox_pool.present runs
    """
    from salt_proxmox.run import skin

    name = arguments.get("name")
    try:
        function, kwargs = skin.state_call(dunders, fun, arguments)
    except (SaltProxmoxError, LookupError) as exc:
        return refused_return(name, exc)
    if function not in __salt__:
        return refused_return(name, LookupError(f"{function} is not available on this minion"))
    return run_config.run_with_grain(
        __salt__,
        __opts__,
        __context__,
        dunders,
        _store,
        lambda: __grains__,
        lambda: __salt__[function](**kwargs),
    )


def lxc_config(vmid, node=None, target=None):
    """
    The config of one container with its pending changes merged in (what it runs with after its
    next start, as ``pct config`` shows it), description included; without digest, lock, env or raw
    ``lxc`` values. ``node`` defaults to the one the cluster's guest index lists. Fails with a
    sentence when no container holds ``vmid``, and on any other error.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_config vmid=150
        salt-call proxmox.lxc_config vmid=150 node=pve1 target=homelab
    """
    ctx = _context(target)
    return _call(guest_live.operator_config, ctx, LXC, _call(vmid_number, vmid), node)


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


def _pillar_secrets(name, secrets, declared, secrets_pillar):
    """``(secrets read, refusal)``: the keys of ``secrets`` (a family's ``schema.SECRETS``) that the
    pillar mapping at ``secrets_pillar`` holds (a colon-delimited path, or a list of keys, read with
    Salt's ``traverse_dict_and_list``), and None; or ``({}, a refused state return)`` when a secret is
    one of the state's own arguments (``declared["__low__"]``: Salt keeps a state's arguments in
    ``highstate.cache.p`` in its cachedir and in the lowstate every state is handed), is given twice,
    or the path holds no mapping. The values never appear in a message."""
    from collections.abc import Mapping

    import salt.utils.data

    from salt_proxmox.errors import DeclarationError

    problem = None
    low = declared.get("__low__") or {}
    passed = sorted(key for key in secrets if key in low)
    path = secrets_pillar
    if passed:
        problem = (
            f"{', '.join(passed)}: a secret is never a state argument (Salt keeps those in highstate.cache.p "
            "in its cachedir): declare it in pillar and give the state secrets_pillar, the pillar path of "
            "the mapping holding it, as the proxmox formula does"
        )
    elif path is None:
        return {}, None
    elif not (isinstance(path, str) and path) and not (
        isinstance(path, list) and path and all(isinstance(part, str) for part in path)
    ):
        problem = "secrets_pillar: expected a pillar path (proxmox:lxc:web) or a list of its keys"
    else:
        entry = salt.utils.data.traverse_dict_and_list(__pillar__, path, default=None)
        shown = path if isinstance(path, str) else ":".join(path)
        twice = sorted(
            key for key in secrets if key in declared and isinstance(entry, Mapping) and key in entry
        )
        if not isinstance(entry, Mapping):
            problem = f"secrets_pillar: pillar {shown} holds no mapping"
        elif twice:
            problem = f"{', '.join(twice)}: given both as an argument and in pillar {shown}"
        else:
            return {key: entry[key] for key in sorted(secrets) if key in entry}, None
    return {}, refused_return(name, DeclarationError(problem))


def lxc_present(name, test=False, target=None, secrets_pillar=None, **declared):
    """
    Plan (``test=True``) or apply one container declaration; returns a state return dict.
    This is what the ``proxmox_lxc.present`` state calls. ``secrets_pillar``: the pillar path of
    the mapping holding its ``password`` (``_pillar_secrets``): a state passing ``password`` itself
    is refused.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_present web test=True vmid=150 node=pve1 memory=1024
    """
    secrets, refused = _pillar_secrets(name, lxc_schema.SECRETS, declared, secrets_pillar)
    if refused is not None:
        return refused
    return _state(
        name,
        target,
        guest_lifecycle.present,
        LXC,
        name,
        _switch("test", test),
        run=declared,
        twins=((LXC.state,), _lxc_keys),
        ahead=_lxc_ahead,
        **declared_keys(declared),
        **secrets,
    )


def lxc_absent(name, vmid, node, test=False, target=None, removal="retain", **run):
    """
    Retain (forget ownership) or destroy (``removal=destroy``) one container; returns a state
    return dict. This is what the ``proxmox_lxc.absent`` state calls.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_absent web vmid=150 node=pve1 test=True
    """
    twins = ((LXC.state,), _lxc_keys)
    return _guest_absent(
        name, target, guest_lifecycle.absent, (LXC,), test, run, twins, vmid=vmid, node=node, removal=removal
    )


def _guest_absent(name, target, fun, family, test, run, twins, **absent):
    """``fun(ctx, *family, name, test, **absent)`` as a state return, refused when the call's other
    arguments (``run``) hold a key ``absent`` does not take."""
    from salt_proxmox.errors import DeclarationError

    unknown = declared_keys(run)
    if unknown:
        return refused_return(
            name,
            DeclarationError(
                f"unknown key(s) {', '.join(sorted(unknown))}: absent takes vmid, node, removal"
            ),
        )
    return _state(name, target, fun, *family, name, _switch("test", test), run=run, twins=twins, **absent)


def _lxc_keys(chunk, default_target):
    return guest_live.chunk_keys(LXC, chunk, default_target)


def _lxc_ahead(ctx, declarations):
    return guest_live.read_ahead(ctx, LXC, declarations)


def _qemu_keys(chunk, default_target):
    return guest_live.chunk_keys(QEMU, chunk, default_target)


def _qemu_ahead(ctx, declarations):
    return guest_live.read_ahead(ctx, QEMU, declarations)


def qemu_present(name, test=False, target=None, secrets_pillar=None, **declared):
    """
    Plan (``test=True``) or apply one VM declaration; returns a state return dict. This is what the
    ``proxmox_qemu.present`` state calls. ``name`` is the state's name and the VM's PVE ``name`` (a
    DNS name, as ``qm set --name`` takes it); with ``name_from_id=True`` it is only the state id (the
    formula's entry declares no ``name``): a create names the VM so and says it in the plan, a live
    VM keeps its own name. ``secrets_pillar``: the pillar path of the mapping
    holding its ``cipassword`` (``_pillar_secrets``): a state passing ``cipassword``
    itself is refused.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.qemu_present web test=True vmid=150 node=pve1 memory=2048 \\
            scsi0=local-lvm:32 net0=virtio,bridge=vmbr0
        salt-call proxmox.qemu_present app vmid=151 node=pve1 clone=9000 full=True cores=2
    """
    secrets, refused = _pillar_secrets(name, qemu_schema.SECRETS, declared, secrets_pillar)
    if refused is not None:
        return refused
    return _state(
        name,
        target,
        guest_lifecycle.present,
        QEMU,
        name,
        _switch("test", test),
        run=declared,
        twins=((QEMU.state,), _qemu_keys),
        ahead=_qemu_ahead,
        **{**declared_keys(declared), **secrets, **_vm_name(name, declared)},
    )


def _vm_name(name, declared):
    """The VM's ``name`` config key: the state's ``name``, unless ``name_from_id`` says it is only the
    state id (then the declaration names none, and the judge names a create after the state id)."""
    return {} if declared.get("name_from_id") is True else {"name": name}


def qemu_absent(name, vmid, node, test=False, target=None, removal="retain", **run):
    """
    Retain (forget ownership) or destroy (``removal=destroy``) one VM; returns a state return dict.
    This is what the ``proxmox_qemu.absent`` state calls.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.qemu_absent web vmid=150 node=pve1 test=True
    """
    twins = ((QEMU.state,), _qemu_keys)
    return _guest_absent(
        name, target, guest_lifecycle.absent, (QEMU,), test, run, twins, vmid=vmid, node=node, removal=removal
    )


def qemu_config(vmid, node=None, target=None):
    """
    The config of one VM with its pending changes merged in (what it runs with after its next start,
    as ``qm config`` shows it): ``sshkeys`` decoded, ``cipassword`` only as ``set``, no digest. ``node``
    defaults to the one the cluster's guest index lists. Fails with a sentence when no VM holds
    ``vmid``, and on any other error.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.qemu_config vmid=150
    """
    ctx = _context(target)
    return _call(guest_live.operator_config, ctx, QEMU, _call(vmid_number, vmid), node)


def lxc_create(node, vmid, ostemplate, target=None, **config):
    """
    Create a container (``POST /nodes/{node}/lxc``) after proving the vmid free, wait for the
    task with the credential that started it, read it back and record it as ours. The same rules
    as the ``proxmox_lxc.present`` state apply; returns its state return dict. ``rootfs``/``mpN``
    as new ``storage:GiB`` volumes only. Raises CommandExecutionError with the state's comment when
    it is refused or fails (nothing half-recorded).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_create node=pve1 vmid=151 \\
            ostemplate=local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst \\
            rootfs=local-zfs:8 unprivileged=1 hostname=ct151
    """
    return _adhoc(LXC, target, vmid, dict(config, node=node, ostemplate=ostemplate))


def lxc_update(node, vmid, target=None, **config):
    """
    Write config keys to a container this minion owns: one digest-guarded PUT, then a resize
    task per grown disk, then a read-back. The keys merge over its recorded declaration. Raises
    CommandExecutionError with the state's comment when it is refused or fails.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_update node=pve1 vmid=150 memory=2048
    """
    return _adhoc(LXC, target, vmid, dict(config, node=node))


def lxc_resize(node, vmid, disk, size, target=None):
    """
    Grow one mount point (``PUT /nodes/{node}/lxc/{vmid}/resize``) of a container this minion
    owns and wait for the task. ``size`` as PVE takes it (pve-container ``src/PVE/API2/LXC.pm``
    ``resize_vm``: a number with an optional binary unit K, M, G or T, a bare number bytes):
    ``+2G`` to grow by, or an absolute ``12G``. Returns ``{upid, disk, size}``. A guest this
    minion did not create is refused, as ``proxmox.lxc_update`` refuses it: raises
    CommandExecutionError with the reason.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_resize node=pve1 vmid=150 disk=rootfs size=+2G
    """
    return _resize(LXC, target, node, vmid, disk, size)


def qemu_create(node, vmid, target=None, **config):
    """
    Create a VM (``POST /nodes/{node}/qemu``, or by ``clone=<template vmid>`` its ``…/clone``) after
    proving the vmid free, wait for the task with the credential that started it, read it back and
    record it as ours. The same rules as the ``proxmox_qemu.present`` state apply; returns its state
    return dict. Disks as new ``storage:GiB`` volumes only; ``name`` is the VM's PVE name (none when
    not given). Raises CommandExecutionError with the state's comment when it is refused or fails
    (nothing half-recorded).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.qemu_create node=pve1 vmid=160 name=app memory=2048 \\
            scsi0=local-lvm:32 net0=virtio,bridge=vmbr0
        salt-call proxmox.qemu_create node=pve1 vmid=161 clone=9000 full=True cores=2
    """
    return _adhoc(QEMU, target, vmid, dict(config, node=node))


def qemu_update(node, vmid, target=None, **config):
    """
    Write config keys to a VM this minion owns: one digest-guarded ``POST …/config`` task, then a
    resize task per grown disk, then a read-back. The keys merge over its recorded declaration, so
    a key not given keeps its declared value. A VM this minion did not create (no ``owned`` row),
    or one at a recycled vmid (not carrying the row's fingerprint), is refused. Raises
    CommandExecutionError with the state's comment when it is refused or fails.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.qemu_update node=pve1 vmid=150 memory=4096 cores=4
    """
    return _adhoc(QEMU, target, vmid, dict(config, node=node))


def qemu_resize(node, vmid, disk, size, target=None):
    """
    Grow one disk (``PUT /nodes/{node}/qemu/{vmid}/resize``) of a VM this minion owns and wait for
    the task. ``size`` as PVE takes it (qemu-server ``PVE/API2/Qemu.pm`` ``resize_vm``: a number
    with an optional binary unit K, M, G or T, a bare number bytes): ``+2G`` to grow by, or an
    absolute ``40G``. Returns ``{upid, disk, size}``. A VM this minion did not create, or one that
    does not carry its row's fingerprint, is refused, as ``proxmox.qemu_update`` refuses it: raises
    CommandExecutionError with the reason.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.qemu_resize node=pve1 vmid=150 disk=scsi0 size=+8G
    """
    return _resize(QEMU, target, node, vmid, disk, size)


def _adhoc(family, target, vmid, config):
    """The ad-hoc create or update of guest ``vmid`` of ``family``: ``config`` merged over the row's
    recorded declaration (``guest.adhoc.adhoc_declaration``), planned and applied as its state would
    be, with the same ownership and fingerprint checks; the state return, or CommandExecutionError
    with its comment when it is refused or fails."""
    from salt.exceptions import CommandExecutionError

    ctx = _context(target)
    state_id, declared = _call(guest_adhoc.adhoc_declaration, ctx, family, vmid, declared_keys(config))
    ret = guest_lifecycle.present(ctx, family, state_id, False, **declared).salt_return(state_id)
    if ret["result"] is False:
        raise CommandExecutionError(ret["comment"])
    return ret


def _resize(family, target, node, vmid, disk, size):
    ctx = _context(target)
    upid = _call(guest_adhoc.resize, ctx, family, node, vmid, disk, size)
    return {"upid": upid, "disk": disk, "size": size}


# ----------------------------------------------------------------------------- guests, both families
#
# Power calls and the guest list serve containers and VMs alike (salt_proxmox.guest.power); each
# finds the guest's node and type in the cluster's guest index.


def guests(target=None):
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

    return _call(power.guest_rows, _context(target))


def guest_status(vmid, node=None, target=None):
    """
    The power state of one guest (container or VM): ``{vmid, node, type, status}``, the status from
    ``GET /nodes/{node}/{lxc|qemu}/{vmid}/status/current``. ``node`` defaults to the one the
    cluster's guest index lists; a ``node`` it is not on is refused.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_status vmid=150
    """
    from salt_proxmox.guest import power

    return _call(power.status_of, _context(target), vmid, node)


def _power(call, vmid, node, target, adopt, timeout=None, force_stop=False):
    from salt_proxmox.guest import power
    from salt_proxmox.registry import guests

    ctx = _context(target)
    return _call(power.power_call, ctx, guests(), call, vmid, node, adopt, timeout, force_stop)


def guest_start(vmid, node=None, target=None, adopt=False):
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
    return _power("start", vmid, node, target, adopt)


def guest_shutdown(vmid, node=None, target=None, adopt=False, timeout=None, force_stop=False):
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
    return _power("shutdown", vmid, node, target, adopt, timeout, force_stop)


def guest_stop(vmid, node=None, target=None, adopt=False):
    """
    Stop a running guest this minion owns at once (``POST …/status/stop``: PVE's hard stop, like
    pulling the plug; prefer ``proxmox.guest_shutdown``). Ownership as ``proxmox.guest_start``; a
    stopped guest is left alone.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_stop vmid=150
    """
    return _power("stop", vmid, node, target, adopt)


def guest_reboot(vmid, node=None, target=None, adopt=False, timeout=None):
    """
    Reboot a running guest this minion owns (``POST …/status/reboot``: a shutdown, then a start,
    which makes pending changes live); ``timeout`` bounds the shutdown in seconds. A stopped guest
    is refused (nothing sent). Ownership as ``proxmox.guest_start``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.guest_reboot vmid=150
    """
    return _power("reboot", vmid, node, target, adopt, timeout)


# ----------------------------------------------------------------------------- simple objects
#
# Firewall aliases, pools, roles and ACL entries share one lifecycle (salt_proxmox.simple); the
# functions below only pick the family, the context and Salt's ``test`` flag.


def _families():
    """``{kind: ObjectSpec}`` of every kind of object the simple lifecycle runs
    (``salt_proxmox.registry``)."""
    from salt_proxmox.registry import FAMILIES

    return {kind.name: kind.load() for family in FAMILIES for kind in family.kinds if kind.spec}


def _object_twins(family):
    """What ``_state`` needs to refuse a second declaration of one object of kind ``family`` in a run:
    ``(state modules, keys_of(chunk, default_target))``.

    The run keys every chunk of a state module once, with one function: so a module holding several
    kinds (``proxmox_sdn``: zones, vnets, subnets) keys each chunk by the kind its function declares
    (``registry.Family.kind_of``); an apply declares none."""
    from salt_proxmox.registry import family_declaring
    from salt_proxmox.simple import lifecycle as simple

    families = _families()
    declaring = family_declaring(family)

    def keys_of(chunk, default):
        kind = declaring.kind_of(chunk.fun) if chunk.state == declaring.state else None
        if kind is None:
            return frozenset()
        if kind.keys is not None:  # a kind the simple lifecycle does not run (a firewall rule list)
            return kind.row_keys(chunk, default)
        return simple.chunk_keys(families[kind.name], chunk, default)

    return (declaring.state,), keys_of


def _object_present(family, name, test, target, state_id, declared, secrets=None):
    """``secrets``: values read from pillar (``_pillar_secrets``), handed to the declaration beside the
    state's arguments, never among them."""
    from salt_proxmox.network import apply
    from salt_proxmox.simple import lifecycle as simple

    spec = _families()[family]
    present = apply.present if family in apply.STAGING else simple.present
    return _state(
        name,
        target,
        present,
        spec,
        _switch("test", test),
        state_id or name,
        run=declared,
        twins=_object_twins(family),
        **declared_keys(declared),
        **(secrets or {}),
    )


def _object_absent(family, name, test, target, state_id, removal, names):
    from salt_proxmox.network import apply
    from salt_proxmox.simple import lifecycle as simple

    spec = _families()[family]
    return _state(
        name,
        target,
        apply.absent if family in apply.STAGING else simple.absent,
        spec,
        _switch("test", test),
        state_id or name,
        removal,
        run=names,
        twins=_object_twins(family),
        **declared_keys(names),
    )


def _object_get(family, target, names):
    from salt_proxmox.simple import lifecycle as simple

    ctx = _context(target)
    spec = _families()[family]
    probe = _call(spec.identify, "adhoc", ctx.target.name, **names)
    return _call(simple.read, ctx, spec, probe)


def storage_get(name, target=None):
    """
    One storage definition as its ``GET /storage`` row: its canonical options, ``type`` and
    ``digest``; never a secret (PVE does not list them). ``None`` only when the read credential, which
    holds Datastore.Audit on ``/storage/<name>``, is not shown it.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.storage_get backups
    """
    return _object_get("storage", target, {"name": name})


def storage_present(
    name, type=None, test=False, target=None, adopt=False, state_id=None, secrets_pillar=None, **extra
):
    """
    Plan or apply one storage definition (storage id ``name``, ``type``, the type's options as the
    API spells them); returns a state return dict. ``secrets_pillar``: the pillar path of the mapping
    holding its ``password``/``keyring``/``encryption-key``/``master-pubkey`` (``_pillar_secrets``): a
    state passing one itself is refused; they are written at create and when ``secret_serial`` changes.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.storage_present backups type=nfs server=192.0.2.20 export=/export/pve test=True
    """
    from salt_proxmox.errors import DeclarationError
    from salt_proxmox.simple import lifecycle as simple
    from salt_proxmox.storage.objects import target_problem
    from salt_proxmox.storage.types import LEGACY_SENSITIVE

    problem = target_problem(type, target)
    if problem:
        return refused_return(name, DeclarationError(problem))
    secrets, refused = _pillar_secrets(name, LEGACY_SENSITIVE, extra, secrets_pillar)
    if refused is not None:
        return refused
    if extra.get("pbs_target") is not None:
        return _wired_storage(name, type, test, target, adopt, state_id, secrets, extra)
    return _state(
        name,
        target,
        simple.present,
        _families()["storage"],
        _switch("test", test),
        state_id or name,
        run=extra,
        twins=_object_twins("storage"),
        **declared_keys(dict(extra, name=name, type=type, adopt=adopt)),
        **secrets,
    )


def _wired_storage(name, type, test, target, adopt, state_id, secrets, extra):
    """``storage_present`` of a ``pbs`` storage wired to a PBS target (``salt_proxmox.pbs.wiring``)."""
    from salt_proxmox.pbs import wiring

    wired = {key: extra.pop(key) for key in wiring.KEYS if key in extra}
    funcs = run_config.salt_for_run(__salt__, extra, __context__)
    try:
        pbs = _pbs_context(wired["pbs_target"], funcs)
    except Exception as exc:
        return refused_return(name, exc)
    run_config.enter_run(pbs, extra, __context__)
    return _state(
        name,
        target,
        wiring.present,
        pbs,
        _families()["storage"],
        _switch("test", test),
        state_id or name,
        wired,
        run=extra,
        twins=_object_twins("storage"),
        **declared_keys(dict(extra, name=name, type=type, adopt=adopt)),
        **secrets,
    )


def storage_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a storage definition: ``removal=retain`` (default) forgets it, ``removal=destroy``
    deletes an owned, unchanged definition no guest has a volume on; its data is never removed.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.storage_absent old removal=destroy test=True
    """
    return _object_absent("storage", name, test, target, state_id, removal, dict(extra, name=name))


def firewall_alias_get(name, target=None, scope=None):
    """
    One firewall alias, the cluster's or (``scope=vm/<vmid>|ct/<vmid>``) a guest's, as this module
    compares it: ``{name, cidr, comment}`` (cidr without a /32 or /128, comment trimmed). Returns
    ``None`` only for PVE's exact "no such alias" answer; fails on any other error.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_alias_get web_hosts target=homelab
        salt-call proxmox.firewall_alias_get web_hosts scope=vm/510
    """
    return _object_get("firewall_alias", target, {"name": name, "scope": scope})


def firewall_alias_present(
    name, cidr, comment=None, test=False, target=None, adopt=False, rename_from=None, state_id=None, **extra
):
    """
    Plan (``test=True``) or apply one cluster firewall alias; returns a state return dict. This
    is what the ``proxmox_firewall_alias.present`` state calls. ``rename_from`` names the alias's
    old name: the new alias is created first, the old one deleted after.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_alias_present web_hosts cidr=10.0.0.0/24 comment='web tier' test=True
    """
    from salt_proxmox.firewall import lifecycle as alias_lifecycle

    return _state(
        name,
        target,
        alias_lifecycle.present,
        _switch("test", test),
        state_id or name,
        run=extra,
        twins=_object_twins("firewall_alias"),
        name=name,
        cidr=cidr,
        comment=comment,
        adopt=adopt,
        rename_from=rename_from,
        **declared_keys(extra),
    )


def firewall_alias_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing one cluster firewall alias, as every family does: ``removal=retain`` (default)
    forgets it and leaves it in PVE; ``removal=destroy`` deletes it when this minion created it and
    it still holds what was last declared (an alias that is not ours is refused, one already gone is
    fine). Rules naming a deleted alias stop matching: move them first. Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_alias_absent web_hosts removal=destroy test=True
    """
    return _object_absent("firewall_alias", name, test, target, state_id, removal, dict(extra, name=name))


def firewall_rules_get(name, target=None):
    """
    The rule list of one scope (``cluster``, ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>``,
    ``group/<name>``) as this module compares it: each rule's ``.fw`` line, first rule first.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_rules_get vm/510
    """
    from salt_proxmox.firewall import rules as firewall_rules
    from salt_proxmox.firewall.ruleset import line

    ctx = _context(target)
    scope = _call(firewall_rules.identify, "adhoc", ctx.target.name, name)
    located = _call(firewall_rules.firewall_of, ctx, scope)
    if located is None:
        return None
    live = _call(firewall_rules.read, ctx, firewall_rules.rules_path(scope, located.path))
    return [line(rule) for rule in live.rules]


def firewall_rules_present(
    name, rules=None, test=False, target=None, adopt=False, allow_lockout=False, state_id=None, **extra
):
    """
    Plan (``test=True``) or apply the whole ordered rule list of scope ``name``; returns a state return
    dict. This is what the ``proxmox_firewall.rules`` state calls.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_rules_present vm/510 \\
            rules='[{type: in, action: ACCEPT, macro: SSH, enable: 1}]' test=True
    """
    from salt_proxmox.firewall import rules as firewall_rules

    return _state(
        name,
        target,
        firewall_rules.present,
        _switch("test", test),
        state_id or name,
        run=extra,
        twins=_object_twins("firewall_rules"),
        name=name,
        rules=rules,
        adopt=adopt,
        allow_lockout=allow_lockout,
        **declared_keys(extra),
    )


def firewall_rules_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing the rule list of scope ``name``: ``removal=retain`` (default) forgets it,
    ``removal=destroy`` deletes its rules while they are exactly the last declaration.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_rules_absent node/pve2 removal=destroy test=True
    """
    from salt_proxmox.firewall import rules as firewall_rules

    return _state(
        name,
        target,
        firewall_rules.absent,
        _switch("test", test),
        state_id or name,
        run=extra,
        twins=_object_twins("firewall_rules"),
        name=name,
        removal=removal,
        **declared_keys(extra),
    )


def pool_get(name, target=None):
    """
    One resource pool: ``{comment, members}`` (members counted). ``None`` only for PVE's
    exact "pool '<id>' does not exist".

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.pool_get prod
    """
    return _object_get("pool", target, {"name": name})


def pool_present(name, comment=None, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one resource pool (poolid ``name``, ``comment``); returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.pool_present prod comment='Production guests' test=True
    """
    return _object_present(
        "pool", name, test, target, state_id, dict(extra, name=name, comment=comment, adopt=adopt)
    )


def pool_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a pool: ``removal=retain`` (default) forgets it, ``removal=destroy`` deletes
    an owned, unchanged, empty pool.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.pool_absent prod removal=destroy test=True
    """
    return _object_absent("pool", name, test, target, state_id, removal, dict(extra, name=name))


def ceph_pool_present(name, node=None, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one Ceph pool ``name``, managed through ``node`` (``size``, ``min_size``, ``pg_num``,
    ``pg_num_min``, ``pg_autoscale_mode``, ``crush_rule``, ``application``, ``target_size``,
    ``target_size_ratio``); returns a state return dict. Create and update are PVE tasks.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ceph_pool_present vm-disks node=pve1 size=3 min_size=2 test=True
    """
    return _object_present(
        "ceph_pool", name, test, target, state_id, dict(extra, name=name, node=node, adopt=adopt)
    )


def ceph_pool_absent(name, node=None, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a Ceph pool: ``removal=retain`` (default) forgets it, ``removal=destroy`` destroys
    an owned, unchanged pool that no storage definition names (its data with it).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ceph_pool_absent vm-disks node=pve1 removal=destroy test=True
    """
    return _object_absent(
        "ceph_pool", name, test, target, state_id, removal, dict(extra, name=name, node=node)
    )


def pbs_datastore_get(name, target=None):
    """
    One datastore of a PBS target (``proxmox:pbs_targets``) as the ``pbs_datastore`` state compares
    it: its canonical configuration keys (``GET /config/datastore/{name}``); ``None`` only for PBS's
    ``no such datastore`` answer.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.pbs_datastore_get store1 target=backup1
    """
    from salt_proxmox.simple import lifecycle as simple

    ctx = _pbs_context(target)
    spec = _families()["pbs_datastore"]
    probe = _call(spec.identify, "adhoc", ctx.target.name, name=name)
    return _call(simple.read, ctx, spec, probe)


def pbs_datastore_present(name, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one PBS datastore (``name``, ``path``, ``backend``, the managed keys) on a PBS
    target; returns a state return dict. The create is a PBS task awaited with its own credential.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.pbs_datastore_present store1 path=/mnt/datastore/store1 target=backup1 test=True
    """
    from salt_proxmox.simple import lifecycle as simple

    return _state(
        name,
        target,
        simple.present,
        _families()["pbs_datastore"],
        _switch("test", test),
        state_id or name,
        run=extra,
        twins=_object_twins("pbs_datastore"),
        targets_of="proxmox:pbs_targets",
        **declared_keys(dict(extra, name=name, adopt=adopt)),
    )


def pbs_datastore_absent(
    name, test=False, target=None, removal="retain", destroy_data=False, state_id=None, **extra
):
    """
    Stop managing a PBS datastore: ``removal=retain`` (default) forgets it, ``removal=destroy`` removes
    the configuration of an owned, unchanged one; its backups only with ``destroy_data=True``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.pbs_datastore_absent store1 removal=destroy target=backup1 test=True
    """
    from salt_proxmox.pbs import datastore

    return _state(
        name,
        target,
        datastore.absent,
        _switch("test", test),
        state_id or name,
        removal,
        destroy_data,
        run=extra,
        twins=_object_twins("pbs_datastore"),
        targets_of="proxmox:pbs_targets",
        **declared_keys(dict(extra, name=name)),
    )


def role_get(name, target=None):
    """
    One role: ``{privs}`` (sorted, comma-joined). ``None`` only for PVE's exact
    "role '<id>' does not exist".

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.role_get SaltProxmoxRead
    """
    return _object_get("role", target, {"name": name})


def role_present(name, privs=None, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one custom role; ``privs`` is a list (or comma-separated string) compared as a
    set. Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.role_present SaltProxmoxRead privs='VM.Audit,Sys.Audit' test=True
    """
    return _object_present(
        "role", name, test, target, state_id, dict(extra, name=name, privs=privs, adopt=adopt)
    )


def role_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a role: retain (default) or destroy an owned, unchanged role.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.role_absent SaltProxmoxRead test=True
    """
    return _object_absent("role", name, test, target, state_id, removal, dict(extra, name=name))


def acl_get(path, role, user=None, group=None, token=None, target=None):
    """
    One ACL entry: ``{propagate}``, or ``None`` when ``GET /access/acl`` (read with Sys.Audit on
    /access) does not hold it.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.acl_get / SaltProxmoxRead token='salt-read@pve!plan'
    """
    names = {"path": path, "role": role, "user": user, "group": group, "token": token}
    return _object_get("acl", target, names)


def acl_present(
    name,
    path,
    role,
    user=None,
    group=None,
    token=None,
    propagate=True,
    test=False,
    target=None,
    adopt=False,
    state_id=None,
    **extra,
):
    """
    Plan or apply one ACL entry: ``role`` for exactly one of ``user``, ``group`` or ``token`` on
    ``path``. Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.acl_present read-root path=/ role=SaltProxmoxRead \\
            token='salt-read@pve!plan' test=True
    """
    declared = {
        **extra,
        "path": path,
        "role": role,
        "user": user,
        "group": group,
        "token": token,
        "propagate": propagate,
        "adopt": adopt,
    }
    return _object_present("acl", name, test, target, state_id, declared)


def acl_absent(
    name,
    path,
    role,
    user=None,
    group=None,
    token=None,
    test=False,
    target=None,
    removal="retain",
    state_id=None,
    **extra,
):
    """
    Stop managing one ACL entry: retain (default) or destroy an owned, unchanged entry.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.acl_absent read-root path=/ role=SaltProxmoxRead \\
            token='salt-read@pve!plan' test=True
    """
    names = {**extra, "path": path, "role": role, "user": user, "group": group, "token": token}
    return _object_absent("acl", name, test, target, state_id, removal, names)


# ------------------------------------------------------------------------ node networks and SDN
#
# Interfaces and SDN objects are simple objects too; the two apply functions reload what they
# staged (salt_proxmox.network.apply, salt_proxmox.sdn.apply).


def network_interface_present(name, node, test=False, target=None, adopt=False, state_id=None, **config):
    """
    Plan or stage one interface of ``node`` (``name`` is the iface) with PVE's keys (``type``,
    ``cidr``, ``bridge_ports``, ...). Writes only stage ``/etc/network/interfaces.new``; nothing is
    reloaded. Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.network_interface_present vmbr1 node=pve1 type=bridge bridge_ports=eno2 test=True
    """
    declared = dict(config, name=name, node=node, adopt=adopt)
    return _object_present("network_interface", name, test, target, state_id, declared)


def network_interface_absent(name, node, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing one interface: retain (default) or stage the deletion of an owned, unchanged one.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.network_interface_absent vmbr1 node=pve1 removal=destroy test=True
    """
    return _object_absent(
        "network_interface", name, test, target, state_id, removal, dict(extra, name=name, node=node)
    )


def _applied(fun, name, test, target, state_id, extra, **where):
    """An apply step (``fun``: the network's or SDN's ``applied``) as a state return; ``extra``: the
    call's other keyword arguments, holding the run it belongs to and any key it does not take."""
    return _state(
        name, target, fun, _switch("test", test), state_id or name, run=extra, **where, **declared_keys(extra)
    )


def network_applied(name, node, test=False, target=None, state_id=None, **extra):
    """
    Plan (the staged diff, secrets masked) or apply (health check, one reload task, health check,
    re-read) what is staged on ``node``. Nothing staged: nothing done. Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.network_applied pve1-network node=pve1 test=True
    """
    from salt_proxmox.network import apply

    return _applied(apply.applied, name, test, target, state_id, extra, node=node)


def sdn_zone_present(name, type, test=False, target=None, adopt=False, state_id=None, **config):
    """
    Plan or write one SDN zone (``type`` simple, vlan, vxlan or evpn with its keys) into the pending
    SDN configuration. Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.sdn_zone_present lab type=simple test=True
    """
    return _object_present(
        "sdn_zone", name, test, target, state_id, dict(config, name=name, type=type, adopt=adopt)
    )


def sdn_vnet_present(name, zone, test=False, target=None, adopt=False, state_id=None, **config):
    """
    Plan or write one SDN vnet of ``zone`` (``tag``, ``alias``, ``vlanaware``). Returns a state
    return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.sdn_vnet_present labnet zone=lab tag=10 test=True
    """
    return _object_present(
        "sdn_vnet", name, test, target, state_id, dict(config, name=name, zone=zone, adopt=adopt)
    )


def sdn_subnet_present(name, vnet, test=False, target=None, adopt=False, state_id=None, **config):
    """
    Plan or write one SDN subnet (``name`` is its CIDR) of ``vnet`` (``gateway``, ``snat``,
    ``dhcp-range``). Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.sdn_subnet_present 10.2.0.0/24 vnet=labnet gateway=10.2.0.1 test=True
    """
    return _object_present(
        "sdn_subnet", name, test, target, state_id, dict(config, name=name, vnet=vnet, adopt=adopt)
    )


def sdn_absent(kind, name, test=False, target=None, removal="retain", state_id=None, **names):
    """
    Stop managing one SDN object (``kind`` zone, vnet or subnet; a subnet also needs ``vnet``):
    retain (default) or delete an owned, unchanged one from the pending configuration.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.sdn_absent vnet labnet removal=destroy test=True
    """
    from salt.exceptions import CommandExecutionError

    if kind not in ("zone", "vnet", "subnet"):
        raise CommandExecutionError(f"kind: expected zone, vnet or subnet, got {kind!r}")
    return _object_absent(f"sdn_{kind}", name, test, target, state_id, removal, dict(names, name=name))


def sdn_applied(name, test=False, target=None, state_id=None, **extra):
    """
    Plan (the pending SDN objects) or apply (health check, SDN lock, ``PUT /cluster/sdn`` as one
    task, health check, re-read) the pending SDN configuration. Returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.sdn_applied sdn test=True
    """
    from salt_proxmox.sdn import apply

    return _applied(apply.applied, name, test, target, state_id, extra)


# ----------------------------------------------------------------------------- what this minion owns
#
# proxmox.owned lists the ownership rows with whether the current pillar still declares each;
# proxmox.forget drops one row on purpose. Neither writes to PVE.


def _declared_rows(sls, saltenv):
    """The row keys the formula ``sls`` declares from the current pillar (``state.show_low_sls``,
    the chunks a state run would get), keyed by each family's own rule (``owned.declared``)."""
    from salt.exceptions import CommandExecutionError

    from salt_proxmox.owned.declared import declared_row_keys
    from salt_proxmox.run.lowstate import Chunk

    low = __salt__["state.show_low_sls"](sls, saltenv=saltenv or "base")
    if not isinstance(low, list) or not all(isinstance(item, dict) for item in low):
        raise CommandExecutionError(
            f"the formula {sls} did not render from the current pillar, so what it declares is unknown: "
            f"{low if isinstance(low, list | str) else type(low).__name__}. Pass sls=<the formula's sls>."
        )
    chunks = [chunk for chunk in (Chunk.of(item) for item in low) if chunk is not None]
    default = run_config.default_target(__salt__["config.get"]("proxmox:targets", {}))
    pbs_default = run_config.default_target(__salt__["config.get"]("proxmox:pbs_targets", {}) or {})
    return declared_row_keys(chunks, default, pbs_default)


def owned(check=False, sls="proxmox", saltenv=None):
    """
    What this minion owns: one entry per ownership row, ``{family, target, id, state_id, phase
    (owned|creating), declared, row}``, ``declared`` true when the current pillar (rendered through the
    formula ``sls``) still declares the object, false for an orphan (dropped from the pillar, still
    owned: ``ensure: absent`` forgets it, ``removal: destroy`` deletes it). With ``check=True`` each
    PVE object is read (``read`` credential, nothing written) and the entry says whether it is still
    the one its row speaks for: ``live`` (present|absent|unreadable: why), ``fingerprint``
    (true|false|null) and ``differs``. Printed as a table (the ``proxmox_owned`` outputter); data with
    ``--out=json``. Raises CommandExecutionError when the rows or the formula cannot be read.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.owned
        salt-call proxmox.owned check=True --out=json
    """
    from salt_proxmox.owned.check import live_check
    from salt_proxmox.ownership.report import entries

    check = _switch("check", check)
    rows = _call(_store().load)
    found = entries(rows, _declared_rows(sls, saltenv) if sls else None)
    if check:
        contexts = {}
        for entry in found:
            if entry["target"] not in __salt__["config.get"]("proxmox:targets", {}):
                entry.update({"live": "not checked (not a PVE object)", "fingerprint": None, "differs": []})
                continue
            if entry["target"] not in contexts:
                contexts[entry["target"]] = _context(entry["target"])
            entry.update(live_check(contexts[entry["target"]], entry["row"], rows[entry["row"]]))
    return found


def forget(row):
    """
    Drop one ownership row on purpose: the object it names (``<target>/<family>/<identity>``, as
    ``proxmox.owned`` lists it under ``row``) is no longer this minion's, and PVE is never touched. A
    row this minion does not hold is refused, naming the rows it does hold. Returns ``{forgotten:
    <row>, family, target, id, state_id, phase}``. To take the object back, declare it with
    ``adopt: true``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.forget homelab/lxc/150
    """
    from salt.exceptions import CommandExecutionError

    from salt_proxmox.ownership.keeper import Ownership
    from salt_proxmox.ownership.report import entries, no_such_row

    store = _store()
    rows = _call(store.load)
    if row not in rows:
        raise CommandExecutionError(str(no_such_row(str(row), rows)))
    (entry,) = entries({row: rows[row]}, None)
    _call(Ownership(store).forget, row)
    return {"forgotten": row, **{key: entry[key] for key in ("family", "target", "id", "state_id", "phase")}}


# ----------------------------------------------------------------------------- export


def export(family=None, node=None, pool=None, vmid=None, path=None, target=None):
    """
    The live cluster (and OpenBao's policies) as the pillar the formula reads: ``{proxmox: {...},
    openbao: {...}}``, one entry per object under its family's section, in the product's own
    spellings, each with ``adopt: true``, so that pillar applied as it is plans nothing but the
    ownership rows it records. Filters: ``family`` (registry names, comma-separated: ``pool,lxc``),
    ``node``, ``pool``, ``vmid`` (a guest's own firewall objects by their scope's guest, a node's by
    its ``node/<node>`` scope). Secrets are never exported: the log (and the file's comments) name
    each and where it goes. ``path=<file>``: also write it to that pillar file (YAML, mode 0600, the
    notes as comments), refused when the file exists. Nothing is written to PVE or OpenBao.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.export --out=yaml
        salt-call proxmox.export family=lxc,qemu node=pve1
        salt-call proxmox.export path=/srv/pillar/proxmox_export.sls
    """
    import logging

    from salt.exceptions import CommandExecutionError

    from salt_proxmox.export.pillar import Filters, family_filter, to_yaml
    from salt_proxmox.export.pillar import export as export_pillar

    try:
        families = family_filter(family)
    except ValueError as exc:
        raise CommandExecutionError(str(exc)) from None
    wanted = Filters(
        families=families,
        node=str(node) if node is not None else None,
        pool=str(pool) if pool is not None else None,
        vmid=_call(vmid_number, vmid) if vmid is not None else None,
    )
    ctx = _context(target)
    bao = None
    if (families is None or "policy" in families) and __salt__["config.get"]("openbao", None) is not None:
        from salt_proxmox.openbao_policy.lifecycle import context_for

        bao = _call(context_for, __salt__["config.get"]("openbao", None), __context__, _store())
    pbs = {}
    if families is None or any(name.startswith("pbs") for name in families):
        pbs = {name: _pbs_context(name) for name in __salt__["config.get"]("proxmox:pbs_targets", {}) or {}}
    done = _call(export_pillar, ctx, bao, wanted, pbs)
    for note in done.notes:
        logging.getLogger(__name__).warning("proxmox.export: %s", note)
    if path:
        import os

        header = (
            f"Exported by proxmox.export from target {ctx.target.name}: {done.count} object(s), each with "
            "adopt: true.\nSecrets are not exported: put them in a secrets pillar file of their own."
        )
        try:
            fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise CommandExecutionError(f"path {path}: cannot be created ({exc.strerror})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(to_yaml(done, header))
    return done.pillar


# ------------------------------------------------------------------ firewall options, IP sets, groups


def _noting_declared_rules(fun, run):
    """``fun`` (a library plan/apply taking the context first), run after recording the rule lists this
    state run declares (the ``proxmox_firewall.rules`` states on the context's target), which the
    firewall's usage scan counts (``salt_proxmox.firewall.usage.declare_run_rules``)."""
    from salt_proxmox.firewall import usage
    from salt_proxmox.run import config as run_config

    def call(ctx, *args, **kwargs):
        usage.declare_run_rules(ctx, run_config.run_of(run or {}, __context__))
        return fun(ctx, *args, **kwargs)

    return call


def firewall_options_present(name, test=False, target=None, adopt=False, state_id=None, **options):
    """
    Plan (``test=True``) or apply the firewall options of one scope (``name``: ``cluster``,
    ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>``); returns a state return dict. Keys as PVE spells
    them (``enable``, ``policy_in``, ``log_level_in``, ``nf_conntrack_max``, ...); ``None`` puts one
    back to PVE's default; ``allow_lockout=True`` lets a dropping change through.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_options_present cluster ebtables=0 test=True
    """
    return _object_present(
        "firewall_options", name, test, target, state_id, dict(options, name=name, adopt=adopt)
    )


def firewall_ipset_present(
    name,
    scope="cluster",
    comment=None,
    cidrs=None,
    test=False,
    target=None,
    adopt=False,
    allow_lockout=False,
    state_id=None,
    **extra,
):
    """
    Plan (``test=True``) or apply one IP set at ``scope`` (``cluster``, ``vm/<vmid>``, ``ct/<vmid>``)
    with its ``cidrs`` (entries ``{cidr, nomatch, comment}``); returns a state return dict.
    ``allow_lockout=True`` lets a change to the cluster's ``management`` or ``blacklist`` set through
    that would drop this minion's traffic.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_ipset_present admins cidrs='["192.0.2.0/24"]' test=True
    """
    from salt_proxmox.firewall import ipset

    return _state(
        name,
        target,
        _noting_declared_rules(ipset.present, extra),
        _switch("test", test),
        state_id or name,
        run=extra,
        twins=_object_twins("firewall_ipset"),
        name=name,
        scope=scope,
        comment=comment,
        cidrs=cidrs,
        adopt=adopt,
        allow_lockout=allow_lockout,
        **declared_keys(extra),
    )


def firewall_group_present(name, comment=None, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan (``test=True``) or apply one security group (its name and comment; its rules are
    ``proxmox_firewall.rules`` at ``group/<name>``); returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_group_present webgrp comment='web tier' test=True
    """
    return _object_present(
        "firewall_group", name, test, target, state_id, dict(extra, name=name, comment=comment, adopt=adopt)
    )


def firewall_absent(kind, name, test=False, target=None, removal="retain", state_id=None, **names):
    """
    Stop managing one firewall object (``kind`` options, ipset or group; an IP set also takes
    ``scope``): retain (default) or delete an owned, unchanged one; an IP set or group that rules still
    name is not deleted. Options are put back to PVE's defaults (``delete=``).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_absent group webgrp removal=destroy test=True
    """
    from salt.exceptions import CommandExecutionError

    from salt_proxmox.simple import lifecycle as simple

    if kind not in ("options", "ipset", "group"):
        raise CommandExecutionError(f"kind: expected options, ipset or group, got {kind!r}")
    family = f"firewall_{kind}"
    return _state(
        name,
        target,
        _noting_declared_rules(simple.absent, names),
        _families()[family],
        _switch("test", test),
        state_id or name,
        removal,
        run=names,
        twins=_object_twins(family),
        **declared_keys(dict(names, name=name)),
    )


def ha_resource_present(name, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one HA resource (sid ``name``: ``vm:<vmid>``/``ct:<vmid>``; ``state``,
    ``max_restart``, ``max_relocate``, ``comment``, ``group`` on PVE 8); returns a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ha_resource_present ct:150 state=started max_restart=2 test=True
    """
    return _object_present("ha_resource", name, test, target, state_id, dict(extra, name=name, adopt=adopt))


def ha_resource_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing an HA resource: ``removal=retain`` (default) forgets it, ``removal=destroy`` takes an
    owned, unchanged guest out of HA (the guest itself stays).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ha_resource_absent ct:150 removal=destroy test=True
    """
    return _object_absent("ha_resource", name, test, target, state_id, removal, dict(extra, name=name))


def ha_group_present(name, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one HA group (PVE 8; ``nodes``, ``restricted``, ``nofailback``, ``comment``);
    returns a state return dict. Refused on PVE 9, which migrated groups to HA rules.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ha_group_present prefer-pve1 nodes='[pve1:2, pve2:1]' test=True
    """
    return _object_present("ha_group", name, test, target, state_id, dict(extra, name=name, adopt=adopt))


def ha_group_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing an HA group: ``removal=retain`` (default) forgets it, ``removal=destroy`` deletes an
    owned, unchanged group no resource names.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ha_group_absent prefer-pve1 removal=destroy test=True
    """
    return _object_absent("ha_group", name, test, target, state_id, removal, dict(extra, name=name))


def ha_rule_present(name, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one HA rule (PVE 9; ``type`` node-affinity or resource-affinity, ``resources``,
    ``nodes``/``strict`` or ``affinity``, ``disable``, ``comment``); returns a state return dict.
    Refused on PVE 8, which has HA groups instead.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ha_rule_present web type=node-affinity resources='[ct:150]' nodes=pve1 test=True
    """
    return _object_present("ha_rule", name, test, target, state_id, dict(extra, name=name, adopt=adopt))


def ha_rule_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing an HA rule: ``removal=retain`` (default) forgets it, ``removal=destroy`` deletes an
    owned, unchanged rule.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.ha_rule_absent web-on-pve1 removal=destroy test=True
    """
    return _object_absent("ha_rule", name, test, target, state_id, removal, dict(extra, name=name))


# ----------------------------------------------------------------------------- access control
#
# Realms, groups, users and API tokens (salt_proxmox.access) share the simple lifecycle; a user's password
# and a realm's bind password or client key come from pillar (``_pillar_secrets``), a token's secret goes
# to OpenBao and nowhere else.


def _secret_present(family, secrets, name, test, target, state_id, secrets_pillar, declared):
    read, refused = _pillar_secrets(name, secrets, declared, secrets_pillar)
    if refused is not None:
        return refused
    return _object_present(family, name, test, target, state_id, declared, read)


def realm_present(
    name, type=None, test=False, target=None, adopt=False, state_id=None, secrets_pillar=None, **extra
):
    """
    Plan or apply one authentication realm (``name``; ``type`` ldap, ad or openid; the type's options as
    the API spells them). ``secrets_pillar``: the pillar path of the mapping holding its
    ``bind_password``/``client-key`` (written at create and when ``bind_password_serial``/
    ``client_key_serial`` changes, never read back or shown).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.realm_present corp type=ldap server1=ldap.example.org \\
            base_dn=dc=example,dc=org user_attr=uid test=True
    """
    from salt_proxmox.access.realm import SECRETS

    declared = dict(extra, name=name, type=type, adopt=adopt)
    return _secret_present("realm", SECRETS, name, test, target, state_id, secrets_pillar, declared)


def realm_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a realm: retain (default) forgets it; destroy deletes an owned, unchanged one (never
    ``pam`` or ``pve``); its users stay.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.realm_absent corp removal=destroy test=True
    """
    return _object_absent("realm", name, test, target, state_id, removal, dict(extra, name=name))


def realm_sync(realm, dry_run=True, target=None, **options):
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

    ctx = _context(target)
    return _call(sync, ctx, realm, _switch("dry_run", dry_run), **declared_keys(options))


def group_present(name, comment=None, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one group (groupid ``name``, ``comment``); members are the users' ``groups``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.group_present automation comment='CI systems' test=True
    """
    return _object_present(
        "group", name, test, target, state_id, dict(extra, name=name, comment=comment, adopt=adopt)
    )


def group_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a group: retain (default) forgets it; destroy deletes an owned, unchanged one (PVE
    drops it from its users and removes its ACL entries).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.group_absent automation removal=destroy test=True
    """
    return _object_absent("group", name, test, target, state_id, removal, dict(extra, name=name))


def user_present(name, test=False, target=None, adopt=False, state_id=None, secrets_pillar=None, **extra):
    """
    Plan or apply one user (userid ``name``: ``email``, ``firstname``, ``lastname``, ``comment``,
    ``enable``, ``expire``, ``groups``, ``keys``). ``secrets_pillar``: the pillar path of the mapping
    holding its ``password`` (pve realm; sent at create only, never read, shown, stored or compared).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.user_present ci@pve groups=automation email=ci@example.org test=True
    """
    from salt_proxmox.access.user import SECRETS

    declared = dict(extra, name=name, adopt=adopt)
    return _secret_present("user", SECRETS, name, test, target, state_id, secrets_pillar, declared)


def user_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a user: retain (default) forgets it; destroy deletes an owned, unchanged one with its
    tokens, memberships and ACL entries (never root@pam).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.user_absent ci@pve removal=destroy test=True
    """
    return _object_absent("user", name, test, target, state_id, removal, dict(extra, name=name))


def token_present(name, store=None, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one API token (``name``: ``user@realm!tokenid``; ``privsep``, ``expire``, ``comment``).
    Its secret, shown by PVE once, is written to OpenBao at ``store`` and nowhere else;
    ``secret_serial`` draws a new one.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.token_present 'ci@pve!deploy' store=secret/data/pve-tokens/ci privsep=1 test=True
    """
    return _object_present(
        "token", name, test, target, state_id, dict(extra, name=name, store=store, adopt=adopt)
    )


def token_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a token: retain (default) forgets it; destroy deletes an owned, unchanged one (its
    secret in OpenBao stops working).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.token_absent 'ci@pve!deploy' removal=destroy test=True
    """
    return _object_absent("token", name, test, target, state_id, removal, dict(extra, name=name))


def privileges_needed(mods=None, target=None, saltenv=None):
    """
    What the declared estate needs of the ``read`` and ``provision`` credentials, as PVE checks each
    method's permissions on each ACL path (``salt_proxmox.access.privileges``): the least role of each
    as a ``proxmox:roles`` entry and the ``proxmox:acls`` entries granting it, ready to declare; what
    each token lacks today (``GET /access/permissions``) with the ``pveum`` lines that grant it. The
    estate is the highstate's lowstate, or that of ``mods`` (``proxmox``).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.privileges_needed
        salt-call proxmox.privileges_needed mods=proxmox
    """
    from salt_proxmox.access import estate

    kwargs = {"saltenv": saltenv} if saltenv else {}
    if mods:
        lowstate = __salt__["state.show_low_sls"](mods, **kwargs)
    else:
        lowstate = __salt__["state.show_lowstate"](**kwargs)
    if not isinstance(lowstate, list):
        from salt.exceptions import CommandExecutionError

        raise CommandExecutionError(f"the state does not render: {lowstate}")
    return _call(estate.needed, _context(target), lowstate)


# --------------------------------------------------------------------------------------- backups


def backup_job_get(name, target=None):
    """
    One backup job (``GET /cluster/backup/{id}``) as its canonical options; ``None`` only for PVE's
    "No such job".

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.backup_job_get nightly
    """
    return _object_get("backup_job", target, {"name": name})


def backup_job_present(name, test=False, target=None, adopt=False, state_id=None, **extra):
    """
    Plan or apply one backup job ``name`` (``schedule``, ``enabled``, ``storage``, ``vmid``/``pool``/
    ``all`` with ``exclude``, ``node``, ``mode``, ``compress``, ``prune-backups``, ``notes-template``,
    ``protected``, ``notification-mode``, ``mailto``, ``mailnotification``, ``comment``, ...); returns
    a state return dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.backup_job_present nightly schedule=02:00 storage=backups vmid=150,210 test=True
    """
    return _object_present("backup_job", name, test, target, state_id, dict(extra, name=name, adopt=adopt))


def backup_job_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a backup job: ``removal=retain`` (default) forgets it, ``removal=destroy`` deletes an
    owned, unchanged job (never a backup it made).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.backup_job_absent nightly removal=destroy test=True
    """
    return _object_absent("backup_job", name, test, target, state_id, removal, dict(extra, name=name))


def backup_coverage(target=None):
    """
    Which guests of the cluster no enabled backup job covers, and the enabled jobs covering every other
    guest: ``{uncovered: [CT 150, ...], covered: {VM 210: [nightly]}, disabled: [job ids]}``. PVE's
    ``/cluster/backup-info/not-backed-up`` counts disabled jobs as covering; this does not.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.backup_coverage
    """
    from salt_proxmox.backup import coverage

    return _call(coverage.report, _context(target))


def snapshot_present(
    name, vmid=None, node=None, type=None, test=False, target=None, adopt=False, state_id=None, **extra
):
    """
    Plan or apply one snapshot ``name`` of guest ``vmid`` (``type`` lxc or qemu, on ``node``):
    ``description``, ``vmstate`` (VMs); returns a state return dict. The snapshot is a PVE task.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_present before-upgrade vmid=150 node=pve1 type=lxc test=True
    """
    names = dict(extra, name=name, vmid=vmid, node=node, type=type, adopt=adopt)
    return _object_present("snapshot", name, test, target, state_id, names)


def snapshot_absent(
    name, vmid=None, node=None, type=None, test=False, target=None, removal="retain", state_id=None, **extra
):
    """
    Stop managing a snapshot: ``removal=retain`` (default) forgets it, ``removal=destroy`` deletes an
    owned, unchanged snapshot (a PVE task).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_absent before-upgrade vmid=150 node=pve1 type=lxc removal=destroy test=True
    """
    names = dict(extra, name=name, vmid=vmid, node=node, type=type)
    return _object_absent("snapshot", name, test, target, state_id, removal, names)


def snapshot_list(vmid, node=None, target=None):
    """
    The snapshots of guest ``vmid`` (``current`` left out), as PVE lists them: ``name``,
    ``description``, ``snaptime``, ``parent``, ``vmstate`` (VMs).

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_list 150
    """
    from salt_proxmox.backup import adhoc
    from salt_proxmox.registry import guests

    return _call(adhoc.list_snapshots, _context(target), guests(), vmid, node)


def snapshot_create(vmid, snapname, node=None, description=None, vmstate=None, target=None, adopt=False):
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
    from salt_proxmox.registry import guests

    ctx = _context(target)
    return _call(adhoc.create, ctx, guests(), vmid, snapname, node, description, vmstate, adopt)


def snapshot_delete(vmid, snapname, node=None, target=None, adopt=False):
    """
    Delete snapshot ``snapname`` of a guest this minion owns (a PVE task; never forced). Ownership as
    ``proxmox.snapshot_create``. Returns ``{vmid, node, type, snapname, upid}``.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.snapshot_delete 150 before-upgrade
    """
    from salt_proxmox.backup import adhoc
    from salt_proxmox.registry import guests

    return _call(adhoc.delete, _context(target), guests(), vmid, snapname, node, adopt)


def snapshot_rollback(vmid, snapname, node=None, target=None, adopt=False, test=False):
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
    from salt_proxmox.registry import guests

    return _call(
        adhoc.rollback, _context(target), guests(), vmid, snapname, node, adopt, _switch("test", test)
    )
