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

try:
    from salt_proxmox.errors import SaltProxmoxError, boolean
    from salt_proxmox.guest import adhoc as guest_adhoc
    from salt_proxmox.guest import lifecycle as guest_lifecycle
    from salt_proxmox.guest import live as guest_live
    from salt_proxmox.lxc import schema as lxc_schema
    from salt_proxmox.lxc.family import LXC
    from salt_proxmox.pve.client import api_path
    from salt_proxmox.pve.constraints import vmid_number
    from salt_proxmox.qemu import schema as qemu_schema
    from salt_proxmox.qemu.family import QEMU
    from salt_proxmox.run import config as run_config
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
    )


def _state(name, target, fun, /, *args, run=None, twins=None, ahead=None, **kwargs):
    """The state return of ``fun(ctx, *args, **kwargs)`` (a library plan/apply returning an
    Outcome), or a refusal when the target's context cannot be built or, with ``twins``
    (``(state modules, keys_of(chunk, default_target))``), when another state of the run declares
    the same object. ``run``: the call's keyword arguments, holding the state run the skin passed
    through (``__lowstate__``, ``__low__``, ``__instance_id__``; none outside a state run): every state
    enters its run here (``run_config.enter_run``), so what one run learned never serves another.
    ``ahead``: the family's ``read_ahead``, handed the run's declarations of the first state module in
    ``twins`` before the first of them runs. Within a run, configuration is read once
    (``run_config.salt_for_run``)."""
    funcs = run_config.salt_for_run(__salt__, run, __context__)
    try:
        ctx = _context(target, funcs)
    except Exception as exc:
        return refused_return(name, exc)
    run_config.enter_run(ctx, run or {}, __context__)
    if twins is not None:
        states, keys_of = twins
        default = run_config.default_target(funcs["config.get"]("proxmox:targets", {}))
        refused = run_config.twins_return(
            name, run or {}, states, lambda chunk: keys_of(chunk, default), __context__
        )
        if refused is not None:
            return refused
        if ahead is not None:
            run_config.read_ahead(ctx, run or {}, states[0], default, ahead, __context__)
    return run_config.outcome_return(name, fun, ctx, *args, **kwargs)


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
    return __salt__[function](**kwargs)


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
    DNS name, as ``qm set --name`` takes it). ``secrets_pillar``: the pillar path of the mapping
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
        **{**declared_keys(declared), **secrets, "name": name},
    )


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
    return _adhoc(target, vmid, dict(config, node=node, ostemplate=ostemplate))


def lxc_update(node, vmid, target=None, **config):
    """
    Write config keys to a container this minion owns: one digest-guarded PUT, then a resize
    task per grown disk, then a read-back. The keys merge over its recorded declaration. Raises
    CommandExecutionError with the state's comment when it is refused or fails.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.lxc_update node=pve1 vmid=150 memory=2048
    """
    return _adhoc(target, vmid, dict(config, node=node))


def _adhoc(target, vmid, config):
    from salt.exceptions import CommandExecutionError

    ctx = _context(target)
    state_id, declared = _call(guest_adhoc.adhoc_declaration, ctx, LXC, vmid, declared_keys(config))
    ret = guest_lifecycle.present(ctx, LXC, state_id, False, **declared).salt_return(state_id)
    if ret["result"] is False:
        raise CommandExecutionError(ret["comment"])
    return ret


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
    ctx = _context(target)
    upid = _call(guest_adhoc.resize, ctx, LXC, node, vmid, disk, size)
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
        return simple.chunk_keys(families[kind.name], chunk, default) if kind else frozenset()

    return (declaring.state,), keys_of


def _object_present(family, name, test, target, state_id, declared):
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
    from salt_proxmox.simple import lifecycle as simple
    from salt_proxmox.storage.types import LEGACY_SENSITIVE

    secrets, refused = _pillar_secrets(name, LEGACY_SENSITIVE, extra, secrets_pillar)
    if refused is not None:
        return refused
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


def storage_absent(name, test=False, target=None, removal="retain", state_id=None, **extra):
    """
    Stop managing a storage definition: ``removal=retain`` (default) forgets it, ``removal=destroy``
    deletes an owned, unchanged definition no guest has a volume on; its data is never removed.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.storage_absent old removal=destroy test=True
    """
    return _object_absent("storage", name, test, target, state_id, removal, dict(extra, name=name))


def firewall_alias_get(name, target=None):
    """
    One cluster firewall alias as this module compares it: ``{name, cidr, comment}`` (cidr
    without a /32 or /128, comment trimmed). Returns ``None`` only for PVE's exact "no such
    alias" answer; fails on any other error.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_alias_get web_hosts target=homelab
    """
    return _object_get("firewall_alias", target, {"name": name})


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


def firewall_alias_absent(name, test=False, target=None, removal="destroy", state_id=None, **extra):
    """
    Delete one cluster firewall alias this minion created, if it still holds what was last
    declared; an alias that is not ours is refused, one already gone is fine. Rules naming it
    stop matching: move them first. ``removal=retain`` forgets it instead. Returns a state return
    dict.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.firewall_alias_absent web_hosts test=True
    """
    return _object_absent("firewall_alias", name, test, target, state_id, removal, dict(extra, name=name))


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
