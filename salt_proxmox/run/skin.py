"""The one skin of every state function: from what Salt hands a state to the execution-module call
that runs its family (no Salt import).

Every function of ``_states/`` is its signature, its docstring and one line::

    return __salt__["proxmox.run_state"](globals(), "present", locals())

``globals()`` is the state module's namespace, where Salt's state run injects the dunders:
``__low__`` (the chunk running), ``__lowstate__`` (every chunk of the run), ``__instance_id__`` (one
per ``State`` object, so one per run) and ``__env__`` (its saltenv), Salt 3006-3008
``salt/state.py`` ``State.call`` (``inject_globals``); ``__opts__`` (``test``) and
``__virtualname__`` (the state module) are there too. ``locals()`` is the state's arguments, its
``**kwargs`` under ``kwargs``. ``state_call`` turns them into the family's call (``registry.Family.calls``):
the state's arguments and every extra key (for the library to refuse by name), Salt's ``test``, the
declaring state's id, the saltenv where the call takes one, and the run (``__low__``,
``__lowstate__``, ``__instance_id__``) passed through whole, which ``lowstate.Run.of`` reads. Outside
a state run (a module loaded by hand) the run's dunders are absent and no run-wide check applies.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox import registry
from salt_proxmox.errors import DeclarationError

#: The dunders of a state run handed to the execution module whole (``lowstate.Run.of``).
RUN_DUNDERS = ("__low__", "__lowstate__", "__instance_id__")


def state_call(dunders: Mapping[str, object], fun: str, arguments: Mapping[str, object]) -> tuple[str, dict]:
    """``(execution-module function, keyword arguments)`` running state function ``fun`` of the state
    module whose namespace is ``dunders`` with ``arguments`` (its ``locals()``).

    Salt's own keys among the extra ones (``__pub_fun``, every ``__``-prefixed key) are dropped. Raises
    LookupError for a state module or function the registry does not hold, and DeclarationError when an
    extra key is one the skin sets itself (``test``, ``state_id``, ``saltenv``):
    passing both would be a TypeError, and dropping one would ignore a declaration.
    """
    family = registry.family_of(str(dunders.get("__virtualname__")))
    call = family.calls.get(fun)
    if call is None:
        raise LookupError(f"{family.state}.{fun}: not a state function of {family.state}")
    own = dict(arguments)
    extra = own.pop("kwargs", None) or {}
    declared = {key: value for key, value in extra.items() if not str(key).startswith("__")}
    # None, not falsiness: Salt 3008's ``__opts__`` (``salt/utils/optsdict.py`` ``OptsDict``) counts
    # every key of its layers for ``len``, which ``or`` asks for (about 0.3 ms a state).
    opts = dunders.get("__opts__")
    opts = {} if opts is None else opts
    low = dunders.get("__low__") or {}
    skin: dict[str, object] = {"test": opts.get("test", False)}
    if call.state_id:
        skin["state_id"] = low.get("__id__", own.get("name"))
    if call.saltenv:
        skin["saltenv"] = dunders.get("__env__") or "base"
    clash = sorted(str(key) for key in declared if key in skin)
    if clash:
        raise DeclarationError(
            f"unknown key(s) {', '.join(clash)}: {family.state}.{fun} is given it by Salt's state run, "
            "never by a declaration"
        )
    run = {key: dunders.get(key) for key in RUN_DUNDERS}
    return call.function, {**own, **declared, **skin, **run}
