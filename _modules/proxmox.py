"""Execution module ``proxmox``: reads and writes of a Proxmox VE cluster, for states and ad-hoc use.

Targets are read with ``config.get('proxmox:targets')`` (minion config or pillar); OpenBao with
``config.get('openbao')``. Ownership rows go to ``salt_proxmox_owned.json`` beside the grains file,
shown as the grain ``salt_proxmox:owned``, or to the JSON file
``config.get('proxmox:ownership_file')`` names when set — what salt-ssh needs, because a
salt-ssh target keeps its grains in the thin directory, which salt-ssh deletes on every redeploy —
or to OpenBao when ``proxmox:ownership`` says ``store: openbao``, where an apply also holds a run lock
per target (``proxmox.unlock``).
The logic lives in the ``salt_proxmox`` library; this module only translates Salt's world (opts,
pillar, grains, ``__context__``) into library calls.

:depends: salt_proxmox, requests, hvac
"""

__virtualname__ = "proxmox"

#: ``salt-call proxmox.owned`` prints a table by default; ``--out=json`` gives the data.
__outputter__ = {"owned": "proxmox_owned"}

try:
    from salt_proxmox.entry import TARGETS, imported
    from salt_proxmox.errors import SaltProxmoxError, boolean
    from salt_proxmox.guest import adhoc as guest_adhoc
    from salt_proxmox.guest import lifecycle as guest_lifecycle
    from salt_proxmox.guest import live as guest_live
    from salt_proxmox.pve.constraints import vmid_number
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


def _state(
    name, target, fun, /, *args, run=None, twins=None, ahead=None, targets_of=None, plan=True, **kwargs
):
    """The state return of ``fun(ctx, *args, **kwargs)`` (a library plan/apply returning an
    Outcome), or a refusal when the target's context cannot be built or, with ``twins``
    (``(state modules, keys_of(chunk, default_target))``), when another state of the run declares
    the same object. ``run``: the call's keyword arguments, holding the state run the skin passed
    through (``__lowstate__``, ``__low__``, ``__instance_id__``; none outside a state run): every state
    enters its run here (``run_config.enter_run``), so what one run learned never serves another.
    ``ahead``: the family's ``read_ahead``, handed the run's declarations of the first state module in
    ``twins`` before the first of them runs. ``targets_of``: the section the target is configured in,
    ``proxmox:pbs_targets`` for a PBS family (default ``proxmox:targets``). ``plan``: the call's
    ``test``; an apply holds the target's run lock when the rows live in OpenBao
    (``run.locking``). The return carries the ``target`` (cluster) it ran against, which the
    ``proxmox_plan`` outputter names. Within a run, configuration is read once
    (``run_config.salt_for_run``)."""
    funcs = run_config.salt_for_run(__salt__, run, __context__)
    section = targets_of or TARGETS
    try:
        ctx = globals()[_CONTEXTS[section]](target, funcs)
    except Exception as exc:
        return refused_return(name, exc)
    entered = run_config.enter_run(ctx, run or {}, __context__)
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
    ret = _locked(entered, ctx.ownership.store, ctx.target.name, plan, name, fun, ctx, *args, **kwargs)
    # The cluster it ran against, so that output from many minions (one per cluster) can name it.
    ret["target"] = ctx.target.name
    return _note_undeclared(ret, entered, ctx, funcs)


def _locked(run, store, target, plan, name, fun, /, *args, **kwargs):
    """``run.locking.locked_return`` for this minion: ``target``'s run lock held around the state."""
    from salt_proxmox.run import locking

    opts = __opts__
    return locking.locked_return(
        __context__, run, store, target, plan, opts.get("id"), opts.get("jid"), name, fun, *args, **kwargs
    )


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
    from salt_proxmox.run import locking

    return locking.run_with_locks(
        __context__,
        run_config.run_of(dunders, __context__),
        __opts__.get("id"),
        lambda: run_config.run_with_grain(
            __salt__,
            __opts__,
            __context__,
            dunders,
            _store,
            lambda: __grains__,
            lambda: __salt__[function](**kwargs),
        ),
    )


def _pillar_secrets(name, secrets, declared, secrets_pillar):
    """``(secrets read, refusal)``: ``run_config.pillar_secrets`` on this minion's pillar (Salt's
    ``traverse_dict_and_list``), and None; or ``({}, a refused state return)``."""
    import salt.utils.data

    def lookup(path):
        return salt.utils.data.traverse_dict_and_list(__pillar__, path, default=None)

    try:
        return run_config.pillar_secrets(secrets, declared, secrets_pillar, lookup), None
    except SaltProxmoxError as exc:
        return {}, refused_return(name, exc)


# ------------------------------------------------------------------- every family's state calls
#
# The registry's state calls (``<kind>_present``, ``<kind>_absent``, ``<family>_applied``,
# ``<kind>_get``) are generated below from ``salt_proxmox.registry`` (signatures and docstrings:
# ``salt_proxmox.run.calls``): a family adds no function here. docs/design.md §2 "Execution modules".

#: The context builder of each targets section a family names (``registry.Family.targets``).
_CONTEXTS = {"proxmox:targets": "_context", "proxmox:pbs_targets": "_pbs_context"}


def _object_twins(kind):
    """What ``_state`` needs to refuse a second declaration of one object of kind ``kind`` in a run: the
    state module of its family and one function keying every chunk of that module by the family's own
    rule (``owned.declared.chunk_row_keys``: a module holding several kinds, ``proxmox_sdn``, keys each
    chunk by the kind its function declares; an apply declares none). ``default``: the target a chunk
    naming none is on, in the family's own targets section."""
    from salt_proxmox.owned.declared import chunk_row_keys
    from salt_proxmox.registry import family_declaring

    return (family_declaring(kind).state,), lambda chunk, default: chunk_row_keys(chunk, default, default)


def _spec(made):
    """What a run with ``Run.spec`` is handed: the guest ``Family`` of a guest family, else the kind's
    ``ObjectSpec``."""

    return imported(made.family.guest) if made.family.guest else made.kind.load()


def _family_context(family, target, funcs=None):
    return globals()[_CONTEXTS[family.targets]](target, funcs)


def _get(made, own, identity):
    """``<kind>_get``: the kind's own ad-hoc read (``Kind.get``), else the simple lifecycle's read (the
    identity completed first by the spec's ``resolve``)."""
    from salt_proxmox.simple import lifecycle as simple

    ctx = _family_context(made.family, own["target"])
    if made.kind.get:
        return _call(imported(made.kind.get), ctx, **identity)
    spec = made.kind.load()
    if spec.resolve is not None:  # a key the cluster knows, left out (a snapshot's type)
        identity = _call(spec.resolve, ctx, identity)[0]
    probe = _call(spec.identify, "adhoc", ctx.target.name, **identity)
    return _call(simple.read, ctx, spec, probe)


def _guest_call(made, own, declared):
    """An ad-hoc guest call (``registry.Family.adhoc``): ``config`` reads, ``resize`` grows one volume,
    ``create``/``update`` merge the keys over the row's recorded declaration (``guest.adhoc``) and plan
    and apply it as its state would, with the same ownership and fingerprint checks; their state return,
    or CommandExecutionError with its comment when refused or failed."""
    from salt.exceptions import CommandExecutionError

    ctx, guest, vmid = _context(own["target"]), imported(made.family.guest), declared.pop("vmid")
    if made.verb == "config":
        return _call(guest_live.operator_config, ctx, guest, _call(vmid_number, vmid), declared["node"])
    if made.verb == "resize":
        node, disk, size = declared["node"], declared["disk"], declared["size"]
        return {
            "upid": _call(guest_adhoc.resize, ctx, guest, node, vmid, disk, size),
            "disk": disk,
            "size": size,
        }
    state_id, config = _call(guest_adhoc.adhoc_declaration, ctx, guest, vmid, declared_keys(declared))
    ret = guest_lifecycle.present(ctx, guest, state_id, False, **config).salt_return(state_id)
    if ret["result"] is False:
        raise CommandExecutionError(ret["comment"])
    return ret


def _linked(name, kind, declared):
    """``(contexts, refusal)``: the context of each target a declaration names in another section
    (``Kind.linked``: a ``pbs`` storage's ``pbs_target``), entered in the run, or a refused return."""
    funcs = run_config.salt_for_run(__salt__, declared, __context__)
    contexts = {}
    for key, section in kind.linked.items():
        if declared.get(key) is None:
            continue
        try:
            contexts[key] = globals()[_CONTEXTS[section]](declared[key], funcs)
        except Exception as exc:
            return {}, refused_return(name, exc)
        run_config.enter_run(contexts[key], declared, __context__)
    return contexts, None


def _generated_call(made, args, kwargs):
    """Run generated function ``made`` (``salt_proxmox.run.calls.Generated``) with its arguments: the
    kind's precheck and pillar secrets, the linked contexts, then the library ``Run`` as a state return."""
    from salt.exceptions import CommandExecutionError

    from salt_proxmox.errors import DeclarationError

    if made.renamed:  # an old name, kept for one release (``calls.RENAMED``)
        import logging
        import warnings

        try:
            new, args, kwargs = made.renamed_call(args, kwargs)
        except (TypeError, LookupError) as exc:
            raise CommandExecutionError(str(exc)) from None
        warnings.warn(made.renamed, DeprecationWarning, stacklevel=3)
        logging.getLogger(__name__).warning(made.renamed)
        return globals()[new](*args, **kwargs)
    try:
        own, declared = made.bind(args, kwargs)
    except TypeError as exc:
        raise CommandExecutionError(f"{made.family.module}.{made.name}: {exc}") from None
    if made.verb == "get":
        return _get(made, own, declared)
    if made.call is None:
        return _guest_call(made, own, declared)
    name, kind, run = own.get("name"), made.kind, made.call.run
    extra = {}
    present = kind is not None and made.verb == "present"
    if present and kind.secrets:
        secrets, refused = _pillar_secrets(name, imported(kind.secrets), declared, own.get("secrets_pillar"))
        if refused is not None:
            return refused
        extra.update(secrets)
    if present and kind.sources:
        # Handed the pillar's secrets too (a snippet's content), so a source beside them is refused by
        # name; the secrets stay apart from the declaration, which the run's checks read.
        try:
            read = imported(kind.sources)({**declared, **extra}, *_file_server(own.get("saltenv")))
        except SaltProxmoxError as exc:
            return refused_return(name, exc)
        declared = {key: value for key, value in read.items() if key not in extra}
    if present and kind.precheck:
        problem = imported(kind.precheck)(declared, own["target"])
        if problem:
            return refused_return(name, DeclarationError(problem))
    if present and kind.linked:
        linked, refused = _linked(name, kind, declared)
        if refused is not None:
            return refused
        extra["linked"] = linked
    lead = (_spec(made),) if run.spec else ()
    test = _switch("test", own["test"])
    ahead = None
    if present and kind.ahead:
        ahead = lambda ctx, declarations: imported(kind.ahead)(ctx, lead[0], declarations)  # noqa: E731
    return _state(
        name,
        own["target"],
        imported(run.function),
        *lead,
        test,
        own.get("state_id") or name,
        run=declared,
        plan=test,
        twins=_object_twins(kind.name) if kind is not None else None,
        ahead=ahead,
        targets_of=made.family.targets,
        **declared_keys(declared),
        **extra,
    )


def _file_server(saltenv):
    """``(fetch, render)`` of a kind's ``sources`` (``registry.Kind``): a ``salt://`` file's text read
    with ``cp.get_file_str`` (None when it cannot be), rendered with ``file.apply_template_on_contents``,
    in ``saltenv``."""
    env = saltenv or "base"

    def fetch(url):
        text = __salt__["cp.get_file_str"](url, saltenv=env)
        return text if isinstance(text, str) else None

    def render(text, template, context):
        return __salt__["file.apply_template_on_contents"](
            text, template=template, context=context, defaults={}, saltenv=env
        )

    return fetch, render


def _generate(made):
    """The function ``made`` describes, defined here so that Salt's loader packs it as this module's."""

    def function(*args, **kwargs):
        return _generated_call(made, args, kwargs)

    function.__name__ = function.__qualname__ = made.name
    function.__doc__ = made.doc
    function.__signature__ = made.signature
    return function


def _operator(call):
    """Operator call ``call`` (``salt_proxmox.adhoc``) as this module's function: its arguments
    bound (``operator.bind``), the target's context built, the library's error its sentence."""
    from salt.exceptions import CommandExecutionError

    from salt_proxmox import adhoc as operator

    def function(*args, **kwargs):
        try:
            target, arguments = operator.bind(call, args, kwargs)
        except TypeError as exc:
            raise CommandExecutionError(f"{__virtualname__}.{call.__name__}: {exc}") from None
        return _call(call, _context(target), **arguments)

    function.__name__ = function.__qualname__ = call.__name__
    function.__doc__ = call.__doc__
    function.__signature__ = operator.signature(call)
    return function


if HAS_LIBS:
    from salt_proxmox import adhoc as _operators
    from salt_proxmox.run import calls as _calls

    for _made in _calls.generated(__virtualname__):
        globals()[_made.name] = _generate(_made)
    for _op in _operators.CALLS:
        globals()[_op.__name__] = _operator(_op)
    del _made, _op


# ----------------------------------------------------------------------------- what this minion owns
#
# proxmox.owned lists the ownership rows with whether the current pillar still declares each;
# proxmox.forget drops one row on purpose. Neither writes to PVE.


def _declared_rows(sls, saltenv):
    """The row keys the formula ``sls`` declares from the current pillar (``state.show_low_sls``,
    the chunks a state run would get), keyed by each family's own rule (``owned.declared``)."""
    from salt_proxmox.owned.declared import lowstate_row_keys

    low = __salt__["state.show_low_sls"](sls, saltenv=saltenv or "base")
    default = run_config.default_target(__salt__["config.get"](TARGETS, {}))
    pbs_default = run_config.default_target(__salt__["config.get"]("proxmox:pbs_targets", {}) or {})
    return _call(lowstate_row_keys, sls, low, default, pbs_default)


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


def unlock(target=None, force=False):
    """
    The run lock of ``target`` when ownership rows live in OpenBao (``proxmox:ownership: {store:
    openbao}``): ``{target, held, holder: {minion, host, pid, jid, started, expires} | None,
    broken}``. With ``force=True`` it is broken whoever holds it (an apply still running loses it:
    its next state stops, naming the lock); without, nothing is written. Raises
    CommandExecutionError when the rows are not in OpenBao or it cannot be reached.

    CLI Example:

    .. code-block:: bash

        salt-call proxmox.unlock target=homelab
        salt-call proxmox.unlock target=homelab force=True
    """
    from salt_proxmox.run import locking

    force = _switch("force", force)
    name = _call(run_config.pick_target, __salt__["config.get"](TARGETS, {}), target)
    return _call(locking.unlock, _store(), name, force)


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

    from salt_proxmox.export.pillar import Filters, write_file
    from salt_proxmox.export.pillar import export as export_pillar

    wanted = _call(Filters.given, family, node, pool, vmid)
    families = wanted.families
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
        _call(write_file, path, done, ctx.target.name)
    return done.pillar


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
