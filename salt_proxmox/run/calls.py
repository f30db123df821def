"""The execution-module functions of the registry's state calls, described once (no Salt import).

Each ``Call`` of ``registry.FAMILIES`` that names its library ``Run`` becomes one function of its
execution module, generated when the module loads (``_modules/proxmox.py``): ``<kind>_present``,
``<kind>_absent``, ``<family>_applied``, and ``<kind>_get`` for every kind that has a spec or its own
``Kind.get``. ``generated(module)`` gives each one's name, its ``inspect.Signature`` (what ``salt-call
sys.argspec`` prints and Salt's CLI binds arguments with) and its docstring (what ``sys.doc`` prints,
built from the kind's ``ObjectSpec`` and the state module it serves, with a CLI example). ``bind`` splits
a call's arguments into the execution module's own (``test``, ``target``, ``state_id``, ...) and the
declaration handed to the library, which refuses an unknown key by name.

So a family adds no line to ``_modules/``: docs/design.md §2 "Execution modules" says why functions
generated at load time rather than one generic call per verb.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox import registry
from salt_proxmox.entry import Call, Family, Kind, imported

P = inspect.Parameter
#: The arguments every generated state call takes besides the declaration, by verb, with defaults.
OWN: Mapping[str, tuple[tuple[str, object], ...]] = {
    "present": (("test", False), ("target", None), ("adopt", False)),
    "absent": (("test", False), ("target", None), ("removal", "retain")),
    "applied": (("test", False), ("target", None)),
}
#: The ad-hoc guest calls (``registry.Family.adhoc``) that take config keys besides their arguments.
CONFIGURES = ("create", "update")
FIREWALL_KINDS = ("options", "ipset", "group")
#: Calls renamed in 0.2 and kept until 0.3, each warning and running its new name: ``{module: {old
#: name: (the argument choosing the new call, {its value: new name})}}``.
RENAMED: Mapping[str, Mapping[str, tuple[str, Mapping[str, str]]]] = {
    "proxmox": {
        "sdn_absent": ("kind", {kind: f"sdn_{kind}_absent" for kind in ("zone", "vnet", "subnet")}),
        "firewall_absent": (
            "kind",
            {kind: f"firewall_{kind}_absent" for kind in ("options", "ipset", "group")},
        ),
    }
}
#: Of those, the ones the execution module keeps (the rest are the declaration's: ``adopt``, ``removal``).
GLUE = ("test", "target", "state_id", "saltenv", "secrets_pillar")


@dataclass(frozen=True)
class Generated:
    """One generated function: ``name`` within ``family.module``; the ``verb`` (``present``, ``absent``,
    ``applied``, ``get``, or a guest family's ad-hoc ``config``, ``create``, ``update``, ``resize``);
    the ``call`` it serves (None for ``get`` and the ad-hoc ones); its ``kind`` (None for ``applied``
    and the ad-hoc ones); ``identity`` (the arguments naming its object, which it passes as given);
    ``signature`` and ``doc``."""

    name: str
    family: Family
    verb: str
    call: Call | None
    kind: Kind | None
    identity: tuple[str, ...]
    signature: inspect.Signature
    doc: str
    #: For an old name (``RENAMED``): the deprecation message, and the argument and new names.
    renamed: str = ""
    renamed_to: tuple[str, Mapping[str, str]] | None = None

    def renamed_call(self, args: tuple, kwargs: Mapping[str, object]) -> tuple[str, tuple, dict]:
        """``(new name, args, kwargs)`` of a call by an old name, its choosing argument taken out.
        Raises TypeError without that argument, LookupError for a value it does not take."""
        chooser, names = self.renamed_to
        rest = dict(kwargs)
        if chooser in rest:
            value = rest.pop(chooser)
        elif args:
            value, args = args[0], args[1:]
        else:
            raise TypeError(f"{self.name}: {chooser} is required")
        if value not in names:
            raise LookupError(f"{chooser}: expected {', '.join(names)}, got {value!r}")
        return names[value], tuple(args), rest

    def bind(self, args: tuple, kwargs: Mapping[str, object]) -> tuple[dict, dict]:
        """``(own, declared)`` of a call with ``args``/``kwargs``: ``own`` the execution module's
        arguments with their defaults (``GLUE``, and ``name``), ``declared`` every other argument
        given (identity, ``adopt`` or ``removal``, the family's keys, the run's dunders) — for ``get``,
        every identity key (None when not given). Raises TypeError as Python does for arguments the
        signature does not take (Salt reports it as the call's error)."""
        bound = self.signature.bind(*args, **kwargs)
        given = dict(bound.arguments)
        extra = given.pop("declared", given.pop("config", {}))
        bound.apply_defaults()
        full = dict(bound.arguments)
        full.pop("declared", None)
        full.pop("config", None)
        own = {key: full[key] for key in (*GLUE, "name") if key in full}
        if self.verb not in OWN:  # get, and the ad-hoc guest calls: every argument, None when not given
            return own, {**{key: full[key] for key in self.identity}, **extra}
        declared = {key: value for key, value in given.items() if key not in GLUE}
        if self.verb == "present":
            declared["adopt"] = full["adopt"]
        elif self.verb == "absent":
            declared["removal"] = full["removal"]
        if self.verb == "applied" or "name" not in self.identity:
            declared.pop("name", None)  # a label only (an ACL entry is its path, role and subject)
        return own, {**declared, **extra}


def _first_paragraph(text: str | None) -> str:
    paragraphs = inspect.cleandoc(text or "").split("\n\n")
    return paragraphs[0].strip() if paragraphs else ""


def _noun(kind: Kind | None, family: Family) -> str:
    if kind is not None and kind.spec:
        return str(kind.load().noun)
    return (kind.name if kind else family.name).replace("_", " ")


def _about(kind: Kind | None) -> str:
    """The first paragraph of the docstring of the module holding the kind's ObjectSpec or run."""
    if kind is None:
        return ""
    path = kind.spec or (kind.present_run.function if kind.present_run else "")
    return _first_paragraph(importlib.import_module(path.partition(":")[0]).__doc__) if path else ""


def _example(function: str, verb: str, identity: tuple[str, ...]) -> str:
    args = [f"<{key}>" if at == 0 else f"{key}=<{key}>" for at, key in enumerate(identity)]
    if verb != "get":
        args.append("test=True")
    if verb == "absent":
        args.insert(-1, "removal=destroy")
    return f"salt-call {function} {' '.join(args)}".rstrip()


def _doc(made: dict, state: str, fun: str | None) -> str:
    noun, verb, kind, family = made["noun"], made["verb"], made["kind"], made["family"]
    function = f"{family.module}.{made['name']}"
    where = f"``{state}.{fun}``" if fun else f"the ``{state}`` state"
    if verb == "present":
        lead = (
            f"Plan (``test=True``) or apply one {noun} as {where} does; returns a state return dict "
            "(``result``, ``changes``, ``comment``). ``adopt=True`` takes over a live one this minion did "
            "not create; ``state_id``: the declaring state's id (default ``name``)."
        )
    elif verb == "absent":
        lead = (
            f"Stop managing one {noun} as {where} does: ``removal=retain`` (default) forgets its ownership "
            "row and leaves it in PVE; ``removal=destroy`` deletes it when this minion made it and it is "
            "unchanged, the plan saying what PVE does with it. Returns a state return dict."
        )
    elif verb == "applied":
        lead = (
            f"Plan (``test=True``: what is staged) or apply (one awaited task between health checks) the "
            f"{family.name} changes staged so far, as {where} does. Returns a state return dict."
        )
    else:
        custom = imported(kind.get) if kind.get else None
        lead = (
            _first_paragraph(custom.__doc__)
            if custom
            else (
                f"One {noun} as {where} compares it (its canonical attributes, never a secret), read with "
                "the read credential; ``None`` only for PVE's answer that it does not exist."
            )
        )
    lines = [lead]
    if verb in ("present", "absent", "applied"):
        lines.append(
            f"The declaration's keys are the state's (``salt-call sys.state_doc {state}``), as PVE spells "
            "them; a key the family does not have is refused by name before anything is written."
        )
    if verb == "present" and kind.secrets:
        keys = ", ".join(f"``{key}``" for key in sorted(imported(kind.secrets)))
        lines.append(
            f"``secrets_pillar``: the pillar path of the mapping holding its {keys}: a call passing one "
            "itself is refused (Salt caches a state's arguments)."
        )
    if verb == "present" and kind.linked:
        keys = ", ".join(f"``{key}`` (a ``{section}`` entry)" for key, section in kind.linked.items())
        lines.append(f"With {keys} the object is wired to that target in the same plan.")
    about = _about(kind)
    if about:
        lines.append(about)
    example = _example(function, verb, made["identity"])
    lines.append(f"CLI Example:\n\n.. code-block:: bash\n\n    {example}")
    return "\n\n".join(lines) + "\n"


def _signature(
    verb: str, identity: tuple[str, ...], call: Call | None, kind: Kind | None
) -> inspect.Signature:
    if verb == "get":
        params = [
            P(key, P.POSITIONAL_OR_KEYWORD, **({} if at == 0 else {"default": None}))
            for at, key in enumerate(identity)
        ]
        return inspect.Signature([*params, P("target", P.POSITIONAL_OR_KEYWORD, default=None)])
    params = [P("name", P.POSITIONAL_OR_KEYWORD)]
    if verb != "applied":
        params += [P(key, P.POSITIONAL_OR_KEYWORD, default=None) for key in identity if key != "name"]
    params += [P(key, P.POSITIONAL_OR_KEYWORD, default=value) for key, value in OWN[verb]]
    if call.state_id:
        params.append(P("state_id", P.POSITIONAL_OR_KEYWORD, default=None))
    if call.saltenv:
        params.append(P("saltenv", P.POSITIONAL_OR_KEYWORD, default=None))
    if verb == "present" and kind.secrets:
        params.append(P("secrets_pillar", P.POSITIONAL_OR_KEYWORD, default=None))
    return inspect.Signature([*params, P("declared", P.VAR_KEYWORD)])


def generated(module: str) -> list[Generated]:
    """Every function of execution module ``module`` (``proxmox``) the registry describes, in registry
    order. Imports each kind's ObjectSpec (its identity keys and noun). Raises LookupError when a
    generated name is also another's (two kinds of one name)."""
    found: dict[str, Generated] = {}
    for family in registry.FAMILIES:
        if family.module != module:
            continue
        for fun, call in family.calls.items():
            if call.run is None:
                continue
            identity = call.kind.identity() if call.kind else ()
            _add(found, family, call.function.partition(".")[2], call.verb, call, call.kind, identity, fun)
        for kind in family.kinds:
            if kind.spec or kind.get:
                _add(found, family, f"{kind.name}_get", "get", None, kind, kind.identity(), None)
        for verb, (arguments, doc) in (imported(family.adhoc) if family.adhoc else {}).items():
            name = f"{family.name}_{verb}"
            if name in found:
                raise LookupError(f"{family.module}.{name}: generated twice")
            params = [
                P(
                    arg.rstrip("?"),
                    P.POSITIONAL_OR_KEYWORD,
                    **({"default": None} if arg.endswith("?") else {}),
                )
                for arg in arguments
            ]
            params.append(P("target", P.POSITIONAL_OR_KEYWORD, default=None))
            if verb in CONFIGURES:
                params.append(P("config", P.VAR_KEYWORD))
            identity = tuple(arg.rstrip("?") for arg in arguments)
            found[name] = Generated(name, family, verb, None, None, identity, inspect.Signature(params), doc)
    for old, (chooser, names) in RENAMED.get(module, {}).items():
        first = found[next(iter(names.values()))]
        signature = inspect.Signature(
            [
                P(chooser, P.POSITIONAL_OR_KEYWORD),
                P("name", P.POSITIONAL_OR_KEYWORD),
                P("names", P.VAR_KEYWORD),
            ]
        )
        calls = ", ".join(f"``{module}.{new}``" for new in names.values())
        message = f"{module}.{old} is deprecated and will be removed in salt-proxmox 0.3: call {calls}"
        doc = (
            f"Deprecated (removed in 0.3): {calls}, which this calls after a warning, by ``{chooser}`` "
            f"({', '.join(names)}).\n\nCLI Example:\n\n.. code-block:: bash\n\n    "
            f"salt-call {module}.{next(iter(names.values()))} <name> removal=destroy test=True\n"
        )
        found[old] = Generated(
            old, first.family, "renamed", None, None, (), signature, doc, message, (chooser, names)
        )
    return list(found.values())


def _add(found, family, name, verb, call, kind, identity, fun) -> None:
    if name in found:
        raise LookupError(f"{family.module}.{name}: generated twice")
    made = {"name": name, "verb": verb, "kind": kind, "family": family, "identity": identity}
    made["noun"] = _noun(kind, family)
    found[name] = Generated(
        name,
        family,
        verb,
        call,
        kind,
        identity,
        _signature(verb, identity, call, kind),
        _doc(made, family.state, fun),
    )
