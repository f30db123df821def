"""Execution module ``openbao``: OpenBao ACL policies, for the ``openbao_policy`` states and ad-hoc use.

OpenBao is reached through the ``openbao:`` block, read with ``config.get('openbao')`` (minion
config or pillar): ``url``, ``verify``, ``auth: {method: token|approle, ...}``. The token or
AppRole needs ``read``, ``create``, ``update`` (and for ``removal: destroy``, ``delete``) on
``sys/policy/<name>`` for every declared name. Fragments given as ``salt://`` URLs are fetched
here with ``cp.get_file_str``; the library gets plain text. Ownership rows go where the
``proxmox`` module keeps them: the grain ``salt_proxmox:owned``, or the JSON file
``config.get('proxmox:ownership_file')`` names. A policy's text never goes there, only its sha256.

:depends: salt_proxmox, hvac
"""

__virtualname__ = "openbao"

try:
    from salt_proxmox.errors import DeclarationError, SaltProxmoxError, boolean
    from salt_proxmox.openbao_policy import lifecycle
    from salt_proxmox.openbao_policy import policy as rules
    from salt_proxmox.run import config as run_config
    from salt_proxmox.run.config import declared_keys, refused_return

    HAS_LIBS = True
except ImportError as exc:  # pragma: no cover - reported through __virtual__
    HAS_LIBS = False
    IMPORT_ERROR = str(exc)


def __virtual__():
    if not HAS_LIBS:
        return False, f"openbao: the salt_proxmox library is not importable ({IMPORT_ERROR})"
    return __virtualname__


def _store():
    import salt.utils.platform

    return run_config.salt_store(__salt__, __opts__, __context__, __grains__, salt.utils.platform.is_proxy())


def _context():
    return lifecycle.context_for(__salt__["config.get"]("openbao", None), __context__, _store())


def _state(name, call_kwargs, fun, /, *args, plan=True, **kwargs):
    """The state return of ``fun(ctx, *args, **kwargs)`` (the policy plan/apply), or a refusal when
    the OpenBao context cannot be built or another state of the run declares the same policy.
    ``plan``: the call's ``test`` (an apply holds the run lock, ``_locked``)."""
    try:
        ctx = _context()
    except Exception as exc:
        return refused_return(name, exc)
    twin = run_config.twins_return(name, call_kwargs, (lifecycle.STATE,), lifecycle.chunk_keys, __context__)
    if twin is not None:
        return twin
    return _locked(run_config.run_of(call_kwargs, __context__), plan, name, fun, ctx, *args, **kwargs)


def _locked(run, plan, name, fun, /, *args, **kwargs):
    """``run.locking.locked_return`` with the run lock of the policies' target held, as the ``proxmox``
    module's states hold theirs."""
    from salt_proxmox.run import locking

    opts = __opts__
    return locking.locked_return(
        __context__,
        run,
        _store(),
        lifecycle.TARGET,
        plan,
        opts.get("id"),
        opts.get("jid"),
        name,
        fun,
        *args,
        **kwargs,
    )


def _fetch(saltenv):
    def fetch(url):
        return __salt__["cp.get_file_str"](url, saltenv=saltenv or "base")

    return fetch


def _raise(exc):
    from salt.exceptions import CommandExecutionError

    raise CommandExecutionError(str(exc)) from None


def _switch(key, value):
    """``value`` of the boolean argument ``key`` (``salt_proxmox.errors.boolean``: true or false,
    never a string or a number), else CommandExecutionError naming it, before any request."""
    try:
        return boolean(key, value)
    except SaltProxmoxError as exc:
        _raise(exc)


def policy_read(name):
    """
    One ACL policy: ``{name, sha256, path_grants, text}``, or ``None`` when OpenBao answers 404.
    Fails on any other error. ``name`` is keyed as OpenBao keys it (lower case).

    CLI Example:

    .. code-block:: bash

        salt-call openbao.policy_read salt-proxmox-creds
    """
    try:
        key = rules.check_name(name)
        text = lifecycle.read_policy(_context(), key)
    except SaltProxmoxError as exc:
        _raise(exc)
    if text is None:
        return None
    return {"name": key, "sha256": rules.sha256(text), "path_grants": rules.grants(text), "text": text}


def policy_assemble(fragments, saltenv="base"):
    """
    What a list of fragments assembles to, without contacting OpenBao:
    ``{text, sha256, path_grants}``. Fails naming the fragment that cannot be read, and on an
    empty assembly.

    CLI Example:

    .. code-block:: bash

        salt-call openbao.policy_assemble '["salt://proxmox/files/openbao/proxmox-creds.hcl"]'
    """
    try:
        text = rules.assemble(rules.fragments_from(fragments, _fetch(saltenv)))
        problem = rules.assembly_problem(text)
        if problem:
            raise DeclarationError(f"fragments: {problem}")
    except SaltProxmoxError as exc:
        _raise(exc)
    return {"text": text, "sha256": rules.sha256(text), "path_grants": rules.grants(text)}


def policy_present(
    name,
    fragments,
    test=False,
    adopt=False,
    removal="retain",
    rename_from=None,
    state_id=None,
    saltenv="base",
    **extra,
):
    """
    Plan (``test=True``) or apply one ACL policy assembled from ``fragments`` (inline HCL and
    ``salt://`` files, in order); returns a state return dict. This is what the
    ``openbao_policy.present`` state calls.

    CLI Example:

    .. code-block:: bash

        salt-call openbao.policy_present salt-proxmox-creds \\
            fragments='["salt://proxmox/files/openbao/proxmox-creds.hcl"]' test=True
    """
    test = _switch("test", test)
    return _state(
        name,
        extra,
        lifecycle.present,
        state_id or name,
        test,
        name,
        fragments,
        adopt=adopt,
        removal=removal,
        rename_from=rename_from,
        fetch=_fetch(saltenv),
        plan=test,
        **declared_keys(extra),
    )


def policy_absent(name, test=False, removal="retain", state_id=None, **extra):
    """
    Stop managing one ACL policy: ``removal=retain`` (default) forgets it and leaves it in
    OpenBao; ``removal=destroy`` deletes it only when it still holds the text this minion wrote.

    CLI Example:

    .. code-block:: bash

        salt-call openbao.policy_absent salt-proxmox-creds test=True
    """
    test = _switch("test", test)
    return _state(
        name,
        extra,
        lifecycle.absent,
        state_id or name,
        test,
        name,
        removal=removal,
        plan=test,
        **declared_keys(extra),
    )
